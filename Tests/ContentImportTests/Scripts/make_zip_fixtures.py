"""Writes the fixtures of ZipArchiveTests and InflateTests into the directory given as argv[1].

Raw DEFLATE streams made by zlib (wbits=-15) and the data they came from, zip archives made by
zipfile and every entry's contents, listed in manifest.json:
  {"inflate": [name, ...],            # inflate/NAME.raw and inflate/NAME.deflate
   "zips": {zip: [[entry, file], ...]}} # zips/ZIP.zip; file is under contents/, "" for a directory
Everything is deterministic (seeded), so a failure can be reproduced.
"""
import json
import os
import random
import sys
import zipfile
import zlib

out = sys.argv[1]
rng = random.Random(15)
WORDS = ("harbour opera bridge walk museum cafe ferry lookout garden market lane street quay "
         "gallery church tower park beach rocks circular wharf station").split()


def text(size):
    words = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        words.append(word)
        total += len(word) + 1
    return " ".join(words).encode()[:size]


def noise(size):
    return bytes(rng.getrandbits(8) for _ in range(size))


def fibonacci_skew():
    """Symbol i appears 2 fib(i) times, the end-of-block code once: each symbol outweighs all
    rarer ones together, so the Huffman tree is a chain 19 deep and zlib caps codes at 15 bits.
    21,890 bytes, so one block (zlib's default blocks hold 16,384 symbols at most) holds most."""
    counts = [2, 2]
    while len(counts) < 19:
        counts.append(counts[-1] + counts[-2])
    data = bytearray()
    for symbol, count in enumerate(counts):
        data += bytes([symbol * 7 % 256]) * count
    shuffled = list(data)
    rng.shuffle(shuffled)
    return bytes(shuffled)


def xml(size):
    rows = []
    n = 0
    while sum(map(len, rows)) < size:
        rows.append(f'<poi id="p{n}" category="museum" lat="-33.{rng.randint(0, 99999):05d}" '
                    f'lon="151.{rng.randint(0, 99999):05d}"><name lang="en">{text(rng.randint(5, 40)).decode()}</name></poi>\n'.encode())
        n += 1
    return b"".join(rows)[:size]


def mixed(size):
    parts = []
    while sum(map(len, parts)) < size:
        parts.append(text(rng.randint(1, 40000)) if rng.random() < 0.6 else noise(rng.randint(1, 20000)))
        parts.append(bytes([rng.getrandbits(8)]) * rng.randint(0, 3000))
    return b"".join(parts)[:size]


def deflate(data, level=6, strategy=zlib.Z_DEFAULT_STRATEGY, mem=8):
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15, mem, strategy)
    return compressor.compress(data) + compressor.flush()


data = {
    "empty": b"",
    "one": b"a",
    "text": text(200_000),
    "noise": noise(60_000),
    "zeros": bytes(1_000_000),
    "fibonacci": fibonacci_skew(),
    "xml": xml(300_000),
    "mixed": mixed(700_000),
}
streams = {}
for name, raw in data.items():
    for level in (1, 9):
        streams[f"{name}-level{level}"] = (raw, deflate(raw, level))
for name in ("text", "xml", "one", "empty"):
    streams[f"{name}-stored"] = (data[name], deflate(data[name], 0))
    streams[f"{name}-fixed"] = (data[name], deflate(data[name], 9, zlib.Z_FIXED))
    streams[f"{name}-rle"] = (data[name], deflate(data[name], 6, zlib.Z_RLE))
for name in ("fibonacci", "text", "noise"):
    streams[f"{name}-huffman"] = (data[name], deflate(data[name], 9, zlib.Z_HUFFMAN_ONLY))
    streams[f"{name}-filtered"] = (data[name], deflate(data[name], 9, zlib.Z_FILTERED, mem=1))

os.makedirs(os.path.join(out, "inflate"), exist_ok=True)
for name, (raw, stream) in streams.items():
    assert zlib.decompress(stream, -15) == raw
    with open(os.path.join(out, "inflate", name + ".raw"), "wb") as f:
        f.write(raw)
    with open(os.path.join(out, "inflate", name + ".deflate"), "wb") as f:
        f.write(stream)

photo = noise(50_000)
common = [
    ("guide.xml", xml(40_000)),
    ("maps/opera.jpg", photo),
    ("empty.txt", b""),
    ("maps/", None),
    ("notes/readme.txt", text(3_000)),
    ("zeros.bin", bytes(100_000)),
]
archives = {
    "stored": (zipfile.ZIP_STORED, None, common),
    "deflated-level1": (zipfile.ZIP_DEFLATED, 1, common),
    "deflated-level9": (zipfile.ZIP_DEFLATED, 9, common),
    "many": (zipfile.ZIP_DEFLATED, 6, [(f"many/{i:05d}.txt", text(rng.randint(0, 300))) for i in range(3000)]),
    "utf8": (zipfile.ZIP_DEFLATED, 6, [("Сидней/опера.jpg", noise(2_000)), ("café.xml", xml(2_000)),
                                       ("日本/東京.txt", text(500)), ("bus-🚌.txt", b"")]),
    "small": (zipfile.ZIP_DEFLATED, 9, [("a.xml", xml(700)), ("b.txt", text(400)), ("c.bin", noise(100))]),
    "small-stored": (zipfile.ZIP_STORED, None, [("a.xml", xml(300)), ("b.txt", text(200))]),
}
manifest = {"inflate": sorted(streams), "zips": {}}
os.makedirs(os.path.join(out, "zips"), exist_ok=True)
for zname, (method, level, entries) in archives.items():
    path = os.path.join(out, "zips", zname + ".zip")
    listed = []
    with zipfile.ZipFile(path, "w", compression=method, compresslevel=level) as archive:
        if zname == "stored":
            archive.comment = b"an archive comment, which the end record's search steps over"
        for i, (entry, contents) in enumerate(entries):
            if contents is None:
                archive.mkdir(entry) if hasattr(archive, "mkdir") else archive.writestr(entry, b"")
                listed.append([entry, ""])
                continue
            file = f"{zname}/{i}"
            os.makedirs(os.path.join(out, "contents", zname), exist_ok=True)
            with open(os.path.join(out, "contents", file), "wb") as f:
                f.write(contents)
            archive.writestr(entry, contents)
            listed.append([entry, file])
    manifest["zips"][zname] = listed
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, ensure_ascii=False)
