"""Attack: one user holding favorites' writer. The catalog gets TB_PLACES places (pipelined
catalog.create as the admin); an attacker fills TB_LISTS own lists with all of them, then
deletes lists, runs 10,000-item-ish distance pages and 100-id contains in a loop, and finally
auth.delete (the erasure of every item in one transaction) — while a victim on another address
toggles a place and times each answer.
"""
import json, os, threading, time
import tb

N = int(os.environ.get("TB_PLACES", "2000"))
LISTS = int(os.environ.get("TB_LISTS", "10"))
admin = tb.Conn()
assert "result" in admin.call("auth.login", {"username": os.environ.get("TB_ADMIN", "admin"), "password": "Admin-Pass-1"})


def pipelined(conn, method, params_list, chunk=64):
    """Sends the calls `chunk` at a time; answers the results (or errors) in order."""
    out = []
    for i in range(0, len(params_list), chunk):
        part = params_list[i:i + chunk]
        conn.send_raw("".join(json.dumps({"jsonrpc": "2.0", "id": i + k + 1, "method": method, "params": p}) + "\n"
                              for k, p in enumerate(part)).encode())
        for _ in part:
            m = conn.line()
            while "method" in m:
                m = conn.line()
            out.append(m)
    return out


t0 = time.time()
made = pipelined(admin, "catalog.create", [{"name": "Bulk %d %d" % (t0, i), "category": "cafe", "lat": -33.8 + (i % 100) * 0.001,
                                            "lon": 151.2 + (i // 100) * 0.001} for i in range(N)])
ids = [m["result"]["id"] for m in made if "result" in m]
print("places", len(ids), "in", round(time.time() - t0, 1), "s")
time.sleep(2)
victim = tb.user("vict%d" % time.time(), source="127.0.0.31")
lat = []
stop = threading.Event()


def victim_loop():
    while not stop.is_set():
        s = time.time()
        r = victim.call("favorites.toggle", {"place_id": ids[0]})
        lat.append((time.time() - s, "ok" if "result" in r else r["error"]["data"]["code"]))
        time.sleep(0.02)


def report(what):
    xs = sorted(x for x, _ in lat)
    errs = [c for _, c in lat if c != "ok"]
    if xs:
        print(f"{what:34s} victim n={len(xs)} p50={xs[len(xs)//2]*1000:.0f}ms p90={xs[len(xs)*9//10]*1000:.0f}ms p99={xs[len(xs)*99//100]*1000:.0f}ms max={xs[-1]*1000:.0f}ms >500ms={sum(x > 0.5 for x in xs)} errors={len(errs)} {set(errs) or ''}")
    lat.clear()


th = threading.Thread(target=victim_loop); th.start()
time.sleep(1); report("idle")
att = tb.user("holder%d" % t0, source="127.0.0.30")
t0 = time.time()
for l in range(LISTS):
    att.ok("favorites.lists.create", {"name": "big %d" % l})
    res = pipelined(att, "favorites.add", [{"place_id": p, "list": "big %d" % l} for p in ids])
    bad = [m["error"] for m in res if "error" in m]
    if bad: print("list", l, "refusals", len(bad), bad[0])
print("filled", LISTS, "lists of", len(ids), "in", round(time.time() - t0, 1), "s")

report("while lists fill (pipelined adds)")
s = time.time(); att.ok("favorites.lists.delete", {"name": "big 0"}); print("lists.delete took", round(time.time() - s, 3)); time.sleep(0.5); report("one list deleted")
s = time.time()
for _ in range(30):
    att.call("favorites.list", {"list": "big 1", "near": {"lat": 0, "lon": 0}, "sort": "distance", "limit": 100})
print("30 distance pages took", round(time.time() - s, 2)); report("distance pages")
s = time.time()
for _ in range(30):
    att.call("favorites.contains", {"place_ids": ids[:100]})
print("30 contains took", round(time.time() - s, 2)); report("contains 100")
s = time.time(); r = att.call("auth.delete", {"password": "Pass-word-1"}); print("auth.delete", r.get("result") or r.get("error"), round(time.time() - s, 3))
time.sleep(4); report("erasure of every item")
stop.set(); th.join(10)
