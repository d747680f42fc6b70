# The attacks of issue 32 against a running suite (bench/abuse starts it), stdlib only.
#
#   abuse.py content CSV OUTDIR TOTAL        writes OUTDIR/places-K.xml: the CSV's real places,
#                                            then named places near them up to TOTAL, at most
#                                            160,000 a file, the last with 12,500 more near five
#                                            cities and 1,000 tours of 500 stops through them
#   abuse.py setup PORT ADMIN PASSWORD OUT   makes the accounts the attacks use (OUT: JSON)
#   abuse.py run PORT SETUP KIND [KIND…]     runs each attack: victim p50/p99 before and during,
#                                            peak RSS of every process meanwhile; prints JSON lines
#   abuse.py writes PORT SETUP SECONDS       a victim's catalog writes for SECONDS (attack 7: run
#                                            beside an import); prints JSON
#   abuse.py attack PORT SETUP KIND          one attacker process (run's child) until killed
#   abuse.py pad JPEG OUT BYTES              attack 6's file: JPEG with BYTES of FF fill before
#                                            its frame header
#
# Attackers connect from their own loopback addresses (127.1.x.y, one per attacking address);
# the victims from addresses of their own (victim_request). The victim makes VICTIM requests per
# measure, one at a time. Every loop is bounded in count and time.
import base64
import csv
import json
import os
import random
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

VICTIM = 200
# Users whose photo uploads attack 3's slot measure opens, one each, before and during: the
# first SLOT_VICTIMS of each half.
PHOTO_VICTIMS = 134
SLOT_VICTIMS = 20
# Seconds from an attack's start to the victims' measure. A login flood from 200 addresses new
# to the gateway takes one turn of each (200 hashes, about 25 s) before its addresses have used
# more than a newcomer: until then a victim is one newcomer among 201 (see BENCHMARKS.md).
# Attack 6's uploads take their time (64 slots, 3 MB each in 512 KiB chunks) before the first
# commits: the victims are measured once commits are under way.
WARMUP_S = {"logins": 30.0, "subscribers": 20.0, "jpeg-padding": 30.0}
ATTACK_LIMIT_S = 600
ADDRESSES = 200
BOT_PASSWORD = "Bot-Pass-2026-x"
CATEGORIES = ["restaurant", "cafe", "bar", "hotel", "attraction", "museum", "park", "viewpoint", "market"]
# Dense spots of the real places (and of the tours' stops, which start there).
SPOTS = [(48.8566, 2.3522), (35.6762, 139.6503), (-33.8688, 151.2093), (40.7128, -74.0060), (52.52, 13.405)]


