"""Attack: does favorites.shared {token} work through the gateway? The gateway takes a
`token` param as a session token."""
import tb, random
a = tb.user("sharer%d" % random.randint(0, 10**6))
print(a.call("favorites.add", {"place_id": 1}))
t = a.ok("favorites.share", {"list": "favorites"})["token"]
print("share token", t)
anon = tb.Conn()
print("anonymous:", anon.call("favorites.shared", {"token": t}))
print("signed in:", a.call("favorites.shared", {"token": t}))
