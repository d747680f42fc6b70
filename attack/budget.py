"""Attack: list pages at the 256 KiB budget. 120 places with 800-byte names and 2,000-byte
addresses, each saved with a 2,000-byte note; every order paged with limit 100: each page's
items must stay within the budget, the pages must cover the list once, and the name cursor
(which holds an 800-byte name) must be accepted back. Also through favorites.shared.
"""
import json, os, time
import tb

admin = tb.Conn()
assert "result" in admin.call("auth.login", {"username": os.environ.get("TB_ADMIN", "admin"), "password": "Admin-Pass-1"})
stamp = int(time.time())
ids = []
for i in range(120):
    name = ("%03d" % i) + "\U0001F600" * 197  # 3 + 788 bytes, 200 characters
    r = admin.ok("catalog.create", {"name": name, "category": "cafe", "lat": -33.8 + i * 1e-4, "lon": 151.2,
                                    "address": "\U0001F600" * 500})
    ids.append(r["id"])
u = tb.user("budget%d" % stamp)
for p in ids:
    u.ok("favorites.add", {"place_id": p, "note": "\U0001F600" * 500})
problems = 0
BUDGET = 256 * 1024
for params in [{}, {"sort": "name"}, {"sort": "distance", "near": {"lat": -33.8, "lon": 151.2}}]:
    seen, cursor, sizes = [], None, []
    for _ in range(20):
        p = dict(params, limit=100)
        if cursor: p["cursor"] = cursor
        r = u.call("favorites.list", p)
        if "error" in r:
            print("ERROR", params, r["error"]); problems += 1; break
        items = r["result"]["items"]
        size = len(",".join(json.dumps(i, ensure_ascii=False, separators=(",", ":")) for i in items).encode())
        sizes.append((len(items), size))
        if size > BUDGET: print("OVER BUDGET", params, size); problems += 1
        seen += [i["place"]["id"] for i in items]
        cursor = r["result"].get("next_cursor")
        if not cursor: break
    if sorted(seen) != sorted(ids): print("COVERAGE", params, len(seen), len(set(seen))); problems += 1
    print(params.get("sort", "added"), "pages (items, bytes):", sizes, "cursor bytes:", len(cursor or ""))
tok = u.ok("favorites.share", {"list": "favorites"})["token"]
seen, cursor = [], None
for _ in range(20):
    p = {"token": tok, "limit": 100}
    if cursor: p["cursor"] = cursor
    r = tb.Conn().call("favorites.shared", p)
    if "error" in r: print("shared ERROR", r["error"]); problems += 1; break
    if any("note" in i for i in r["result"]["items"]): print("NOTE LEAKED"); problems += 1
    seen += [i["place"]["id"] for i in r["result"]["items"]]
    cursor = r["result"].get("next_cursor")
    if not cursor: break
print("shared saw", len(seen), "of", len(ids))
print("problems:", problems)
