"""One user's long list paged by distance, straight to the favorites service (bench/favorites-long).

Usage: favorites_long.py CATALOG_RPC FAVORITES_RPC ITEMS CALLS
Creates ITEMS places in a 1 degree square grid west of Sydney, saves them all for one user,
then times CALLS `favorites.list sort=distance limit=20` one at a time, and prints p50 and p90.
"""
import json
import statistics
import sys
import time

import zmq


def requests(sock, batch, window=64, timeout=300):
    """Sends (type, body, auth) requests, `window` in flight; fails on any refusal."""
    sent = pending = 0
    end = time.monotonic() + timeout
    while (sent < len(batch) or pending) and time.monotonic() < end:
        while sent < len(batch) and pending < window:
            type_, body, auth = batch[sent]
            sock.send(json.dumps({"v": 1, "id": "r%d" % sent, "type": type_, "auth": auth, "deadline_ms": 30000, "body": body}).encode())
            sent += 1
            pending += 1
        if not sock.poll(5000):
            sys.exit("no reply in 5 s")
        reply = json.loads(sock.recv_multipart()[0])
        pending -= 1
        if not reply.get("ok"):
            sys.exit("refused: %s" % reply.get("error"))
    if sent < len(batch) or pending:
        sys.exit("requests unanswered after %d s" % timeout)


def main():
    catalog_rpc, favorites_rpc, items, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ctx = zmq.Context()
    catalog, favorites = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    for sock, endpoint in ((catalog, catalog_rpc), (favorites, favorites_rpc)):
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
    side = max(1, int(items ** 0.5))
    requests(catalog, [("catalog.create", {"name": "P%d" % i, "category": "cafe", "lat": -33.5 - (i % side) / side,
                                           "lon": 150.2 + (i // side) / side}, None) for i in range(items)])
    auth = {"user_id": "7", "role": "user"}
    requests(favorites, [("favorites.add", {"place_id": i + 1}, auth) for i in range(items)], window=2)
    page = ("favorites.list", {"sort": "distance", "near": {"lat": -33.87, "lon": 151.21}, "limit": 20}, auth)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        requests(favorites, [page], window=1)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print("favorites.list sort=distance limit=20 on a list of %d: p50 %.2f ms, p90 %.2f ms (%d calls, one at a time)" % (
        items, statistics.median(times), times[int(len(times) * 0.9) - 1], calls))


if __name__ == "__main__":
    main()
