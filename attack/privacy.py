"""Attack: user B tries every method with user A's identifiers (pin ids, list names in other
cases and Unicode forms, A's cursors, A's share token as a session token, a `token` param of
A's session sent by B's connection for A's data is fine — it *is* A's credential)."""
import json, random, unicodedata
import tb

a = tb.user("pva%d" % random.randint(0, 10**6)); b = tb.user("pvb%d" % random.randint(0, 10**6))
name = unicodedata.normalize("NFC", "Café secret")
a.ok("favorites.lists.create", {"name": name})
for p in range(1, 8): a.ok("favorites.add", {"place_id": p, "list": name, "note": "a-secret-note"})
pin = a.ok("pins.add", {"lat": -33.8, "lon": 151.2, "note": "a-secret-pin"})["id"]
cur = a.ok("favorites.list", {"list": name, "limit": 2})["next_cursor"]
curn = a.ok("favorites.list", {"list": name, "limit": 2, "sort": "name"})["next_cursor"]
tok = a.ok("favorites.share", {"list": name})["token"]
leaks = []
def check(method, params):
    r = b.call(method, params); text = json.dumps(r)
    flag = "LEAK" if ("a-secret" in text.lower() or ("result" in r and method.startswith("pins") and str(pin) in text)) else "ok  "
    if flag == "LEAK": leaks.append((method, params))
    print(flag, method, json.dumps(params)[:60], "->", text[:110])
for n in [name, name.upper(), name.lower(), unicodedata.normalize("NFD", name), "CAFÉ SECRET"]:
    check("favorites.list", {"list": n}); check("favorites.lists.rename", {"name": n, "new_name": "x"})
    check("favorites.lists.delete", {"name": n}); check("favorites.share.revoke", {"list": n}); check("favorites.add", {"place_id": 1, "list": n})
check("favorites.list", {"cursor": cur}); check("favorites.list", {"cursor": curn, "sort": "name"})
check("favorites.shared", {"token": tok, "cursor": cur})
check("pins.update", {"id": pin, "note": "mine now"}); check("pins.delete", {"id": pin})
check("pins.list", {"near": {"lat": -33.8, "lon": 151.2}}); check("pins.list", {"bbox": {"south": -34, "west": 151, "north": -33, "east": 152}})
check("favorites.contains", {"place_ids": list(range(1, 8))})
check("favorites.list", {"token": tok})
print("A's list intact:", a.ok("favorites.list", {"list": name})["items"].__len__(), "pin intact:", a.ok("pins.list")["pins"][0]["note"])
print("leaks:", leaks)
