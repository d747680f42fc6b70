"""A victim's catalog.get while 80 addresses flood costly catalog.list pages through a gateway:
in front of one catalog (16 in flight to it, the default window), and in front of the catalog
replicated three ways on loopback (the gateway follows the leader, 48 in flight to it). Each
setup's victim figures before the flood and during it, in the same run.

    ./bench/replica-fairness [places] [seconds]   (runs: python replica_fairness.py WORK BIN CITIES PLACES [SECONDS])
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

WORK, BIN, CITIES, PLACES = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
SECONDS = int(sys.argv[5]) if len(sys.argv) > 5 else 8
HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKERS = 80
VICTIM_REQUESTS = 200
started = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name, args, tag):
    ready = "%s/%s.ready" % (WORK, tag)
    process = subprocess.Popen(["%s/tourbus-%s" % (BIN, name), "--ready-file", ready, "--log-level", "warn"] + args,
                               stdout=subprocess.DEVNULL, stderr=open("%s/%s.log" % (WORK, tag), "w"))
    started.append(process)
    return ready


def await_ready(ready, seconds=90):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if os.path.exists(ready) and os.path.getsize(ready) > 0:
            return
        time.sleep(0.1)
    raise RuntimeError("%s not ready in %d s" % (ready, seconds))


class Line:
    """One JSON-RPC connection to a gateway from a given source address."""

    def __init__(self, port, source):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        self.file = self.sock.makefile("rb")
        self.n = 0

    def call(self, method, params):
        self.n += 1
        self.sock.sendall((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        return json.loads(self.file.readline())


def victim(port):
    """p50 and p99 ms of catalog.get id 5, one at a time from an address of its own."""
    line = Line(port, "127.2.0.1")
    times = []
    for _ in range(VICTIM_REQUESTS):
        began = time.monotonic()
        reply = line.call("catalog.get", {"id": 5})
        if "result" not in reply:
            raise RuntimeError("victim: %s" % reply)
        times.append((time.monotonic() - began) * 1000)
    times.sort()
    return times[len(times) // 2], times[len(times) * 99 // 100]


def flood(port, stop, counts, index):
    line = Line(port, "127.1.0.%d" % (index + 1))
    while not stop.is_set():
        line.call("catalog.list", {"limit": 100})
        counts[index] += 1


def measure(name, port):
    before = victim(port)
    stop, counts = threading.Event(), [0] * ATTACKERS
    threads = [threading.Thread(target=flood, args=(port, stop, counts, i), daemon=True) for i in range(ATTACKERS)]
    for t in threads:
        t.start()
    time.sleep(2)
    during = victim(port)
    time.sleep(max(0, SECONDS - 2))
    stop.set()
    for t in threads:
        t.join(15)
    print("  %s: victim catalog.get p50 %.2f ms, p99 %.2f ms before; during the flood (%d addresses, %d catalog.list pages of 100) "
          "p50 %.2f ms, p99 %.2f ms: p50 x%.1f"
          % (name, before[0], before[1], ATTACKERS, sum(counts), during[0], during[1], during[0] / before[0]), flush=True)


def main():
    raft = ["127.0.0.1:%d" % free_port() for _ in range(3)]
    rpc = ["tcp://127.0.0.1:%d" % free_port() for _ in range(3)]
    single = "tcp://127.0.0.1:%d" % free_port()
    readies = [start("catalog", ["--data-dir", "%s/replica-%d" % (WORK, n), "--bind", rpc[n - 1], "--raft", ",".join(raft), "--replica", str(n)],
                     "replica-%d" % n) for n in (1, 2, 3)]
    readies.append(start("catalog", ["--data-dir", WORK + "/single", "--bind", single], "single"))
    for ready in readies:
        await_ready(ready)
    for endpoint in [single] + rpc:
        out = subprocess.run([sys.executable, HERE + "/goals.py", "load", endpoint, CITIES, str(PLACES), WORK + "/load.resp"],
                             capture_output=True, text=True, timeout=1800)
        loaded = out.returncode == 0 and int((out.stdout.split() or ["0"])[0]) == PLACES
        if endpoint == single and not loaded:
            raise RuntimeError("loading places: %s" % out.stderr[-400:])
        if endpoint != single and loaded:
            break
    else:
        raise RuntimeError("no replica took the places")
    gateways = {"one catalog, 16 in flight": free_port(), "three replicas, 48 in flight to the leader": free_port()}
    peers = [["--peer", "catalog=" + single], ["--peer", "catalog=" + ",".join(rpc), "--peer-replicated", "catalog"]]
    for (name, port), peer in zip(gateways.items(), peers):
        await_ready(start("gateway", ["--listen", "127.0.0.1:%d" % port] + peer, "gateway-%d" % port))
    print("replica fairness: %d real places; %d attacking addresses, catalog.list pages of 100, closed loop; victim %d catalog.get"
          % (PLACES, ATTACKERS, VICTIM_REQUESTS), flush=True)
    for name, port in gateways.items():
        measure(name, port)


try:
    main()
finally:
    for process in started:
        process.kill()
