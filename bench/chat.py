# The load of bench/chat, run with the pyzmq of .build/benchenv:
#
#   chat.py SOCIAL_RPC GATEWAY_PORT USERS GROUPS RATE SECONDS
#
# Registers USERS users and signs each in, makes GROUPS groups of USERS/GROUPS members each
# (created, invited and accepted straight to social), then opens one gateway connection per
# user from 16 loopback addresses, signs it in (auth.resume) and subscribes it to chat.message.
# For SECONDS, RATE messages a second go to the groups, spread evenly, each from the next
# member in turn (so no sender comes near the rate limit) on that member's own connection.
# Measured: each chat.send's answer time, and for every push that reaches another member the
# time from sending to its arrival. Then chat.history throughput: 50 connections ask for the
# latest 20 messages of their group, 4 requests in flight each, for 10 s.
import json
import math
import os
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmq  # noqa: E402


def fail(message):
    print("chat.py: " + message, file=sys.stderr)
    sys.exit(1)


def percentile(values, p):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(math.ceil(p / 100.0 * len(ordered))) - 1)]


class Bus:
    """Requests over one DEALER with many in flight, each with an `auth` of its own."""

    def __init__(self, ctx, endpoint):
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.counter = 0

    def all(self, requests, window=64, timeout=300):
        """Sends (type, body, auth) requests, `window` in flight; the reply bodies in order."""
        replies = [None] * len(requests)
        ids = {}
        sent = 0
        retry = []
        end = time.monotonic() + timeout
        while (sent < len(requests) or ids or retry) and time.monotonic() < end:
            while (retry or sent < len(requests)) and len(ids) < window:
                if retry:
                    index = retry.pop()
                    time.sleep(0.005)
                else:
                    index = sent
                    sent += 1
                type_, body, auth = requests[index]
                self.counter += 1
                rid = "b-%d" % self.counter
                self.sock.send(json.dumps({"v": 1, "id": rid, "type": type_, "auth": auth, "deadline_ms": 30000, "body": body}).encode())
                ids[rid] = index
            if self.sock.poll(1000):
                reply = json.loads(self.sock.recv_multipart()[0])
                index = ids.pop(reply.get("id"), None)
                if index is None:
                    continue
                if not reply.get("ok") and reply.get("error", {}).get("code") == "unavailable":
                    retry.append(index)  # social is busy hashing other passwords: again in a moment
                    continue
                if not reply.get("ok"):
                    fail("%s failed: %s" % (requests[index][0], reply.get("error")))
                replies[index] = reply["body"]
        if ids or retry or sent < len(requests):
            fail("requests unanswered after %d s" % timeout)
        return replies


