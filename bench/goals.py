# Helpers of bench/goals, run with the pyzmq of .build/benchenv. Speaks the request envelope
# of Protocols/envelope.md over ZeroMQ DEALERs (Client and dealer come from rebuild.py).
#
#   goals.py load CATALOG_RPC CSV PLACES OUT.resp [WINDOW]   one catalog place per real place (the
#            first PLACES of a fixed shuffle, WINDOW in flight, 512 unless given); writes GEOADD and
#            SET place:ID <the created JSON> for Redis
#   goals.py indexed SEARCH_RPC SEQ                 waits until search applied SEQ events, bulk load done
#   goals.py admin SOCIAL_RPC USER PASS             makes an admin (social's internal admin.create)
#   goals.py cities CSV PLACES                      prints "name lat lon places-within-50-km" per city
#   goals.py writer CATALOG_RPC SECONDS OUT         creates for SECONDS, 50 in flight, through restarts;
#                                                   writes the acknowledged ids to OUT
#   goals.py verify CATALOG_RPC ACKS                reads every acknowledged id; prints "acked lost"
#   goals.py report RESULTS                         the table of goals 1, 2 and 4
import csv
import json
import re
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmq  # noqa: E402

from rebuild import Client, create_all, dealer, fail, ready_replies  # noqa: E402

CATEGORIES = ["restaurant", "cafe", "bar", "hotel", "attraction", "museum", "park", "beach", "shopping", "market"]
DENSE = [("Paris", 48.8566, 2.3522), ("Tokyo", 35.6762, 139.6503), ("Sydney", -33.8688, 151.2093)]
# Redis's GEOADD takes latitudes within ±85.05112878; places beyond are left out of both, and so
# are the 2 rows with no name (the catalog refuses an empty name).
MAX_LAT = 85.05


