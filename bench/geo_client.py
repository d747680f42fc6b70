# The geocoding benchmark's client (bench/geo): times geo.search and geo.reverse through the
# gateway, one JSON-RPC line at a time on one connection, on the houses the catalog keeps of
# the imported extract (read from its SQLite file); then the peer of the same shape, Redis
# behind twemproxy (Debian's nutcracker) answering the classic Redis autocomplete, a
# ZRANGEBYLEX prefix lookup of a sorted set of every address's text, the same way.
#
#   geo_client.py GATEWAY_PORT PROXY_PORT CATALOG.sqlite QUERIES
import collections
import random
import socket
import sqlite3
import sys
import time
import unicodedata

from routes_client import Line  # one JSON-RPC line at a time on one connection


class RESP:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    @staticmethod
    def encode(words):
        out = b"*%d\r\n" % len(words)
        for w in words:
            w = w if isinstance(w, bytes) else str(w).encode()
            out += b"$%d\r\n%s\r\n" % (len(w), w)
        return out

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"*":
            return [self.read() for _ in range(int(rest))]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.file.read(n + 2)[:-2]
            return data
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest

    def call(self, *words):
        self.sock.sendall(self.encode(words))
        return self.read()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(self.encode(c) for c in commands))
        return [self.read() for _ in commands]


def folded(text):
    return "".join(c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c))


def typo(word, rng):
    i = rng.randrange(1, len(word))
    letters = "abcdefghijklmnopqrstuvwxyz".replace(word[i].lower(), "")
    return word[:i] + rng.choice(letters) + word[i + 1:]


def summary(values):
    values = sorted(values)
    pick = lambda q: round(values[min(len(values) - 1, int(q * len(values)))], 2)
    return "p50 %s ms p99 %s ms max %s ms" % (pick(0.5), pick(0.99), round(values[-1], 2))


def main(argv):
    port, proxy, db, queries = int(argv[0]), int(argv[1]), argv[2], int(argv[3])
    rows = sqlite3.connect(db).execute(
        "SELECT id, kind, street, housenumber, postcode, area, city, lat, lon FROM addresses ORDER BY id").fetchall()
    houses = [r for r in rows if r[1] == "house" and r[2] and r[3]]
    rng = random.Random(33)
    sample = rng.sample(houses, min(queries, len(houses)))
    line = Line(port)
    # Search builds its index on a thread of its own after the events: wait (at most 300 s) for it.
    first = "%s %s %s" % (sample[0][2], sample[0][3], sample[0][6] or "")
    deadline = time.time() + 300
    while not line.call("geo.search", {"q": first})["hits"]:
        if time.time() > deadline:
            raise SystemExit("search never found %r" % first)
        time.sleep(0.2)
    print("  %d addresses (%d houses); %d queries of each kind" % (len(rows), len(houses), len(sample)))
    kinds = {"whole address": [], "one typo in the street": [], "unfinished street (autocomplete)": []}
    right = {k: 0 for k in kinds}
    for _, _, street, number, _, _, city, lat, lon in sample:
        words = street.split()
        longest = max(range(len(words)), key=lambda i: len(words[i]))
        typoed = list(words)
        if len(words[longest]) >= 5:
            typoed[longest] = typo(words[longest], rng)
        unfinished = street[:max(3, int(len(street) * 0.6))]
        for kind, q, want in (
            ("whole address", "%s %s %s" % (street, number, city or ""), "%s %s" % (street, number)),
            ("one typo in the street", "%s %s %s" % (" ".join(typoed), number, city or ""), "%s %s" % (street, number)),
            ("unfinished street (autocomplete)", unfinished, None),
        ):
            start = time.perf_counter()
            hits = line.call("geo.search", {"q": q.strip(), "limit": 5})["hits"]
            kinds[kind].append((time.perf_counter() - start) * 1000)
            if want is None:
                # An area or a street, whichever it is, that begins with the text.
                right[kind] += bool(hits) and folded(hits[0]["label"]).startswith(folded(unfinished))
            else:
                right[kind] += bool(hits) and hits[0]["label"].startswith(want) and (not city or hits[0].get("city") == city)
    for kind, values in kinds.items():
        print("  geo.search %-34s %s; first hit right %d of %d" % (kind, summary(values), right[kind], len(sample)))
    # Hostile texts (issue 33's attack): the commonest street word twelve times, one letter.
    common = collections.Counter(r[2].split()[0] for r in houses if r[2].split()).most_common(1)[0][0]
    for kind, q in (("commonest street word x12", " ".join([common] * 12)), ("one letter", common[0])):
        values = []
        for _ in range(50):
            start = time.perf_counter()
            line.call("geo.search", {"q": q, "limit": 20})
            values.append((time.perf_counter() - start) * 1000)
        print("  geo.search %-34s %s (50 calls)" % (kind, summary(values)))
    reverse = []
    for _ in range(len(sample)):
        h = rng.choice(houses)
        start = time.perf_counter()
        line.call("geo.reverse", {"lat": h[7] + rng.uniform(-0.002, 0.002), "lon": h[8] + rng.uniform(-0.004, 0.004)})
        reverse.append((time.perf_counter() - start) * 1000)
    print("  geo.reverse %-33s %s" % ("a point near a house", summary(reverse)))

    # The peer: every address's folded text in one sorted set, looked up by prefix.
    redis = RESP(proxy)
    redis.call("DEL", "addresses")
    members = []
    for r in rows:
        text = " ".join(str(x) for x in (r[2], r[3], r[6]) if x) if r[1] != "postcode" else str(r[4])
        if r[1] == "area":
            text = " ".join(str(x) for x in (r[5], r[6]) if x)
        members.append(folded(text) + "\x00" + str(r[0]))
    for i in range(0, len(members), 1000):
        redis.pipeline([["ZADD", "addresses"] + sum((["0", m] for m in members[i:i + 1000]), [])])
    peer = {"whole address": [], "unfinished street (autocomplete)": []}
    found = 0
    for _, _, street, number, _, _, city, _, _ in sample:
        for kind, prefix in (("whole address", folded("%s %s %s" % (street, number, city or "")).strip()),
                             ("unfinished street (autocomplete)", folded(street[:max(3, int(len(street) * 0.6))]))):
            start = time.perf_counter()
            got = redis.call("ZRANGEBYLEX", "addresses", "[" + prefix, "[" + prefix + "\xff", "LIMIT", "0", "5")
            peer[kind].append((time.perf_counter() - start) * 1000)
            found += kind == "whole address" and bool(got)
    print("  peer: Redis behind twemproxy (nutcracker), ZRANGEBYLEX prefix of %d texts; no typos, no ranking" % len(members))
    for kind, values in peer.items():
        ratio = sorted(kinds[kind])[int(0.99 * len(values))] / max(sorted(values)[int(0.99 * len(values))], 1e-9)
        print("  peer %-39s %s; ours/peer at p99 %.1f" % (kind, summary(values), ratio))
    print("  peer whole addresses found %d of %d" % (found, len(sample)))


if __name__ == "__main__":
    main(sys.argv[1:])
