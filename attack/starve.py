"""Attack: several connections loop favorites.add / toggle on unknown place ids (each a
catalog.get miss) and pins.add (writer thread) while a victim from the same machine times its
favorites.list, favorites.toggle and catalog.get. Prints the victim's p50/p99/max in ms."""
import random, threading, time
import tb

ATTACKERS, SECONDS = 8, 8
stop = threading.Event()
counts = {"sent": 0, "codes": {}}

BOSS = tb.user("starver%d" % random.randint(0, 10**6))
VICTIM = tb.user("victim%d" % random.randint(0, 10**6))

def attacker(k):
    c = tb.Conn(); c.ok("auth.resume", {"token": BOSS.token})
    i = 0
    while not stop.is_set() and i < 100000:
        i += 1
        m = [("favorites.add", {"place_id": 10**6 + random.randint(0, 10**9)}),
             ("favorites.toggle", {"place_id": 10**6 + random.randint(0, 10**9)}),
             ("pins.add", {"lat": -33.8, "lon": 151.2}), ("favorites.contains", {"place_ids": list(range(1, 101))})][i % 4]
        r = c.call(*m)
        code = r["error"]["data"]["code"] if "error" in r else "ok"
        counts["codes"][code] = counts["codes"].get(code, 0) + 1

def victim():
    v = VICTIM
    lat = {"favorites.list": [], "favorites.toggle": [], "catalog.get": []}
    i = 0
    while not stop.is_set() and i < 100000:
        i += 1
        for m, p in [("favorites.list", {}), ("favorites.toggle", {"place_id": 1 + i % 20}), ("catalog.get", {"id": 1 + i % 20})]:
            t = time.time(); r = v.call(m, p); lat[m].append((time.time() - t) * 1000)
            if "error" in r: print("victim error", m, r["error"])
        time.sleep(0.01)
    for m, xs in lat.items():
        xs.sort()
        print(f"victim {m}: n={len(xs)} p50={xs[len(xs)//2]:.1f} p99={xs[int(len(xs)*0.99)]:.1f} max={xs[-1]:.1f}")

ts = [threading.Thread(target=attacker, args=(k,)) for k in range(ATTACKERS)] + [threading.Thread(target=victim)]
for t in ts: t.start()
time.sleep(SECONDS); stop.set()
for t in ts: t.join(30)
print("attackers:", counts["codes"])