class Line:
    """A client TCP connection read line by line."""

    def __init__(self, port, source):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.buf = b""

    def send(self, data):
        view = memoryview(data)
        end = time.monotonic() + 5
        while view and time.monotonic() < end:
            try:
                view = view[self.sock.send(view):]
            except BlockingIOError:
                time.sleep(0.001)
        if view:
            fail("a connection did not take its request within 5 s")

    def lines(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except BlockingIOError:
            return []
        if not chunk:
            fail("the gateway closed a connection")
        self.buf += chunk
        *whole, self.buf = self.buf.split(b"\n")
        return whole


def rpc(method, params, id_=1):
    return (json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode()


def wait_all(sel, conns, want, timeout=60):
    """Reads until each connection in `conns` has `want` lines."""
    got = {c: 0 for c in conns}
    end = time.monotonic() + timeout
    while any(v < want for v in got.values()) and time.monotonic() < end:
        for key, _ in sel.select(0.5):
            if key.data in got:
                got[key.data] += len(key.data.lines())
    if any(v < want for v in got.values()):
        fail("connections still waiting for %d lines after %d s" % (want, timeout))


def run(argv):
    social_rpc, gateway_port = argv[0], int(argv[1])
    users, groups, rate, seconds = int(argv[2]), int(argv[3]), float(argv[4]), float(argv[5])
    size = users // groups
    if size < 2:
        fail("groups of %d members cannot talk" % size)
    ctx = zmq.Context()
    social = Bus(ctx, social_rpc)
    as_user = lambda i: {"user_id": str(ids[i]), "role": "user"}  # noqa: E731

    print("registering and signing in %d users..." % users, file=sys.stderr)
    names = ["traveller%d" % i for i in range(users)]
    social.all([("auth.register", {"username": n, "email": n + "@example.org", "name": n, "password": "Travel-Pass-1"}, None) for n in names])
    logins = social.all([("auth.login", {"username": n, "password": "Travel-Pass-1"}, None) for n in names])
    tokens = [r["token"] for r in logins]
    ids = [r["user"]["id"] for r in logins]

    print("making %d groups of %d..." % (groups, size), file=sys.stderr)
    members = [list(range(g * size, (g + 1) * size)) for g in range(groups)]
    made = social.all([("groups.create", {"name": "Trip %d" % g}, as_user(m[0])) for g, m in enumerate(members)])
    group_ids = [r["id"] for r in made]
    social.all([("groups.invite", {"group_id": group_ids[g], "username": names[u]}, as_user(m[0])) for g, m in enumerate(members) for u in m[1:]])
    social.all([("groups.accept", {"group_id": group_ids[g]}, as_user(u)) for g, m in enumerate(members) for u in m[1:]])
    group_of = {u: g for g, m in enumerate(members) for u in m}

    print("opening %d connections..." % users, file=sys.stderr)
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(users):
        c = Line(gateway_port, "127.0.0.%d" % (2 + i % 16))
        c.user = i
        conns.append(c)
        sel.register(c.sock, selectors.EVENT_READ, c)
    for c in conns:
        c.send(rpc("auth.resume", {"token": tokens[c.user]}))
    wait_all(sel, conns, 1)
    for c in conns:
        c.send(rpc("subscribe", {"topics": ["chat.message"]}, 2))
    wait_all(sel, conns, 1)

    # Sending: message k goes to group k % groups, from its next member in turn.
    sent_at = {}
    answers, pushes, errors = [], [], []
    turn = [0] * groups
    start = time.monotonic()
    k = 0
    while True:
        now = time.monotonic()
        if now - start < seconds:
            while k < (now - start) * rate:
                g = k % groups
                sender = members[g][turn[g] % size]
                turn[g] += 1
                cid = "b%d" % k
                sent_at[cid] = time.monotonic()
                conns[sender].send(rpc("chat.send", {"to": "group:%d" % group_ids[g], "text": "message %d to the trip" % k, "client_msg_id": cid}, cid))
                k += 1
        elif now - start > seconds + 5:
            break
        for key, _ in sel.select(0.002):
            t = time.monotonic()
            for line in key.data.lines():
                message = json.loads(line)
                if message.get("method") == "push":
                    body = message["params"]["body"]
                    pushes.append(t - sent_at[body["client_msg_id"]])
                elif "result" in message:
                    answers.append(t - sent_at[message["id"]])
                else:
                    errors.append(message.get("error"))
    print("sent %d messages in %.0f s; %d pushes heard" % (k, seconds, len(pushes)), file=sys.stderr)
    expected = k * (size - 1)

    # chat.history: 4 in flight on each of 50 connections (of 50 groups) for 10 s.
    history_seconds = 10.0
    read = 0
    history_errors = []
    readers = [conns[members[g][0]] for g in range(min(50, groups))]
    for c in readers:
        for _ in range(4):
            c.send(rpc("chat.history", {"conversation": "group:%d" % group_ids[group_of[c.user]], "limit": 20}, "h"))
    reading = set(readers)
    start = time.monotonic()
    while time.monotonic() - start < history_seconds:
        for key, _ in sel.select(0.01):
            if key.data not in reading:
                key.data.lines()
                continue
            for line in key.data.lines():
                if b'"result"' in line:
                    read += 1
                elif b'"error"' in line:
                    history_errors.append(json.loads(line).get("error"))
                key.data.send(rpc("chat.history", {"conversation": "group:%d" % group_ids[group_of[key.data.user]], "limit": 20}, "h"))

    ms = lambda v: "%.2f" % (v * 1000)  # noqa: E731
    print(json.dumps({
        "users": users, "groups": groups, "size": size, "rate": rate, "seconds": seconds, "sent": k, "answered": len(answers),
        "errors": len(errors), "first_error": errors[0] if errors else None, "pushes": len(pushes), "expected_pushes": expected,
        "answer_p50_ms": ms(percentile(answers, 50)), "answer_p99_ms": ms(percentile(answers, 99)),
        "push_p50_ms": ms(percentile(pushes, 50)), "push_p99_ms": ms(percentile(pushes, 99)), "push_max_ms": ms(max(pushes or [float("nan")])),
        "history_per_s": "%.0f" % (read / history_seconds), "history_errors": len(history_errors),
    }))


if __name__ == "__main__":
    run(sys.argv[1:])
