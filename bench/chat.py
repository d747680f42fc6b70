# The load of bench/chat, run with the pyzmq of .build/benchenv:
#
#   chat.py SOCIAL_RPC GATEWAY_PORT REDIS_PORT USERS GROUPS RATE SECONDS CONNECTIONS
#
# Registers USERS users and signs each in, then makes GROUPS groups of USERS/GROUPS members
# (created, invited and accepted straight on social's bus endpoint). Opens one gateway
# connection per user from 16 loopback addresses, signed in and subscribed to chat.message.
# For SECONDS, RATE times a second, a random member of the next group in turn sends a message
# to the group on their connection. Measured: each send's answer time, and for each other member the
# time from the send to the chat.message push arriving on their connection. Then CONNECTIONS
# connections of group members ask chat.history (the 20 newest) in a closed loop for 10 s.
# The peer, right after and in the same shape: Redis pub/sub, each member subscribed to its
# group's channel and a PUBLISH per message; then XREVRANGE COUNT 20 of a stream per group
# holding as many messages.
import json
import math
import os
import random
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmq  # noqa: E402
from notify import Bus, Line, fail, percentile, resp, rpc, wait_all  # noqa: E402

HISTORY_SECONDS = 10.0
TEXTS = ["Meet at the ferry wharf in ten minutes?", "The queue at the zoo is short now",
         "Anyone seen the lighthouse path? It's worth the climb.", "Lunch at the market, 1 pm",
         "Running late, go ahead without me", "Look at this view from the bridge!"]


def drive(sel, seconds, rate, send, take):
    """Calls send() `rate` times a second, evenly, for `seconds`; then drains for 5 s."""
    start = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic()
        if now - start < seconds:
            while sent < int((now - start) * rate) + 1:
                send(sent, time.monotonic())
                sent += 1
        elif now - start > seconds + 5:
            break
        for key, _ in sel.select(0.002):
            t = time.monotonic()
            for line in key.data.lines():
                take(key.data, line, t)
    return sent


def closed_loop(sel, conns, ask, is_answer):
    """Each connection asks again as soon as it has its answer, for HISTORY_SECONDS.
    is_answer(conn, line) says whether the line ends an answer: None (not an answer, or not
    whole yet), True (an answer) or False (an error)."""
    answers, errors, times = 0, 0, []
    asked = {}
    start = time.monotonic()
    for c in conns:
        asked[c] = time.monotonic()
        c.send(ask(c))
    while time.monotonic() - start < HISTORY_SECONDS:
        for key, _ in sel.select(0.01):
            c = key.data
            if c not in asked:
                continue
            for line in c.lines():
                ok = is_answer(c, line)
                if ok is None:
                    continue
                t = time.monotonic()
                times.append(t - asked[c])
                answers += 1
                errors += 0 if ok else 1
                asked[c] = t
                c.send(ask(c))
    # Let what is still out arrive (at most 5 s), so the connections close cleanly.
    quiet_by = time.monotonic() + 5
    while time.monotonic() < quiet_by:
        ready = sel.select(0.05)
        if not ready:
            break
        for key, _ in ready:
            key.data.lines()
    return answers / HISTORY_SECONDS, errors, times


