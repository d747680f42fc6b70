"""Attack: do favorites.changed pushes reach anyone but the user's other connections? And does
a user re-registered under a deleted name see anything of the old account?"""
import json, random, socket, time
import tb

a = tb.user("pa%d" % random.randint(0, 10**6))
b = tb.user("pb%d" % random.randint(0, 10**6))
a2 = tb.Conn(); a2.ok("auth.resume", {"token": a.token}); a2.ok("subscribe", {"topics": ["favorites.changed"]})
b2 = tb.Conn(); b2.ok("auth.resume", {"token": b.token}); b2.ok("subscribe", {"topics": ["favorites.changed"]})
anon = tb.Conn(); print("anonymous subscribe:", anon.call("subscribe", {"topics": ["favorites.changed"]}).get("error", {}).get("data"))
a.ok("favorites.toggle", {"place_id": 7}); a.ok("pins.add", {"lat": -33.8, "lon": 151.2, "note": "secret"})
def drain(c, secs=1.0):
    c.s.settimeout(secs); got = []
    try:
        while True:
            got.append(c.line())
    except Exception:
        pass
    return got
print("a's other device heard:", [m.get("params", {}).get("body", m) for m in drain(a2)])
print("b's device heard:", drain(b2))
print("a's own connection heard:", drain(a, 0.5))
# delete a, re-register the same name
name = None
r = a.call("auth.delete", {"password": "Pass-word-1"}); print("delete:", r.get("result"))
time.sleep(1)
print("a2 after delete:", drain(a2, 1.0)[:2])
c = tb.user(a_name) if False else None
