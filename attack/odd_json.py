"""Attack: the hand-written list page (ItemPage.body, ListItem.appendJSON) with odd place
names, addresses, notes and numbers. Every reply is parsed with a strict parser (no raw
control characters, no NaN) and compared with what was stored; the same pages over RESP.

Needs an admin: TB_ADMIN=name, password Admin-Pass-1 (see README: tourbus admin create).
"""
import json, os, subprocess, sys, time
import tb

ADMIN = os.environ.get("TB_ADMIN", "admin")
admin = tb.Conn()
r = admin.call("auth.login", {"username": ADMIN, "password": "Admin-Pass-1"})
assert "result" in r, r

NAMES = [
    'quote " backslash \\ slash / end',
    "line\u2028sep\u2029para",
    "emoji \U0001F600\U0001F1E6\U0001F1FA family \U0001F468\u200D\U0001F469\u200D\U0001F467",
    "del \x7f and nbsp \u00a0",
    "e\u0301" * 100,  # 200 bytes of combining marks on 100 characters
    "\U0001F600" * 200,  # 800 bytes, at the name limit
    "\\u0000 not an escape",
    "</script><script>alert(1)</script>",
]
ADDRESSES = ["tab\there\nnew line\r\ncrlf", "ctrl? \x01\x1f", "\U0001F600" * 500, None]
COORDS = [(89.99999999999999, 179.99999999999997), (-90.0, -180.0), (5e-324, -5e-324),
          (-0.0, 0.0), (1e-7, 180.0), (90, 180), (-33.8568, 151.2153)]
NOTES = ["\"\\\n\t\u2028\U0001F600", "\u00e9" * 500, "a\r\nb", "\U0001F600" * 500]

made = []
for i, name in enumerate(NAMES):
    lat, lon = COORDS[i % len(COORDS)]
    body = {"name": name, "category": "cafe", "lat": lat, "lon": lon}
    addr = ADDRESSES[i % len(ADDRESSES)]
    if addr is not None:
        body["address"] = addr
    r = admin.call("catalog.create", body)
    if "error" in r:
        print("create refused", repr(name[:40]), r["error"])
        continue
    made.append(r["result"])
for lat, lon in COORDS:
    r = admin.call("catalog.create", {"name": f"pt {lat} {lon}", "category": "cafe", "lat": lat, "lon": lon})
    if "error" in r:
        print("create refused", lat, lon, r["error"]); continue
    made.append(r["result"])
print("made", len(made), "places")

u = tb.user("odd%d" % int(time.time()))
for i, p in enumerate(made):
    note = NOTES[i % len(NOTES)]
    r = u.call("favorites.add", {"place_id": p["id"], "note": note})
    if "error" in r:
        print("add refused", p["id"], r["error"]); continue


def strict(raw):
    def no_const(c):
        raise ValueError("non-JSON constant " + c)
    return json.loads(raw, strict=True, parse_constant=no_const)


# Raw line, strict parse.
problems = 0
for sort, extra in [("added", {}), ("name", {}), ("distance", {"near": {"lat": 0, "lon": 0}}),
                    ("distance", {"near": {"lat": -90, "lon": 180}})]:
    cursor, seen, pages = None, [], 0
    while pages < 50:
        pages += 1
        params = {"sort": sort, "limit": 3, **extra}
        if cursor:
            params["cursor"] = cursor
        rid = 9000 + pages
        u.send_raw((json.dumps({"jsonrpc": "2.0", "id": rid, "method": "favorites.list", "params": params}) + "\n").encode())
        while b"\n" not in u.buf:
            u.buf += u.s.recv(1 << 20)
        line, u.buf = u.buf.split(b"\n", 1)
        try:
            msg = strict(line.decode("utf-8", "strict"))
        except Exception as e:
            print("NOT STRICT JSON", sort, e, line[:200]); problems += 1; break
        if "error" in msg:
            print("error", sort, msg["error"]); problems += 1; break
        res = msg["result"]
        seen += res["items"]
        cursor = res.get("next_cursor")
        if not cursor:
            break
    ids = [it["place"]["id"] for it in seen]
    if sorted(ids) != sorted(p["id"] for p in made) or len(set(ids)) != len(ids):
        print("PAGING", sort, extra, "saw", ids); problems += 1
    for it in seen:
        p = next(p for p in made if p["id"] == it["place"]["id"])
        for k in ["name", "address", "lat", "lon", "category"]:
            if p.get(k) != it["place"].get(k) or (k in ("lat", "lon") and str(p[k]) != str(it["place"][k])):
                print("MISMATCH", k, repr(p.get(k))[:60], repr(it["place"].get(k))[:60]); problems += 1
    print(sort, extra, "items", len(seen), "pages", pages)

# RESP: redis-cli --no-raw prints bulk strings; parse its raw output.
port = str(tb.PORT)
out = subprocess.run(["redis-cli", "-p", port, "--raw", "AUTH", u.token], capture_output=True)
cmd = ["redis-cli", "-p", port, "--raw"]
script = f"AUTH {u.token}\nfavorites.list limit 100\n"
out = subprocess.run(cmd, input=script.encode(), capture_output=True)
lines = out.stdout.split(b"\n", 1)
try:
    strict(lines[1].rstrip(b"\n").decode("utf-8", "strict"))
    print("RESP page parses")
except Exception as e:
    # redis-cli --raw prints the bulk string with its newlines as they are; the JSON itself has none.
    print("RESP", e, lines[1][:200]); problems += 1
print("problems:", problems)
