# The route benchmark's client (bench/routes): waits until search has built its routes from
# the imported extract, then times directions.get and directions.matrix through the gateway,
# one JSON-RPC line at a time on one connection. Points are random street nodes of the extract
# (nodes of highway ways), drawn with a fixed seed, the same for every mode.
#
#   routes_client.py PORT EXTRACT.osm PAIRS LOG     (LOG: the suite's log, where search says "routes built")
import json
import random
import re
import socket
import sys
import time


class Line:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")
        self.next = 0

    def call(self, method, params):
        self.next += 1
        self.sock.sendall((json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}) + "\n").encode())
        reply = json.loads(self.file.readline())
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"]))
        return reply["result"]


def street_nodes(path):
    """Positions of nodes that highway ways list, read with regular expressions (one pass)."""
    positions, wanted, way, highway = {}, set(), [], False
    node = re.compile(r'<node id="(-?\d+)"[^>]*?lat="([-0-9.]+)" lon="([-0-9.]+)"')
    with open(path, encoding="utf-8") as f:
        for line in f:
            if "<node" in line:
                m = node.search(line)
                if m:
                    positions[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
            elif "<way" in line:
                way, highway = [], False
            elif "<nd " in line:
                way.append(int(re.search(r'ref="(-?\d+)"', line).group(1)))
            elif 'k="highway"' in line:
                highway = True
            elif "</way>" in line and highway:
                wanted.update(way)
    return [positions[n] for n in sorted(wanted) if n in positions]


def pick(q, values):
    return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else None


def main(argv):
    port, path, pairs, log_path = int(argv[0]), argv[1], int(argv[2]), argv[3]
    points = street_nodes(path)
    # Connected once the extract is read: the gateway closes a connection idle for long.
    line = Line(port)
    rng = random.Random(33)
    probe = {"from": {"lat": points[0][0], "lon": points[0][1]}, "to": {"lat": points[1][0], "lon": points[1][1]}, "mode": "driving"}
    started = time.time()
    while line.call("directions.get", probe)["status"] == "estimate":
        if time.time() - started > 1200:
            sys.exit("search did not route within 20 minutes")
        time.sleep(0.5)
    print("  routes answered %.1f s after the import was done (search fetched the streets and built three graphs)" % (time.time() - started))
    built = [l for l in open(log_path, encoding="utf-8", errors="replace") if "routes built" in l]
    if built:
        print("  search log:", built[-1].strip()[:300])
    for mode in ("walking", "bicycling", "driving"):
        times, statuses = [], {}
        for _ in range(pairs):
            a, b = rng.choice(points), rng.choice(points)
            params = {"from": {"lat": a[0], "lon": a[1]}, "to": {"lat": b[0], "lon": b[1]}, "mode": mode}
            t0 = time.perf_counter()
            answer = line.call("directions.get", params)
            ms = (time.perf_counter() - t0) * 1000
            statuses[answer["status"]] = statuses.get(answer["status"], 0) + 1
            if answer["status"] == "routed":
                times.append(ms)
        times.sort()
        matrix = []
        for _ in range(5):
            sources = [{"lat": p[0], "lon": p[1]} for p in (rng.choice(points) for _ in range(25))]
            targets = [{"lat": p[0], "lon": p[1]} for p in (rng.choice(points) for _ in range(25))]
            t0 = time.perf_counter()
            line.call("directions.matrix", {"sources": sources, "destinations": targets, "mode": mode})
            matrix.append((time.perf_counter() - t0) * 1000)
        matrix.sort()
        print("  tourbus %-9s directions.get %s: p50 %s ms p99 %s ms max %s ms; directions.matrix 25 x 25: median %s ms, max %s ms" % (
            mode, statuses, pick(0.5, times), pick(0.99, times), pick(1.0, times), pick(0.5, matrix), pick(1.0, matrix)))


if __name__ == "__main__":
    main(sys.argv[1:])
