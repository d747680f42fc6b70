"""Attack: delete an account and register the same name again: does the new account see
anything of the old (lists, pins, shares, toggle request ids)?"""
import random, time
import tb
name = "rereg%d" % random.randint(0, 10**6)
a = tb.user(name)
a.ok("favorites.add", {"place_id": 3, "note": "old"}); a.ok("pins.add", {"lat": -33.8, "lon": 151.2})
a.ok("favorites.lists.create", {"name": "Old"}); tok = a.ok("favorites.share", {"list": "Old"})["token"]
a.ok("favorites.toggle", {"place_id": 4, "request_id": "same"})
print("old id", a.ok("auth.delete", {"password": "Pass-word-1"}))
time.sleep(1)
n = tb.user(name)
print("new lists:", [(l["name"], l["count"]) for l in n.ok("favorites.lists")["lists"]])
print("new pins:", n.ok("pins.list")["pins"] if "pins" in n.ok("pins.list") else n.ok("pins.list"))
print("old share:", tb.Conn().call("favorites.shared", {"token": tok}).get("error", {}).get("data"))
print("same request_id:", n.ok("favorites.toggle", {"place_id": 4, "request_id": "same"}))