def fail(message):
    sys.stderr.write("abuse.py: %s\n" % message)
    sys.exit(1)


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def address(i):
    """The i-th attacking address: 127.1.0.1, 127.1.0.2, …"""
    return "127.1.%d.%d" % (i // 250, i % 250 + 1)


class Line:
    """A JSON-RPC line connection to the gateway from `source`, blocking, with a timeout."""

    def __init__(self, port, source, timeout=30.0):
        self.sock = socket.socket()
        self.sock.bind((source, 0))
        self.sock.settimeout(timeout)
        self.sock.connect(("127.0.0.1", port))
        self.buffer = b""
        self.next_id = 1

    def call(self, method, params=None):
        """The reply object (with "result" or "error"); pushes are passed over."""
        id_ = self.next_id
        self.next_id += 1
        self.sock.sendall(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise ConnectionError("the gateway closed the connection")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            reply = json.loads(line)
            if reply.get("id") == id_:
                return reply

    def ok(self, method, params=None):
        reply = self.call(method, params)
        if "error" in reply:
            fail("%s %s: %s" % (method, json.dumps(params)[:300], reply["error"]))
        return reply["result"]

    def close(self):
        self.sock.close()


# ---- content ----------------------------------------------------------------------------

def content(argv):
    path, outdir, total = argv[0], argv[1], int(argv[2])
    with open(path, newline="", encoding="utf-8") as f:
        rows = [(r["name"].strip(), r["lat"], r["lon"], r["cc"]) for r in csv.DictReader(f) if r["name"].strip()]
    rng = random.Random(32)
    places = [(name, lat, lon, cc) for name, lat, lon, cc in rows]
    kinds = ["Café", "Market", "Museum", "Gardens", "Lookout", "Bakery", "Gallery", "Square"]
    while len(places) < total:
        name, lat, lon, cc = rows[rng.randrange(len(rows))]
        la = max(-89.9, min(89.9, float(lat) + rng.uniform(-0.03, 0.03)))
        lo = max(-179.9, min(179.9, float(lon) + rng.uniform(-0.03, 0.03)))
        places.append(("%s %s %d" % (name, rng.choice(kinds), len(places)), "%.6f" % la, "%.6f" % lo, cc))
    places = places[:total]
    per_file = 160000
    files = []
    for k in range(0, len(places), per_file):
        chunk = places[k:k + per_file]
        last = k + per_file >= len(places)
        out = os.path.join(outdir, "places-%d.xml" % (k // per_file))
        with open(out, "w", encoding="utf-8") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n<content xmlns="urn:tourbus:content:1" source="abuse-%d">\n' % (k // per_file))
            for i, (name, lat, lon, cc) in enumerate(chunk):
                esc = name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                f.write('<poi id="p%d" category="%s" lat="%s" lon="%s"><name lang="en">%s</name></poi>\n'
                        % (i, CATEGORIES[i % len(CATEGORIES)], lat, lon, esc))
            if last:
                # 1,000 tours of 500 stops (500,000 stops) through 2,500 more places around each
                # dense spot (within about 10 km), so that tours.list near there has many stops.
                base = len(chunk)
                pools = []
                for s, (la, lo) in enumerate(SPOTS):
                    pools.append(range(base + s * 2500, base + (s + 1) * 2500))
                    for j in range(2500):
                        f.write('<poi id="p%d" category="%s" lat="%.6f" lon="%.6f"><name lang="en">Stop %d of walk area %d</name></poi>\n'
                                % (base + s * 2500 + j, CATEGORIES[j % len(CATEGORIES)], la + rng.uniform(-0.09, 0.09),
                                   lo + rng.uniform(-0.12, 0.12), j, s))
                for t in range(1000):
                    pool = pools[t % len(SPOTS)]
                    first = (t * 37) % len(pool)
                    f.write('<tour id="t%d"><name lang="en">Walk %d</name>%s</tour>\n'
                            % (t, t, "".join('<stop ref="p%d"/>' % pool[(first + s) % len(pool)] for s in range(500))))
            f.write("</content>\n")
        files.append(out)
    print(" ".join(files))


# ---- setup ------------------------------------------------------------------------------

def setup(argv):
    port, admin, password, out = int(argv[0]), argv[1], argv[2], argv[3]
    a = Line(port, "127.0.0.9", timeout=120)
    admin_token = a.ok("auth.login", {"username": admin, "password": password})["token"]
    # The victim, and a bot account per attacking address (sign-ups are 10 a minute an address).
    users = {}
    for i in range(ADDRESSES + 1 + PHOTO_VICTIMS):
        if i < ADDRESSES:
            name, source = "bot%d" % i, address(i)
        elif i == ADDRESSES:
            name, source = "victim", "127.0.0.2"
        else:
            name, source = "viewer%d" % (i - ADDRESSES - 1), "127.0.4.%d" % (i - ADDRESSES)
        c = Line(port, source, timeout=120)
        reply = c.call("auth.register", {"username": name, "email": name + "@example.org", "name": name.capitalize(),
                                         "password": BOT_PASSWORD})
        if "error" in reply and reply["error"].get("data", {}).get("code") != "already_exists":
            fail("register %s: %s" % (name, reply["error"]))
        users[name] = c.ok("auth.login", {"username": name, "password": BOT_PASSWORD})["token"]
        c.close()
    # A group of the first 50 bots, for the pushes of attack 5.
    owner = Line(port, address(0), timeout=120)
    owner.ok("auth.resume", {"token": users["bot0"]})
    group = owner.ok("groups.create", {"name": "Abuse"})["id"]
    for i in range(1, 50):
        owner.ok("groups.invite", {"group_id": group, "username": "bot%d" % i})
        c = Line(port, address(i), timeout=120)
        c.ok("auth.resume", {"token": users["bot%d" % i]})
        c.ok("groups.accept", {"group_id": group})
        c.close()
    # 1,200 annotations at one spot (an admin import, attack 4's pile).
    a.ok("auth.resume", {"token": admin_token})
    form = a.ok("annotations.form", {})
    # Each field of the form, in order, its first choice that fits the choice made for the
    # field it depends on (and has no region); fields left with no such choice are left out.
    values = {}
    for field in form.get("fields") or []:
        parent = values.get(field.get("depends_on"))
        fits = [c["value"] for c in field.get("choices") or []
                if not c.get("region") and (field.get("depends_on") is None or c.get("parent") == parent)]
        if fits:
            values[field["name"]] = fits[0]
    if not values:
        fail("notify has no annotation form: %s" % form)
    pile = []
    for i in range(1200):
        pile.append({"lat": 48.8584 + (i % 40) * 1e-5, "lon": 2.2945 + (i // 40) * 1e-5, "values": values,
                     "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "external_id": "pile-%d" % i})
    for k in range(0, len(pile), 200):
        a.ok("annotations.import", {"annotations": pile[k:k + 200]})
    places = a.ok("search.nearby", {"near": {"lat": SPOTS[0][0], "lon": SPOTS[0][1]}, "radius_m": 5000, "limit": 20})
    ids = [h["id"] for h in places["hits"]]
    if not ids:
        fail("search finds no place near %s" % (SPOTS[0],))
    json.dump({"admin": admin_token, "users": users, "group": group, "place_ids": ids}, open(out, "w"))


# ---- attackers --------------------------------------------------------------------------

def attack_request(kind, i, rng):
    """(method, params) of attacker i's next request of attack `kind`."""
    la, lo = SPOTS[i % len(SPOTS)]
    if kind == "tours-near":
        return "tours.list", {"near": {"lat": la + rng.uniform(-0.01, 0.01), "lon": lo + rng.uniform(-0.01, 0.01)}, "radius_m": 1000, "limit": 1}
    if kind == "logins":
        return "auth.login", {"username": "bot%d" % rng.randrange(ADDRESSES), "password": "wrong-%d" % rng.randrange(10 ** 9)}
    if kind == "search-nearby":
        return "search.nearby", {"near": {"lat": la + rng.uniform(-0.05, 0.05), "lon": lo + rng.uniform(-0.05, 0.05)}, "radius_m": 50000, "limit": 50}
    if kind == "annotations-nearby":
        return "annotations.nearby", {"near": {"lat": 48.8584, "lon": 2.2945}, "radius_m": 50000, "limit": 50}
    if kind == "photo-slots":
        return "profile.photo.upload.begin", {}
    fail("no attack %s" % kind)


def attacker(argv):
    """Closed loop on each of ADDRESSES connections (one per address) until killed or the limit."""
    port, setup_path, kind = int(argv[0]), argv[1], argv[2]
    tokens = json.load(open(setup_path))["users"]
    rng = random.Random(os.getpid())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if kind == "subscribers":
        return subscribers(port, tokens)
    jpeg = open(os.environ["ABUSE_JPEG"], "rb").read() if kind == "jpeg-padding" else b""
    sel = selectors.DefaultSelector()
    conns = []
    # Attack 6 from 200 other addresses: photo-slots spends the first 200's photo begins.
    offset = ADDRESSES if kind == "jpeg-padding" else 0
    for i in range(ADDRESSES):
        s = socket.socket()
        s.bind((address(i + offset), 0))
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        state = {"sock": s, "buf": b"", "i": i, "n": 0}
        if kind in ("photo-slots", "jpeg-padding"):
            s.sendall(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "auth.resume", "params": {"token": tokens["bot%d" % i]}}).encode() + b"\n")
        conns.append(state)
        sel.register(s, selectors.EVENT_READ, state)

    def send(state, reply=None):
        if kind == "jpeg-padding":
            method, params = photo_step(state, reply, jpeg)
        else:
            method, params = attack_request(kind, state["i"], rng)
        state["method"] = method
        state["n"] += 1
        # Whole, however long (an append is 700 KB): the socket blocks while it is written.
        state["sock"].setblocking(True)
        state["sock"].sendall(json.dumps({"jsonrpc": "2.0", "id": state["n"], "method": method, "params": params}).encode() + b"\n")
        state["sock"].setblocking(False)

    for state in conns:
        send(state)
    # What the attack's requests got, by method and outcome (an error by its message's start),
    # written to ABUSE_ATTACK_STATS when the attacker is stopped: the attack did what it says.
    outcomes = {}

    def written(*_):
        with open(os.environ["ABUSE_ATTACK_STATS"], "w") as out:
            json.dump(outcomes, out)
        sys.exit(0)

    if os.environ.get("ABUSE_ATTACK_STATS"):
        signal.signal(signal.SIGTERM, written)
    end = time.monotonic() + ATTACK_LIMIT_S
    while time.monotonic() < end:
        for key, _ in sel.select(0.5):
            state = key.data
            try:
                chunk = state["sock"].recv(1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                sel.unregister(state["sock"])
                continue
            state["buf"] += chunk
            while b"\n" in state["buf"]:
                line, state["buf"] = state["buf"].split(b"\n", 1)
                if b'"id":0' in line or b'"id"' not in line:
                    continue
                reply = json.loads(line)
                error = reply.get("error", {}).get("message")
                # Ids and counts made alike, so that outcomes of a kind add up under one key.
                outcome = "%s: %s" % (state.get("method", kind), re.sub(r"[0-9a-f]{16,}|\d+", "N", error)[:48] if error else "ok")
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                send(state, reply)


def photo_step(state, reply, jpeg):
    """Attack 6 on one connection: a profile photo upload of the padded file, begin, its
    chunks (512 KiB), commit, and again, resuming as a careful client does (the upload's
    offset guards retries): an append or commit that got no turn is sent again, one refused
    as `conflict` goes on from the bytes the upload holds, and anything else starts again at
    begin."""
    asked, ok = state.get("asked"), reply is not None and "error" not in reply
    error = (reply or {}).get("error", {})
    code = (error.get("data") or {}).get("code")
    if asked == "begin" and ok:
        state["upload"], state["offset"] = reply["result"]["upload_id"], 0
        step = "append"
    elif asked == "append" and ok:
        state["offset"] = reply["result"]["bytes"]
        step = "append" if state["offset"] < len(jpeg) else "commit"
    elif asked in ("append", "commit") and code in ("deadline_exceeded", "unavailable"):
        step = asked
    elif asked == "append" and code == "conflict" and (held := re.search(r"holds (\d+) bytes", error.get("message", ""))):
        state["offset"] = int(held.group(1))
        step = "append" if state["offset"] < len(jpeg) else "commit"
    else:
        # The first step, after a commit, or after a refusal.
        step = "begin"
    state["asked"] = step
    if step == "begin":
        return "profile.photo.upload.begin", {}
    if step == "commit":
        return "profile.photo.upload.commit", {"upload_id": state["upload"]}
    chunk = jpeg[state["offset"]:state["offset"] + (512 << 10)]
    params = {"upload_id": state["upload"], "offset": state["offset"], "chunk": base64.b64encode(chunk).decode()}
    return "profile.photo.upload.append", params


def padded_jpeg(source, out, fill):
    """Attack 6's file: a progressive JPEG with `fill` bytes of FF fill before its frame header,
    which libjpeg skips; a walk that stops short of the header takes it for a baseline one."""
    data = open(source, "rb").read()
    at = data.find(b"\xff\xc2")
    if at < 0:
        fail("%s is not a progressive JPEG" % source)
    open(out, "wb").write(data[:at] + b"\xff" * fill + data[at:])


def subscribers(port, tokens):
    """Attack 5: 50 users x 16 connections, each subscribed to chat.message and 31 patterns
    matching it, never reading; one more connection per user sends group messages."""
    socks = []
    patterns = ["chat.*", "c*", "*", "ch*", "cha*", "chat*", "*.message", "*message", "*age", "*e", "c*e", "?hat.message"]
    patterns += ["chat.m*", "chat.me*", "chat.mes*", "chat.mess*", "chat.messa*", "chat.messag*", "[c]hat.*", "[a-z]hat.*",
                 "c[h]at.*", "ch[a]t.*", "cha[t].*", "chat[.]*", "*.m*", "*.me*", "*.mes*", "*.mess*", "*.messa*", "*.messag*", "c?at.*"]
    words = ["SUBSCRIBE", "chat.message"]
    # Each user's 16 connections come from 4 addresses (4 each), under the gateway's share of
    # connections an address may hold once it is three quarters full.
    for u in range(50):
        for k in range(16):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.bind((address(u * 4 + k // 4), 0))
            s.connect(("127.0.0.1", port))
            cmds = [["AUTH", tokens["bot%d" % u]], words, ["PSUBSCRIBE"] + patterns[:31]]
            s.sendall(b"".join(resp(*c) for c in cmds))
            socks.append(s)
    senders = []
    for u in range(50):
        c = Line(port, address(u * 4), timeout=30)
        c.ok("auth.resume", {"token": tokens["bot%d" % u]})
        senders.append(c)
    group = None
    peers = [c.ok("auth.resume", {"token": tokens["bot%d" % u]})["user_id"] for u, c in enumerate(senders)]
    end = time.monotonic() + ATTACK_LIMIT_S
    n = 0
    text = "x" * 2000
    while time.monotonic() < end:
        for u, c in enumerate(senders):
            if group is None:
                group = c.ok("groups.list", {})["groups"][0]["id"]
            # To the group, and to the next bot, whose 16 connections hear it too.
            to = "group:%d" % group if n % 2 else "user:%d" % peers[(u + 1) % len(peers)]
            c.call("chat.send", {"to": to, "text": text, "client_msg_id": "a%d-%d" % (u, n)})
            n += 1
        time.sleep(0.05)


def resp(*words):
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        b = w.encode() if isinstance(w, str) else w
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


# ---- measuring --------------------------------------------------------------------------

def processes():
    """{name: pid} of the suite's processes (tourbus-*)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            comm = open("/proc/%s/comm" % pid).read().strip()
        except OSError:
            continue
        if comm.startswith("tourbus-"):
            found[comm] = int(pid)
    return found


def rss_mb(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class Sampler(threading.Thread):
    """The largest RSS of each suite process, sampled every 200 ms while it runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for name, pid in processes().items():
                self.peak[name] = max(self.peak.get(name, 0.0), rss_mb(pid))
            self.stop.wait(0.2)


def victim_request(kind, setup, i, phase):
    """(method, params, source) of the victim's i-th request while attack `kind` runs.

    The victims are ordinary users: 50 of them, each on its own address (127.0.3.x), asking in
    turn, one request at a time in all, so each asks now and then. A single client that asks
    back to back is a flood of its own, and gets one address's share like any other. Logins
    come from 200 addresses (127.0.2.x), one each: a user signs in once."""
    ids = setup["place_ids"] or [1]
    if kind == "logins":
        return "auth.login", {"username": "victim", "password": BOT_PASSWORD}, "127.0.2.%d" % (i % 250 + 1), None
    source = "127.0.3.%d" % (i % 50 + 1)
    if kind == "annotations-nearby" and i % 2:
        return "notify.settings.set", {"radius_m": 500 + i % 100}, source, "victim"
    if kind == "photo-slots" and i % 2:
        return "profile.get", {}, source, "victim"
    return "catalog.get", {"id": ids[i % len(ids)]}, source, "victim"


def measure(port, setup, kind, phase):
    """VICTIM requests of the victims, one at a time: latencies in ms and the errors."""
    lines = {}
    times, errors = [], []
    for i in range(VICTIM):
        method, params, source, user = victim_request(kind, setup, i, phase)
        if (source, user) not in lines:
            lines[(source, user)] = Line(port, source, timeout=30)
            if user:
                lines[(source, user)].ok("auth.resume", {"token": setup["users"][user]})
        line = lines[(source, user)]
        start = time.monotonic()
        try:
            reply = line.call(method, params)
        except (OSError, ConnectionError) as error:
            errors.append(str(error))
            lines.pop((source, user)).close()
            continue
        times.append((time.monotonic() - start) * 1000)
        if "error" in reply:
            errors.append(reply["error"].get("message", "?"))
    for line in lines.values():
        line.close()
    return {"p50": percentile(times, 50), "p99": percentile(times, 99), "max": max(times or [0]), "n": len(times),
            "errors": len(errors), "first_error": errors[0] if errors else None}


def slot_waits(port, setup, phase):
    """Attack 3's other measure: SLOT_VICTIMS users, one after another, each from an address of
    its own, begin a photo upload, trying again each second while all slots are open (at most
    30 s each): the seconds until each had one, and how many never did."""
    waits, never = [], 0
    for k in range(SLOT_VICTIMS):
        user = k + (PHOTO_VICTIMS // 2 if phase == "during" else 0)
        line = Line(port, "127.0.4.%d" % (user + 1), timeout=30)
        line.ok("auth.resume", {"token": setup["users"]["viewer%d" % user]})
        start = time.monotonic()
        got = False
        while time.monotonic() - start < 30:
            reply = line.call("profile.photo.upload.begin", {})
            if "error" not in reply:
                got = True
                break
            if "uploads are open" not in reply["error"].get("message", ""):
                fail("a slot victim's begin: %s" % reply["error"])
            time.sleep(1)
        line.close()
        if got:
            waits.append(time.monotonic() - start)
        else:
            never += 1
    return {"p50_s": percentile(waits, 50), "p99_s": percentile(waits, 99), "max_s": max(waits or [0]), "n": SLOT_VICTIMS, "never": never}


def run(argv):
    port, setup_path, kinds = int(argv[0]), argv[1], argv[2:]
    setup = json.load(open(setup_path))
    for kind in kinds:
        before = measure(port, setup, kind, "before")
        slots = {"before": slot_waits(port, setup, "before")} if kind == "photo-slots" else None
        sampler = Sampler()
        sampler.start()
        stats_path = "%s.%s.attack.json" % (setup_path, kind)
        child = subprocess.Popen([sys.executable, __file__, "attack", str(port), setup_path, kind],
                                 env=dict(os.environ, ABUSE_ATTACK_STATS=stats_path))
        time.sleep(WARMUP_S.get(kind, 3.0))
        during = measure(port, setup, kind, "during")
        if slots:
            slots["during"] = slot_waits(port, setup, "during")
        child.terminate()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
        sampler.stop.set()
        sampler.join()
        try:
            replies = json.load(open(stats_path))
        except (OSError, ValueError):
            replies = {}
        print(json.dumps({"attack": kind, "before": before, "during": during, "peak_rss_mb": sampler.peak, "slots": slots,
                          "attack_replies": replies}), flush=True)
        time.sleep(3)


def writes(argv):
    """A victim admin's catalog.create one at a time for SECONDS: latencies (attack 7)."""
    port, setup_path, seconds = int(argv[0]), argv[1], float(argv[2])
    setup = json.load(open(setup_path))
    c = Line(port, "127.0.0.2", timeout=60)
    c.ok("auth.resume", {"token": setup["admin"]})
    times, errors = [], 0
    end = time.monotonic() + seconds
    stopped = []
    signal.signal(signal.SIGINT, lambda *_: stopped.append(True))
    i = 0
    while time.monotonic() < end and i < 100000 and not stopped:
        start = time.monotonic()
        reply = c.call("catalog.create", {"name": "Victim place %d" % i, "category": "cafe", "lat": -33.86 + i * 1e-5, "lon": 151.2})
        times.append((time.monotonic() - start) * 1000)
        errors += "error" in reply
        i += 1
        time.sleep(0.02)
    print(json.dumps({"p50": percentile(times, 50), "p99": percentile(times, 99), "max": max(times or [0]), "n": len(times), "errors": errors}))


if __name__ == "__main__":
    commands = {"content": content, "setup": setup, "run": run, "attack": attacker, "writes": writes,
                "pad": lambda argv: padded_jpeg(argv[0], argv[1], int(argv[2]))}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        fail("usage: abuse.py content|setup|run|attack|writes …")
    commands[sys.argv[1]](sys.argv[2:])
