"""Attack: auth.delete while the same user's other connections keep writing favorites and
pins. Afterwards, does any row of the user survive in favorites.sqlite (or notify.sqlite)?"""
import sqlite3, sys, threading, time, random, os
import tb

DATA = os.environ.get("TB_DATA", "/tmp/a13data")
name = "racer%d" % random.randint(0, 10**6)
main = tb.user(name)
uid = main.ok("auth.validate", {"token": main.token})["user_id"] if False else None
writers = [tb.Conn() for _ in range(4)]
for w in writers:
    w.ok("auth.resume", {"token": main.token})
uid = writers[0].ok("favorites.lists")  # warm the token cache
stop = threading.Event()
MIX = os.environ.get("TB_MIX", "favorites")
FORM = {"kind": "hazard", "detail": "flooding", "severity": "minor"}
MIXES = {
    "favorites": lambda i, k: None,
}
def mix(i, k):
    if MIX == "notify":
        return [("notify.settings.set", {"radius_m": 300 + i % 100}), ("notify.location", {"lat": -33.8568, "lon": 151.2153 + (i % 3) * 0.01}),
                ("notify.settings.set", {"radius_m": 250}), ("notify.location", {"lat": -33.86, "lon": 151.2})][i % 4] if os.environ.get("TB_NOSUBMIT") else [("notify.settings.set", {"radius_m": 300 + i % 100}), ("annotations.submit", {"lat": -33.8568, "lon": 151.2153, "values": FORM, "text": "racer"}), ("notify.location", {"lat": -33.86, "lon": 151.2}), ("notify.inbox", {})][i % 4]
    return [("favorites.toggle", {"place_id": 1 + (i % 50)}), ("pins.add", {"lat": -33.86, "lon": 151.2, "title": "t"}),
            ("favorites.lists.create", {"name": "l%d-%d" % (k, i)}), ("favorites.visited.add", {"place_id": 2})][i % 4]
results = {"ok": 0, "err": {}}

def hammer(c, k):
    i = 0
    while not stop.is_set() and i < 5000:
        i += 1
        m = mix(i, k)
        try:
            r = c.call(*m)
        except Exception as e:
            results["err"][str(e)] = results["err"].get(str(e), 0) + 1
            return
        if "error" in r:
            code = r["error"]["data"]["code"]
            results["err"][code] = results["err"].get(code, 0) + 1
            if code == "unauthenticated":
                return
        else:
            results["ok"] += 1

threads = [threading.Thread(target=hammer, args=(w, k)) for k, w in enumerate(writers)]
for t in threads: t.start()
time.sleep(0.5)
r = main.call("auth.delete", {"password": "Pass-word-1"})
print("delete:", r)
uid = r["result"]["user_id"]
stop.set()
for t in threads: t.join(10)
print(results)
time.sleep(3)
for db in ["favorites", "notify", "social"]:
    con = sqlite3.connect(f"file:{DATA}/{db}.sqlite?mode=ro", uri=True)
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
        for c in cols:
            if c == "user_id" or c.endswith("_user_id"):
                n = con.execute(f'SELECT count(*) FROM "{table}" WHERE "{c}" = ?', (uid,)).fetchone()[0]
                if n: print(f"LEFT: {db}.{table}.{c} = {uid}: {n} rows")
print("done, user", uid)
