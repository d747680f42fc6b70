"""Attack: with the catalog stopped (SIGSTOP by the caller), several connections of one user
save unknown place ids (each waits up to 1 s for catalog.get on a favorites reader) while a
victim (another user, same address) times favorites.list. Prints the victim's latencies."""
import random, threading, time
import tb
BOSS = tb.user("down%d" % random.randint(0, 10**6)); VICTIM = tb.user("downv%d" % random.randint(0, 10**6), source="127.0.0.2")
stop = threading.Event(); codes = {}
def attacker():
    c = tb.Conn(); c.ok("auth.resume", {"token": BOSS.token})
    for i in range(1000):
        if stop.is_set(): break
        r = c.call("favorites.add", {"place_id": 10**7 + random.randint(0, 10**9)})
        k = r["error"]["data"]["code"] if "error" in r else "ok"; codes[k] = codes.get(k, 0) + 1
ts = [threading.Thread(target=attacker) for _ in range(16)]
for t in ts: t.start()
lat = []; errs = {}
for i in range(20):
    t = time.time(); r = VICTIM.call("favorites.list"); lat.append((time.time() - t) * 1000)
    if "error" in r: errs[r["error"]["data"]["code"]] = errs.get(r["error"]["data"]["code"], 0) + 1
    time.sleep(0.05); print("victim", i, round(lat[-1]), r.get("error", {}).get("data"), flush=True)
stop.set()
for t in ts: t.join(20)
lat.sort(); print(f"victim favorites.list n={len(lat)} p50={lat[10]:.0f} p90={lat[18]:.0f} max={lat[-1]:.0f} errors={errs}; attackers {codes}")
