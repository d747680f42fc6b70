"""Attack: auth.delete while the user's other connections, on two gateways (TB_PORT and
TB_PORT2), write to favorites, notify (settings, location, annotations) and social (reviews,
follows, profile). Afterwards every table of every database is searched for the user's id in
an id column and for the user's name anywhere (TB_DATA, the data dir). TB_RESTART=favorites
(or notify) kills that service (SIGKILL, `tourbus up` restarts it) right after the deletion
while the writers go on.
"""
import os, random, sqlite3, subprocess, threading, time
import tb

DATA = os.environ.get("TB_DATA", "/tmp/a13b")
PORT2 = int(os.environ.get("TB_PORT2", str(tb.PORT + 1)))
RESTART = os.environ.get("TB_RESTART")
name = "racer%d" % random.randint(0, 10**6)
other = tb.user("other%d" % random.randint(0, 10**6))
main = tb.user(name)
writers = [tb.Conn(tb.PORT) for _ in range(3)] + [tb.Conn(PORT2) for _ in range(3)]
for w in writers:
    w.ok("auth.resume", {"token": main.token})
FORM = {"kind": "hazard", "detail": "flooding", "severity": "minor"}
other_id = other.ok("profile.get")["id"] if False else None
prof = other.call("profile.get", {})
other_id = prof["result"].get("id") or prof["result"].get("user_id")


def mix(i, k):
    calls = [("favorites.toggle", {"place_id": 1 + (i % 5)}), ("pins.add", {"lat": -33.86, "lon": 151.2, "title": name}),
             ("favorites.lists.create", {"name": "%s-%d-%d" % (name, k, i)}), ("favorites.visited.add", {"place_id": 2}),
             ("notify.settings.set", {"radius_m": 300 + i % 100}), ("notify.location", {"lat": -33.86, "lon": 151.2}),
             ("annotations.submit", {"lat": -33.8568, "lon": 151.2153, "values": FORM, "text": name}),
             ("reviews.add", {"place_id": 1 + (i % 5), "rating": 4, "text": name}),
             ("social.follow", {"user_id": other_id}), ("social.unfollow", {"user_id": other_id}),
             ("favorites.share", {"list": "favorites"})]
    return calls[(i + k) % len(calls)]


results = {"ok": 0, "err": {}}
stop = threading.Event()


def hammer(c, k):
    i = 0
    while not stop.is_set() and i < 3000:
        i += 1
        try:
            r = c.call(*mix(i, k))
        except Exception as e:
            results["err"][str(e)] = results["err"].get(str(e), 0) + 1
            return
        if "error" in r:
            code = r["error"].get("data", {}).get("code", r["error"].get("message"))
            key = f"{mix(i, k)[0]}:{code}"
            results["err"][key] = results["err"].get(key, 0) + 1
        else:
            results["ok"] += 1


threads = [threading.Thread(target=hammer, args=(w, k)) for k, w in enumerate(writers)]
for t in threads: t.start()
time.sleep(1.0)
r = main.call("auth.delete", {"password": "Pass-word-1"})
print("delete:", r)
uid = r["result"]["user_id"]
if RESTART:
    pid = subprocess.run(["pgrep", "-f", f"tourbus-{RESTART} .*{DATA}"], capture_output=True, text=True).stdout.split()
    print("killing", RESTART, pid)
    for p in pid[:1]:
        os.kill(int(p), 9)
time.sleep(4 if RESTART else 1.5)
stop.set()
for t in threads: t.join(15)
print(results)
time.sleep(3)
left = 0
for db in ["favorites", "notify", "social", "catalog", "search"]:
    path = f"{DATA}/{db}.sqlite"
    if not os.path.exists(path): continue
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        cols = [c[1] for c in con.execute(f'PRAGMA table_info("{table}")')]
        for c in cols:
            if c in ("user_id", "follower_id", "followee_id", "author_id", "owner_id") or c.endswith("_user_id"):
                n = con.execute(f'SELECT count(*) FROM "{table}" WHERE "{c}" = ?', (uid,)).fetchone()[0]
                if n: print(f"LEFT: {db}.{table}.{c} = {uid}: {n} rows"); left += 1
            try:
                n = con.execute(f'SELECT count(*) FROM "{table}" WHERE CAST("{c}" AS TEXT) LIKE ?', (f"%{name}%",)).fetchone()[0]
            except sqlite3.Error:
                n = 0
            if n: print(f"LEFT: {db}.{table}.{c} holds the name: {n} rows"); left += 1
print("done, user", uid, "tables with rows left:", left)
