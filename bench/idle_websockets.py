"""Opens COUNT idle WebSockets on a gateway (100 from each loopback address, as the
per-address cap allows), waits for its memory to settle, and prints the growth of its
resident set per connection, in KB. Bounded: every connect and handshake has a timeout.

    python3 bench/idle_websockets.py PORT COUNT GATEWAY_PID
"""

import base64
import os
import socket
import sys
import time

port, count, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def rss_kb():
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def settle():
    """The resident set once it stops moving (at most 10 s)."""
    last = rss_kb()
    for _ in range(20):
        time.sleep(0.5)
        now = rss_kb()
        if abs(now - last) < 64:
            return now
        last = now
    return last


before = settle()
sockets = []
started = time.monotonic()
for i in range(count):
    s = socket.socket()
    s.settimeout(10)
    s.bind(("127.0.0.%d" % (2 + i // 100), 0))
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /rpc HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n" % (port, key)).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("connection %d closed during the handshake: %r" % (i, answer[:200]))
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 101"):
        raise SystemExit("connection %d refused: %r" % (i, answer[:200]))
    sockets.append(s)
after = settle()
print("%.1f" % ((after - before) / count))
print("%d WebSockets in %.1f s, RSS %d -> %d KB" % (count, time.monotonic() - started, before, after), file=sys.stderr)
