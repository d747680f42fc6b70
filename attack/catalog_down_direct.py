"""Localises catalog_down.py: while the attack runs (catalog SIGSTOPped), time a read sent
straight to favorites (tourbus call --service) and one through the gateway."""
import subprocess, sys, time, threading, random
import tb
FAV = sys.argv[1]
BOSS = tb.user("downd%d" % random.randint(0, 10**6)); VICTIM = tb.user("downdv%d" % random.randint(0, 10**6), source="127.0.0.4")
stop = threading.Event()
def attacker():
    c = tb.Conn(); c.ok("auth.resume", {"token": BOSS.token})
    for i in range(1000):
        if stop.is_set(): break
        c.call("favorites.add", {"place_id": 10**7 + random.randint(0, 10**9)})
ts = [threading.Thread(target=attacker) for _ in range(16)]
for t in ts: t.start()
time.sleep(1)
for i in range(4):
    t = time.time()
    subprocess.run(["../.build/debug/tourbus", "call", "--service", FAV, "favorites.shared", '{"token":"x"}'], capture_output=True)
    direct = (time.time() - t) * 1000
    t = time.time(); VICTIM.call("favorites.lists"); via = (time.time() - t) * 1000
    t = time.time(); VICTIM.call("catalog.categories"); cat = (time.time() - t) * 1000
    t = time.time(); VICTIM.call("ping"); ping = (time.time() - t) * 1000
    print(f"direct favorites {direct:.0f} ms (includes process start), via gateway favorites.lists {via:.0f} ms, ping {ping:.0f} ms", flush=True)
stop.set()
for t in ts: t.join(20)
