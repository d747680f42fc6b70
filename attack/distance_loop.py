"""Attack: favorites' reader threads. Attackers on several addresses each page a 10,000-item
list by distance (every page sorts all 10,000 points) in a loop, while a victim on another
address reads its own small list and times each answer. Uses the newest TB_PLACES places of
the catalog (writer_hold.py makes them).
"""
import json, os, threading, time
import tb

N = int(os.environ.get("TB_PLACES", "10000"))
ADDRS = ["127.0.0.%d" % i for i in range(40, 44)]
admin = tb.Conn()
newest = admin.ok("catalog.list", {"limit": 1, "sort": "id", "order": "desc"}) if False else None
stamp = int(time.time())
owner = tb.user("dist%d" % stamp, source=ADDRS[0])
# Place ids: the catalog numbers places from 1; take the last N by probing the highest id.
hi = 1
while "result" in admin.call("catalog.get", {"id": hi * 2}):
    hi *= 2
lo, top = hi, hi * 2
while lo + 1 < top:
    mid = (lo + top) // 2
    if "result" in admin.call("catalog.get", {"id": mid}): lo = mid
    else: top = mid
ids = list(range(max(1, lo - N + 1), lo + 1))
for i in range(0, len(ids), 64):
    owner.send_raw("".join(json.dumps({"jsonrpc": "2.0", "id": k, "method": "favorites.add", "params": {"place_id": p}}) + "\n"
                           for k, p in enumerate(ids[i:i + 64])).encode())
    for _ in ids[i:i + 64]:
        owner.line()
print("list filled:", owner.ok("favorites.lists")["lists"][0]["count"])
victim = tb.user("dvict%d" % stamp, source="127.0.0.50")
victim.ok("favorites.add", {"place_id": ids[0]})
stop = threading.Event()
pages = {"n": 0, "err": {}}


def attack(addr):
    c = tb.Conn(source=addr)
    c.ok("auth.resume", {"token": owner.token})
    line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "favorites.list",
                        "params": {"near": {"lat": 0, "lon": 0}, "sort": "distance", "limit": 100}}) + "\n").encode()
    while not stop.is_set():
        c.send_raw(line * 8)
        for _ in range(8):
            m = c.line()
            if "error" in m:
                code = m["error"]["data"]["code"]; pages["err"][code] = pages["err"].get(code, 0) + 1
            pages["n"] += 1


threads = [threading.Thread(target=attack, args=(a,)) for a in ADDRS for _ in range(2)]
for t in threads: t.start()
lat = []
t0 = time.time()
while time.time() - t0 < 15:
    s = time.time()
    r = victim.call("favorites.list", {})
    lat.append((time.time() - s, "ok" if "result" in r else r["error"]["data"]["code"]))
    time.sleep(0.05)
stop.set()
for t in threads: t.join(20)
xs = sorted(x for x, _ in lat)
print("attack pages:", pages)
print(f"victim n={len(xs)} p50={xs[len(xs)//2]*1000:.0f}ms p90={xs[len(xs)*9//10]*1000:.0f}ms max={xs[-1]*1000:.0f}ms errors={[c for _, c in lat if c != 'ok']}")
