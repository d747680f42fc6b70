# Helper of bench/connections (standard library only): holds many idle signed-in RESP
# connections to a gateway from many loopback source addresses, in several processes.
#
#   connections.py run PORT GATEWAY_PID COUNT PROCESSES PER_ADDRESS
#       makes one account per source address (auth.register, then auth.login, each once per
#       address: within the sign-up and login rates), then has PROCESSES children open COUNT
#       connections, PER_ADDRESS from each of 127.0.0.2 and up, each signed in with
#       `AUTH <token>`; prints the gateway's RSS and threads before and after, then sends PING on
#       every connection at once and prints the time until every PONG is back.
#   connections.py hold PORT ADDRESS=TOKEN:COUNT ...
#       a child: opens and signs in its connections, says "ready N", waits for "go" on
#       standard input, pings them all, says "done SECONDS", waits for "quit".
import os
import re
import selectors
import socket
import subprocess
import sys
import time

LIMIT_SECONDS = 300  # every wait is bounded


def fail(message):
    print("connections.py: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def proc_status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return int(fields["VmRSS"][0]), int(fields["Threads"][0])


def cpu_seconds(pid):
    """User and system CPU time the process has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def command(sock, *words):
    """One RESP command on a blocking socket; its reply line and bulk body (if any)."""
    payload = "*%d\r\n" % len(words) + "".join("$%d\r\n%s\r\n" % (len(w.encode()), w) for w in words)
    sock.sendall(payload.encode())
    data = b""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        data += sock.recv(65536)
        if data.startswith(b"$") and b"\r\n" in data:
            head, _, rest = data.partition(b"\r\n")
            size = int(head[1:])
            if size < 0 or len(rest) >= size + 2:
                return head.decode(), rest[:size].decode("utf-8", "replace")
        elif b"\r\n" in data:
            return data.split(b"\r\n")[0].decode(), ""
    fail("no reply to %s" % words[0])


def account(port, address, index):
    """Registers (once) and logs in one account from `address`: its token."""
    sock = socket.socket()
    sock.settimeout(30)
    sock.bind((address, 0))
    sock.connect(("127.0.0.1", port))
    user, password = "holder%d" % index, "Holder-Pass-%d" % index
    head, body = command(sock, "auth.register", "username", user, "email", user + "@example.org", "name", user,
                         "password", password)
    if head.startswith("-") and "already" not in head:
        fail("auth.register from %s: %s" % (address, head))
    head, body = command(sock, "auth.login", "username", user, "password", password)
    match = re.search(r'"token":"([^"]+)"', body)
    if not match:
        fail("auth.login from %s: %s %s" % (address, head, body))
    sock.close()
    return match.group(1)


def answered(selector, replies, wanted, what):
    """Reads what arrives within 1 s on the selector's sockets; each whose reply line is complete
    must be `wanted` and is unregistered. How many were."""
    done = 0
    for key, _ in selector.select(timeout=1):
        sock = key.fileobj
        data = sock.recv(4096)
        if not data:
            fail("the gateway closed a connection before answering %s" % what)
        replies[sock] += data
        if replies[sock].endswith(b"\r\n"):
            if replies[sock] != wanted:
                fail("%s answered %r" % (what, replies[sock]))
            selector.unregister(sock)
            done += 1
    return done


def hold(argv):
    port = int(argv[0])
    plan = []
    for item in argv[1:]:
        address, _, rest = item.partition("=")
        token, _, count = rest.rpartition(":")
        plan.append((address, token, int(count)))
    selector = selectors.DefaultSelector()
    socks = []
    expect = {}
    # Open in waves of at most 200 connections waiting for their +OK.
    pending = [(address, token) for address, token, count in plan for _ in range(count)]
    waiting = 0
    started = time.monotonic()
    while pending or waiting:
        if time.monotonic() - started > LIMIT_SECONDS:
            fail("connections not signed in within %d s" % LIMIT_SECONDS)
        while pending and waiting < 200:
            address, token = pending.pop()
            sock = socket.socket()
            sock.bind((address, 0))
            sock.connect(("127.0.0.1", port))
            sock.setblocking(False)
            sock.sendall(("AUTH %s\r\n" % token).encode())
            socks.append(sock)
            expect[sock] = b""
            selector.register(sock, selectors.EVENT_READ)
            waiting += 1
        waiting -= answered(selector, expect, b"+OK\r\n", "AUTH")
    print("ready %d" % len(socks), flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    begin = time.monotonic()
    for sock in socks:
        sock.sendall(b"PING\r\n")
        expect[sock] = b""
        selector.register(sock, selectors.EVENT_READ)
    left = len(socks)
    while left:
        if time.monotonic() - begin > LIMIT_SECONDS:
            fail("%d PINGs unanswered after %d s" % (left, LIMIT_SECONDS))
        left -= answered(selector, expect, b"+PONG\r\n", "PING")
    print("done %.3f" % (time.monotonic() - begin), flush=True)
    sys.stdin.readline()


def run(argv):
    port, gateway_pid, count, processes, per_address = (int(a) for a in argv[:5])
    addresses = ["127.0.%d.%d" % ((i + 2) // 254, (i + 2) % 254 or 254) for i in range((count + per_address - 1) // per_address)]
    rss0, threads0 = proc_status(gateway_pid)
    t0 = time.monotonic()
    tokens = [account(port, address, i) for i, address in enumerate(addresses)]
    print("accounts: %d made and logged in (one per source address) in %.1f s" % (len(tokens), time.monotonic() - t0))
    rss1, threads1 = proc_status(gateway_pid)
    plans = [[] for _ in range(processes)]
    left = count
    for i, (address, token) in enumerate(zip(addresses, tokens)):
        n = min(per_address, left)
        left -= n
        plans[i % processes].append("%s=%s:%d" % (address, token, n))
    t0 = time.monotonic()
    children = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "hold", str(port)] + plan,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for plan in plans if plan]
    opened = 0
    for child in children:
        line = child.stdout.readline().split()
        if not line or line[0] != "ready":
            fail("a client process failed")
        opened += int(line[1])
    opened_s = time.monotonic() - t0
    time.sleep(3)  # let the gateway settle
    rss2, threads2 = proc_status(gateway_pid)
    print("opened and signed in %d connections from %d source addresses (%d processes) in %.1f s"
          % (opened, len(addresses), len(children), opened_s))
    print("%-44s %10s %8s" % ("gateway", "RSS KiB", "threads"))
    print("%-44s %10d %8d" % ("at start", rss0, threads0))
    print("%-44s %10d %8d" % ("after the sign-ins (no connection held)", rss1, threads1))
    print("%-44s %10d %8d" % ("holding %d idle signed-in connections" % opened, rss2, threads2))
    print("RSS per connection: %.1f KiB (from after the sign-ins; goal <= 10 KB)" % ((rss2 - rss1) / opened))
    print("threads per connection: %.3f" % ((threads2 - threads1) / opened))
    cpu0, load = cpu_seconds(gateway_pid), load_average()
    t0 = time.monotonic()
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    slowest = 0.0
    for child in children:
        line = child.stdout.readline().split()
        if not line or line[0] != "done":
            fail("a client process failed while pinging")
        slowest = max(slowest, float(line[1]))
    total = time.monotonic() - t0
    cpu = cpu_seconds(gateway_pid) - cpu0
    rss3, threads3 = proc_status(gateway_pid)
    print("PING on every one of %d connections: all PONGs back in %.3f s (slowest process %.3f s; goal <= 2 s)"
          % (opened, total, slowest))
    print("  gateway CPU time for them: %.2f s (%.1f us a PING); load average before: %s on %d cores"
          % (cpu, cpu / opened * 1e6, load, os.cpu_count()))
    print("after the PINGs: RSS %d KiB, %d threads" % (rss3, threads3))
    # The connections stay open (the caller measures more) until "quit" on standard input.
    print("holding", flush=True)
    sys.stdin.readline()
    for child in children:
        child.stdin.write("quit\n")
        child.stdin.flush()
    for child in children:
        child.wait(timeout=60)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("run", "hold"):
        fail("usage: connections.py run|hold ...")
    {"run": run, "hold": hold}[sys.argv[1]](sys.argv[2:])
