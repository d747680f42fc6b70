"""Attack: pins paging across the antimeridian and the poles (near and bbox, page by page,
limit 1..3), checked against an order computed here; cursors of another order, of another
user, and of another favorites order handed to pins.list.
"""
import math, time
import tb

u = tb.user("pinedge%d" % time.time())
v = tb.user("pinother%d" % time.time())
pts = [(0, 179.9999), (0, -179.9999), (0, 180), (0, -180), (90, 0), (90, 120), (-90, -45), (-90, 180),
       (89.9999, -179), (-89.9999, 179), (10, 179.5), (10, -179.5), (-10, 180), (45, 90), (0, 0)]
ids = {}
for lat, lon in pts:
    ids[u.ok("pins.add", {"lat": lat, "lon": lon})["id"]] = (lat, lon)
problems = 0


def hav(a, b):
    r = 6371008.8
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return 2 * r * math.asin(min(1, math.sqrt(h)))


def walk(params, limit):
    out, cursor = [], None
    for _ in range(100):
        p = dict(params, limit=limit)
        if cursor: p["cursor"] = cursor
        r = u.call("pins.list", p)
        if "error" in r:
            return out, r["error"]
        out += r["result"]["pins"]
        cursor = r["result"].get("next_cursor")
        if not cursor:
            return out, None
    return out, "too many pages"


for center in [(0, 180), (0, -180), (90, 0), (-90, 0), (0, 179.99999), (89.99, 180)]:
    for limit in (1, 2, 3):
        got, err = walk({"near": {"lat": center[0], "lon": center[1]}}, limit)
        gids = [p["id"] for p in got]
        if err or sorted(gids) != sorted(ids) or len(set(gids)) != len(gids):
            print("NEAR PAGING", center, limit, err, gids); problems += 1
        d = [p["distance_m"] for p in got]
        if d != sorted(d):
            print("NEAR ORDER", center, limit, d); problems += 1
for box in [{"south": -10, "west": 179, "north": 10, "east": -179}, {"south": 89, "west": -180, "north": 90, "east": 180},
            {"south": -90, "west": 170, "north": 90, "east": -170}, {"south": -90, "west": -180, "north": 90, "east": 180}]:
    def inside(lat, lon):
        if not (box["south"] <= lat <= box["north"]): return False
        if box["west"] <= box["east"]: return box["west"] <= lon <= box["east"]
        return lon >= box["west"] or lon <= box["east"]
    want = sorted((i for i, (la, lo) in ids.items() if inside(la, lo)), reverse=True)
    for limit in (1, 3):
        got, err = walk({"bbox": box}, limit)
        if err or [p["id"] for p in got] != want:
            print("BBOX", box, limit, err, [p["id"] for p in got], "want", want); problems += 1

# Cursors of another order or user.
near_cur = u.ok("pins.list", {"near": {"lat": 0, "lon": 0}, "limit": 1})["next_cursor"]
id_cur = u.ok("pins.list", {"limit": 1})["next_cursor"]
v.ok("favorites.add", {"place_id": 1})
v.ok("favorites.add", {"place_id": 2})
fav_cur = v.ok("favorites.list", {"limit": 1})["next_cursor"]
for desc, who, params in [("near cursor, no near", u, {"cursor": near_cur}), ("id cursor with near", u, {"near": {"lat": 0, "lon": 0}, "cursor": id_cur}),
                          ("favorites cursor", u, {"cursor": fav_cur}), ("u's id cursor as v", v, {"cursor": id_cur}),
                          ("u's near cursor as v", v, {"near": {"lat": 0, "lon": 0}, "cursor": near_cur})]:
    r = who.call("pins.list", params)
    print(f"{desc:28s}", r.get("error", {}).get("data") or ("ok, %d pins" % len(r["result"]["pins"])))
for desc, params in [("pins cursor on favorites", {"cursor": id_cur}), ("near pins cursor, distance", {"near": {"lat": 0, "lon": 0}, "sort": "distance", "cursor": near_cur})]:
    r = v.call("favorites.list", params)
    print(f"{desc:28s}", r.get("error", {}).get("data") or ("ok, %d items" % len(r["result"]["items"])))
print("problems:", problems)