def run(argv):
    social_rpc, gateway_port, redis_port = argv[0], int(argv[1]), int(argv[2])
    users, groups, rate, seconds, connections = int(argv[3]), int(argv[4]), float(argv[5]), float(argv[6]), int(argv[7])
    size = users // groups
    if size < 2:
        fail("groups need at least 2 members each")
    rng = random.Random(2026)
    ctx = zmq.Context()
    social = Bus(ctx, social_rpc)

    print("registering and signing in %d users..." % users, file=sys.stderr)
    names = ["chatter%d" % i for i in range(users)]
    social.all([("auth.register", {"username": n, "email": n + "@example.org", "name": n, "password": "Chat-Pass-1"}, None) for n in names])
    logins = social.all([("auth.login", {"username": n, "password": "Chat-Pass-1"}, None) for n in names])
    tokens = [r["token"] for r in logins]
    ids = [r["user"]["id"] for r in logins]
    auth = lambda i: {"user_id": str(ids[i]), "role": "user"}  # noqa: E731

    print("making %d groups of %d..." % (groups, size), file=sys.stderr)
    members = [list(range(g * size, (g + 1) * size)) for g in range(groups)]
    created = social.all([("groups.create", {"name": "Tour group %d" % g}, auth(m[0])) for g, m in enumerate(members)])
    group_ids = [c["id"] for c in created]
    social.all([("groups.invite", {"group_id": group_ids[g], "username": names[u]}, auth(m[0]))
                for g, m in enumerate(members) for u in m[1:]])
    social.all([("groups.accept", {"group_id": group_ids[g]}, auth(u)) for g, m in enumerate(members) for u in m[1:]])
    group_of = {u: g for g, m in enumerate(members) for u in m}

    print("opening %d connections..." % users, file=sys.stderr)
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(groups * size):
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

    # Tourbus.
    sent_at, answers, pushes, errors = {}, [], [], 0
    senders = {}

    def send(k, now):
        # The groups in turn, so each takes RATE/GROUPS a second: under social's budget of 30
        # messages in 10 s a group (at the defaults, 20), where a random pick would bunch some over it.
        g = k % groups
        sender = rng.choice(members[g])
        sent_at[k] = now
        senders[k] = sender
        conns[sender].send(rpc("chat.send", {"to": "group:%d" % group_ids[g], "text": TEXTS[k % len(TEXTS)], "client_msg_id": "b%d" % k}, 1000 + k))

    def take(conn, line, t):
        nonlocal errors
        message = json.loads(line)
        if message.get("method") == "push":
            body = message["params"].get("body", {})
            k = int(body.get("client_msg_id", "b-1")[1:])
            if k in sent_at:
                pushes.append(t - sent_at[k])
        elif "result" in message:
            k = message.get("id", 0) - 1000
            if k in sent_at:
                answers.append(t - sent_at[k])
        else:
            errors += 1
            if errors <= 3:
                print("error: %s" % line[:300], file=sys.stderr)

    print("tourbus: %d messages/s for %.0f s..." % (rate, seconds), file=sys.stderr)
    sent = drive(sel, seconds, rate, send, take)
    expected = sent * (size - 1)

    # chat.history by the first CONNECTIONS users' connections, each of its own group.
    history_conns = conns[:connections]
    ask = lambda c: rpc("chat.history", {"conversation": "group:%d" % group_ids[group_of[c.user]], "limit": 20}, 7)  # noqa: E731

    def history_answer(conn, line):
        message = json.loads(line)
        if message.get("method") == "push":
            return None
        return "result" in message and len(message["result"].get("messages", [])) > 0

    print("tourbus: chat.history on %d connections for %.0f s..." % (len(history_conns), HISTORY_SECONDS), file=sys.stderr)
    history_rate, history_errors, history_times = closed_loop(sel, history_conns, ask, history_answer)
    for c in conns:
        sel.unregister(c.sock)
        c.sock.close()

    # Redis, the same shape: each member subscribed to its group's channel on its own
    # connection, which also publishes its messages.
    print("redis: the same...", file=sys.stderr)
    rconns = []
    for i in range(groups * size):
        c = Line(redis_port, "127.0.0.%d" % (2 + i % 16))
        c.user = i
        rconns.append(c)
        sel.register(c.sock, selectors.EVENT_READ, c)
    pubs = []
    for i in range(groups * size):
        c = Line(redis_port, "127.0.0.%d" % (2 + i % 16))
        c.user = i
        pubs.append(c)
        sel.register(c.sock, selectors.EVENT_READ, c)
    for c in rconns:
        c.send(resp("SUBSCRIBE", "group%d" % group_of[c.user]))
    wait_all(sel, rconns, 6)  # *3, $9, subscribe, $N, channel, :1
    redis_sent_at, delivered = {}, []

    def publish(k, now):
        g = k % groups
        sender = rng.choice(members[g])
        redis_sent_at[k] = now
        pubs[sender].send(resp("PUBLISH", "group%d" % g, json.dumps({"k": k, "text": TEXTS[k % len(TEXTS)]})))

    def heard(conn, line, t):
        if line.startswith(b'{"k"'):
            k = json.loads(line)["k"]
            delivered.append(t - redis_sent_at[k])

    redis_sent = drive(sel, seconds, rate, publish, heard)
    redis_expected = redis_sent * size  # Redis delivers to the publisher's own subscription too
    for c in rconns:
        sel.unregister(c.sock)
        c.sock.close()

    # Streams holding as many messages per group as Tourbus's conversations, then XREVRANGE.
    per_group = max(1, sent // groups)
    filler = pubs[0]
    batch = b"".join(resp("XADD", "stream%d" % g, "*", "from", str(m), "text", TEXTS[m % len(TEXTS)])
                     for g in range(groups) for m in range(per_group))
    filler.send(batch)
    wait_all(sel, [filler], 2 * groups * per_group, timeout=60)  # each reply is $N and the id
    history_pubs = pubs[:connections]
    rask = lambda c: resp("XREVRANGE", "stream%d" % group_of[c.user], "+", "-", "COUNT", "20")  # noqa: E731

    pending = {c: [] for c in history_pubs}

    def stream_answer(conn, line):
        """An XREVRANGE reply is whole when its top-level array has all its entries, each of
        12 lines: *2, $n, id, *4, $4, from, $n, n, $4, text, $n, text."""
        lines = pending[conn]
        lines.append(line)
        if not (lines[0].startswith(b"*") and len(lines) == 1 + 12 * int(lines[0][1:])):
            return None
        pending[conn] = []
        return True

    redis_history_rate, _, _ = closed_loop(sel, history_pubs, rask, stream_answer)

    ms = lambda v: "%.2f" % (v * 1000)  # noqa: E731
    print(json.dumps({
        "users": groups * size, "groups": groups, "rate": rate, "seconds": seconds, "connections": len(history_conns),
        "sent": sent, "answered": len(answers), "errors": errors, "expected": expected, "pushes": len(pushes),
        "answer_p50_ms": ms(percentile(answers, 50)), "answer_p99_ms": ms(percentile(answers, 99)),
        "push_p50_ms": ms(percentile(pushes, 50)), "push_p99_ms": ms(percentile(pushes, 99)), "push_max_ms": ms(max(pushes or [float("nan")])),
        "redis_expected": redis_expected, "redis_delivered": len(delivered),
        "redis_p50_ms": ms(percentile(delivered, 50)), "redis_p99_ms": ms(percentile(delivered, 99)),
        "history_per_s": "%.0f" % history_rate, "history_p99_ms": ms(percentile(history_times, 99)), "history_errors": history_errors,
        "redis_history_per_s": "%.0f" % redis_history_rate, "history_ratio": history_rate / max(1.0, redis_history_rate),
    }))


if __name__ == "__main__":
    run(sys.argv[1:])
