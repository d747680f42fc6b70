"""Attack: do search's blended popularities come back to the catalog's number after every
way a save or visit goes (unsave, list deleted, user erased, place deleted), and can one user
inflate a place (visited again and again, many own lists, toggling)? Reads search.sqlite and
favorites.sqlite of TB_DATA after each step. Needs an admin (TB_ADMIN, Admin-Pass-1).
"""
import os, sqlite3, time
import tb

DATA = os.environ.get("TB_DATA", "/tmp/a13b")
admin = tb.Conn()
assert "result" in admin.call("auth.login", {"username": os.environ.get("TB_ADMIN", "admin"), "password": "Admin-Pass-1"})
place = admin.ok("catalog.create", {"name": "Counted %d" % time.time(), "category": "cafe", "lat": -33.9, "lon": 151.1, "popularity": 10})
pid = place["id"]


def state():
    s = sqlite3.connect(f"file:{DATA}/search.sqlite?mode=ro", uri=True)
    row = s.execute("SELECT popularity, catalog_popularity FROM places WHERE id = ?", (pid,)).fetchone()
    cnt = s.execute("SELECT saves, visits_30d FROM place_counts WHERE place_id = ?", (pid,)).fetchone()
    f = sqlite3.connect(f"file:{DATA}/favorites.sqlite?mode=ro", uri=True)
    fc = f.execute("SELECT saves, visits_30d FROM place_counts WHERE place_id = ?", (pid,)).fetchone()
    return {"search_pop": row, "search_counts": cnt, "fav_counts": fc}


def settle(what):
    time.sleep(2.5)
    print(f"{what:45s}", state())


settle("created")
users = [tb.user("cnt%d_%d" % (i, time.time())) for i in range(3)]
users[0].ok("favorites.add", {"place_id": pid})
users[1].ok("favorites.visited.add", {"place_id": pid})
for i in range(20):
    users[2].call("favorites.visited.add", {"place_id": pid})
    users[2].call("favorites.toggle", {"place_id": pid})
for i in range(5):
    users[2].call("favorites.lists.create", {"name": "own %d" % i})
    users[2].call("favorites.add", {"place_id": pid, "list": "own %d" % i})
settle("1 save, 2 visits (u2 spammed), own lists")
users[0].ok("favorites.remove", {"place_id": pid})
settle("save removed")
for i in range(5):
    users[2].call("favorites.lists.delete", {"name": "own %d" % i})
users[2].ok("favorites.add", {"place_id": pid})
settle("u2 saves")
old = (time.time() - 31 * 86400)
users[1].ok("favorites.visited.add", {"place_id": pid, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(old))})
settle("u1's visit moved 31 days back")
near = (time.time() - 30 * 86400 + 3)
users[1].ok("favorites.visited.add", {"place_id": pid, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(near))})
settle("u1's visit 30 days - 3 s back (counts)")
time.sleep(3)
settle("... 3 s later, it left the window")
r = users[2].call("auth.delete", {"password": "Pass-word-1"})
settle("u2 erased")
users[0].ok("favorites.add", {"place_id": pid})
settle("u0 saves again")
admin.ok("catalog.delete", {"id": pid})
settle("catalog deleted the place")
