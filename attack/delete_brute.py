"""Attack: guess the password of a stolen session through auth.delete (a wrong guess is
permission_denied, a right one deletes). Is it throttled like logins, and shared with them?"""
import random, time
import tb

name = "brute%d" % random.randint(0, 10**6)
v = tb.user(name)
codes = []
t = time.time()
for i in range(30):
    r = v.call("auth.delete", {"password": "Guess-%d" % i})
    codes.append(r["error"]["data"]["code"] if "error" in r else "ok")
print("30 wrong auth.delete in %.1fs:" % (time.time() - t), {c: codes.count(c) for c in set(codes)})
r = tb.Conn().call("auth.login", {"username": name, "password": "Pass-word-1"})
print("then the right login:", r.get("error", {}).get("data", {}).get("code") or "ok")
r = v.call("auth.delete", {"password": "Pass-word-1"})
print("then the right auth.delete:", r.get("error", {}).get("data", {}).get("code") or r.get("result"))