def places(path, count):
    """The first `count` rows of rg_cities1000.csv in a fixed shuffle (all of them by default)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [(r["name"].strip(), float(r["lat"]), float(r["lon"])) for r in csv.DictReader(f)
                if abs(float(r["lat"])) <= MAX_LAT and r["name"].strip()]
    random.Random(2026).shuffle(rows)
    return rows[:count]


def resp(*parts):
    out = ["*%d\r\n" % len(parts)]
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        out.append("$%d\r\n" % len(b))
        out.append(b.decode("utf-8") if isinstance(p, bytes) else str(p))
        out.append("\r\n")
    return "".join(out)


def load(args):
    endpoint, path, count, out = args[0], args[1], int(args[2]), args[3]
    window = int(args[4]) if len(args) > 4 else 512
    rows = places(path, count)
    rng = random.Random(11)
    bodies = ({"name": name, "category": rng.choice(CATEGORIES), "lat": lat, "lon": lon,
               "popularity": rng.randrange(100), "price_level": rng.randrange(5)} for name, lat, lon in rows)
    with open(out, "w", encoding="utf-8") as redis_out:
        def to_redis(index, reply):
            if not reply.get("ok"):
                fail("a create failed: %s" % reply.get("error"))
            _, lat, lon = rows[index]
            place = reply["body"]
            pid = place["id"]
            redis_out.write(resp("GEOADD", "places", repr(lon), repr(lat), pid))
            redis_out.write(resp("SET", "place:%d" % pid, json.dumps(place, separators=(",", ":"), ensure_ascii=False).encode()))

        seconds = create_all(endpoint, bodies, len(rows), to_redis, window)
    print("%d %.1f %.0f" % (len(rows), seconds, len(rows) / seconds))


def indexed(args):
    endpoint, seq = args[0], int(args[1])
    ctx = zmq.Context()
    client = Client(ctx, endpoint, "i")
    end = time.monotonic() + 1800
    sub = None
    while time.monotonic() < end:
        reply = client.call("sys.stats", {}, 5000)
        subs = [s for s in ((reply or {}).get("body") or {}).get("subscriptions") or [] if s.get("source") == "catalog"]
        sub = subs[0] if subs else None
        if sub and sub.get("seq", -1) >= seq and not sub.get("bulk"):
            return
        time.sleep(0.2)
    fail("search did not apply %d events within 30 minutes: %s" % (seq, sub))


def admin(args):
    ctx = zmq.Context()
    client = Client(ctx, args[0], "a")
    reply = client.call("admin.create", {"username": args[1], "email": args[1] + "@example.org", "name": "Bench",
                                         "password": args[2]}, 10000)
    if not reply or not reply.get("ok"):
        fail("admin.create: %s" % reply)


def within(rows, lat, lon, metres=50000):
    r = 6371008.8
    p1 = math.radians(lat)
    n = 0
    for _, la, lo in rows:
        p2 = math.radians(la)
        dp, dl = p2 - p1, math.radians(lo - lon)
        a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
        if 2 * r * math.asin(math.sqrt(min(1.0, a))) <= metres:
            n += 1
    return n


def cities(args):
    """The dense cities, and two sparse ones: real places from the data (fixed names, so each run
    asks the same) where 50 km holds few places of the loaded set."""
    rows = places(args[0], int(args[1]))
    chosen = list(DENSE)
    wanted = ["Alice Springs", "Yellowknife", "Ushuaia", "Nuuk", "Longyearbyen"]
    by_name = {}
    for name, lat, lon in rows:
        by_name.setdefault(name, (lat, lon))
    for name in wanted:
        if name in by_name and len(chosen) < 5:
            chosen.append((name,) + by_name[name])
    if len(chosen) < 5:  # a small sample may miss them: the emptiest of 50 loaded places
        sample = rows[:: max(1, len(rows) // 50)][:50]
        counted = sorted((within(rows, lat, lon), name, lat, lon) for name, lat, lon in sample)
        chosen += [(name, lat, lon) for _, name, lat, lon in counted[: 5 - len(chosen)]]
    for name, lat, lon in chosen:
        print("%s\t%s\t%s\t%d" % (name.replace(" ", "_"), lat, lon, within(rows, lat, lon)))


def writer(args):
    """Creates places for SECONDS with 50 in flight on one DEALER; a request whose catalog died
    gets no reply and is not acknowledged (and is given up on after 3 s). Writes each
    acknowledged id, one a line."""
    endpoint, seconds, out = args[0], float(args[1]), args[2]
    ctx = zmq.Context()
    sock = dealer(ctx, endpoint)
    rng = random.Random(5)
    sent_at = {}
    acked = []
    errors = {}
    n = 0
    start = time.monotonic()
    stop = start + seconds
    while True:
        now = time.monotonic()
        if now >= stop and not sent_at:
            break
        if now >= stop + 10:
            break
        for rid in [r for r, t in sent_at.items() if now - t > 3]:
            del sent_at[rid]
        while now < stop and len(sent_at) < 50:
            body = {"name": "Chaos %d" % n, "category": rng.choice(CATEGORIES), "lat": rng.uniform(-60, 60),
                    "lon": rng.uniform(-180, 180)}
            rid = "w%d" % n
            try:
                sock.send(json.dumps({"v": 1, "id": rid, "type": "catalog.create", "deadline_ms": 3000,
                                      "body": body}).encode(), zmq.NOBLOCK)
            except zmq.Again:
                break
            sent_at[rid] = now
            n += 1
        if sock.poll(20):
            for reply in ready_replies(sock):
                if sent_at.pop(reply.get("id"), None) is None:
                    continue
                if reply.get("ok"):
                    acked.append(reply["body"]["id"])
                else:
                    code = (reply.get("error") or {}).get("code", "?")
                    errors[code] = errors.get(code, 0) + 1
    with open(out, "w") as f:
        f.write("\n".join(str(i) for i in acked) + "\n")
    print("%d %d %s" % (n, len(acked), json.dumps(errors, separators=(",", ":"))))


def verify(args):
    endpoint, path = args[0], args[1]
    with open(path) as f:
        ids = [int(x) for x in f.read().split()]
    ctx = zmq.Context()
    sock = dealer(ctx, endpoint)
    lost, i, pending = [], 0, {}
    end = time.monotonic() + 300
    while (i < len(ids) or pending) and time.monotonic() < end:
        while i < len(ids) and len(pending) < 256:
            rid = "v%d" % i
            sock.send(json.dumps({"v": 1, "id": rid, "type": "catalog.get", "deadline_ms": 10000, "body": {"id": ids[i]}}).encode())
            pending[rid] = ids[i]
            i += 1
        if sock.poll(1000):
            reply = json.loads(sock.recv_multipart()[0])
            pid = pending.pop(reply.get("id"), None)
            if pid is not None and not (reply.get("ok") and reply["body"].get("id") == pid):
                lost.append(pid)
    lost += list(pending.values()) + ids[i:]  # unread in 5 minutes: counted lost
    print("%d %d %s" % (len(ids), len(lost), ",".join(str(x) for x in lost[:10])))


def curves(args):
    """The open-loop runs as a table per mix, and the first rate whose p99 passed 10 ms."""
    rows = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in open(args[0]) if line.strip()]
    print("| mix | offered req/s | answered req/s (to the last reply) | p50 ms | p99 ms | p99.9 ms | max ms | late sends | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r["mix"], "{:,}".format(int(r["rate"])), "{:,}".format(int(r["achieved"])),
              r["p50_ms"], r["p99_ms"], r["p999_ms"], r["max_ms"], r["late_sends"], r["errors"]))
    for mix in dict.fromkeys(r["mix"] for r in rows):
        runs = [r for r in rows if r["mix"] == mix]
        crossed = next((r for r in runs if float(r["p99_ms"]) > 10), None)
        below = [r for r in runs if float(r["p99_ms"]) <= 10]
        print("%s: p99 <= 10 ms up to %s req/s offered; %s" % (mix, "{:,}".format(int(below[-1]["rate"])) if below else "none of the rates tried",
              "passes 10 ms at %s req/s" % "{:,}".format(int(crossed["rate"])) if crossed else "never passed 10 ms in this sweep"))


def report(args):
    """RESULTS: one JSON object a line, {"goal","what","tourbus","peer","ratio","target","met"}."""
    rows = [json.loads(line) for line in open(args[0]) if line.strip()]
    head = ("goal", "what", "Tourbus", "peer (same run)", "ratio", "target", "met?")
    table = [head] + [(r["goal"], r["what"], r["tourbus"], r["peer"], r["ratio"], r["target"], r["met"]) for r in rows]
    widths = [max(len(str(row[c])) for row in table) for c in range(len(head))]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in table[1:]:
        print("| " + " | ".join(str(v).ljust(w) for v, w in zip(row, widths)) + " |")


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    {"load": load, "indexed": indexed, "admin": admin, "cities": cities, "writer": writer, "verify": verify,
     "report": report, "curves": curves}[command](rest)
