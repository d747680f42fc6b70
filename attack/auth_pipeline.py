"""Attack: the gateway's token handling. AUTH switching mid-pipeline (RESP and JSON-RPC
lines, and inside one JSON-RPC batch): does every write land in the list of the user signed
in when it was sent? auth.delete pipelined with writes on one connection (lines and a batch);
`token` params with escaped keys, duplicates, another user's token on auth.delete, and a
session token given to favorites.shared.
"""
import json, socket, time
import tb

stamp = int(time.time())
a, b = tb.user("pa%d" % stamp), tb.user("pb%d" % stamp)
problems = 0


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for x in args:
        x = str(x).encode()
        out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out


# RESP: AUTH a; add 1; AUTH b; add 2; AUTH a; add 3 — all in one write.
s = socket.create_connection(("127.0.0.1", tb.PORT))
s.sendall(resp("AUTH", a.token) + resp("favorites.add", "place_id", 1, "list", "want_to_go") + resp("AUTH", b.token)
          + resp("favorites.add", "place_id", 2, "list", "want_to_go") + resp("AUTH", a.token) + resp("favorites.add", "place_id", 3, "list", "want_to_go"))
time.sleep(1.5)
s.settimeout(2)
print("RESP replies:", s.recv(65536)[:300])
la = sorted(i["place"]["id"] for i in a.ok("favorites.list", {"list": "want_to_go"})["items"])
lb = sorted(i["place"]["id"] for i in b.ok("favorites.list", {"list": "want_to_go"})["items"])
print("RESP pipeline: a has", la, "b has", lb)
if la != [1, 3] or lb != [2]: problems += 1; print("PROBLEM: writes landed with the wrong user")

# JSON-RPC batch with auth.resume switching inside it.
c = tb.Conn()
c.ok("auth.resume", {"token": a.token})
batch = [{"jsonrpc": "2.0", "id": 1, "method": "favorites.add", "params": {"place_id": 4, "list": "visited"}},
         {"jsonrpc": "2.0", "id": 2, "method": "auth.resume", "params": {"token": b.token}},
         {"jsonrpc": "2.0", "id": 3, "method": "favorites.add", "params": {"place_id": 5, "list": "visited"}}]
c.send_raw((json.dumps(batch) + "\n").encode())
print("batch reply:", [m.get("error", {}).get("message") or "ok" for m in c.line()] if True else None)
va = sorted(i["place"]["id"] for i in a.ok("favorites.list", {"list": "visited"})["items"])
vb = sorted(i["place"]["id"] for i in b.ok("favorites.list", {"list": "visited"})["items"])
print("batch: a visited", va, "b visited", vb)

# Escaped and duplicate token keys.
for raw in ['{"tok\\u0065n":"%s","list":"favorites"}' % b.token, '{"token":"%s","token":"%s"}' % (b.token, a.token),
            '{"token":"%s","tok\\u0065n":"%s"}' % (b.token, a.token)]:
    anon = tb.Conn()
    r = anon.call("favorites.lists", raw_params=raw)
    print("favorites.lists", raw[:40], "->", r.get("error", {}).get("data") or "ok as %s" % ("b" if r["result"] else "?"))
# A session token to favorites.shared.
r = tb.Conn().call("favorites.shared", {"token": a.token})
print("shared with a session token:", r.get("error", {}).get("data"))
tok = a.ok("favorites.share", {"list": "favorites"})["token"]
r = b.call("favorites.shared", {"token": tok})
print("shared read by b signed in:", "ok" if "result" in r else r["error"])
# auth.delete with a token param naming another user's session, on a's connection, with a's password.
r = a.call("auth.delete", {"token": b.token, "password": "Pass-word-1"})
print("auth.delete as a with b's token and the (shared) password:", r.get("result") or r["error"])
still = b.call("favorites.lists", {})
print("b after that:", "signed in" if "result" in still else still["error"])

# auth.delete pipelined with writes, lines then batch.
d = tb.user("pd%d" % stamp)
lines = [{"jsonrpc": "2.0", "id": 10, "method": "auth.delete", "params": {"password": "Pass-word-1"}}] + \
        [{"jsonrpc": "2.0", "id": 11 + i, "method": "favorites.add", "params": {"place_id": 1 + i % 3, "list": "want_to_go"}} for i in range(20)]
d.send_raw("".join(json.dumps(l) + "\n" for l in lines).encode())
codes = []
for _ in lines:
    m = d.line()
    codes.append("ok" if "result" in m else m["error"]["data"]["code"])
print("lines: delete then writes:", codes[:1], {c: codes[1:].count(c) for c in set(codes[1:])})
e = tb.user("pe%d" % stamp)
e.send_raw((json.dumps(lines) + "\n").encode())
m = e.line()
codes = ["ok" if "result" in x else x["error"]["data"]["code"] for x in m]
print("batch: delete then writes:", codes[:1], {c: codes[1:].count(c) for c in set(codes[1:])})
print("problems:", problems)
