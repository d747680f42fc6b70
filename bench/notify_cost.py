# What notify's reads and reports cost where annotations are dense, straight to one service:
#
#   .build/benchenv/bin/python bench/notify_cost.py TOURBUS_NOTIFY_BINARY
#
# (1) 10,000 annotations over Sydney: a whole-world annotations.viewport page and a 50 km
# annotations.nearby page, p50 and max of 20 each; (2) on a fresh service, 10,000 annotations
# within 5 km of the city centre and a user with radius_m 5,000 reporting 6 times, 1.1 s apart
# (one report a second is the limit): the first report (which alerts 200 times) and the median
# of the others. Run it on two builds back to back to compare them.
import json, math, os, random, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmq  # noqa: E402
from notify import Bus, VALUES, percentile  # noqa: E402

FORM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "notify-form.json")


def service(binary):
    d = tempfile.mkdtemp()
    p = subprocess.Popen([binary, "--data-dir", d, "--ready-file", d + "/r.json", "--log-level", "warn", "--form", FORM], stdout=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(d + "/r.json") and os.path.getsize(d + "/r.json") > 0:
            break
        time.sleep(0.1)
    return p, Bus(zmq.Context(), json.load(open(d + "/r.json"))["rpc"][0])


def load(bus, points, now, rng):
    batch = [{"lat": la, "lon": lo, "values": VALUES[i % 4], "external_id": "e%d" % i,
              "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - rng.uniform(0, 3600)))} for i, (la, lo) in enumerate(points)]
    bus.all([("annotations.import", {"annotations": batch[i:i + 500]}, {"user_id": "1", "role": "admin"}) for i in range(0, len(batch), 500)], window=1)


def main(binary):
    rng = random.Random(1)
    p, bus = service(binary)
    load(bus, [(rng.uniform(-34, -33.7), rng.uniform(150.95, 151.3)) for _ in range(10000)], time.time(), rng)
    for name, body in [("viewport", {"south": -90, "west": -180, "north": 90, "east": 180}),
                       ("nearby", {"lat": -33.86, "lon": 151.21, "radius_m": 50000})]:
        times = []
        for _ in range(20):
            t = time.monotonic()
            bus.all([("annotations." + name, body, None)])
            times.append(time.monotonic() - t)
        print("annotations.%s over 10,000, a page of 20: p50 %.1f ms, max %.1f ms" % (name, percentile(times, 50) * 1000, max(times) * 1000))
    p.terminate(); p.wait()

    rng = random.Random(9)
    p, bus = service(binary)
    c = (-33.8688, 151.2093)

    def spot(r):
        r = r * math.sqrt(rng.random()); b = rng.uniform(0, 2 * math.pi)
        return (c[0] + math.degrees(r * math.cos(b) / 6371008.8), c[1] + math.degrees(r * math.sin(b) / 6371008.8) / math.cos(math.radians(c[0])))

    load(bus, [spot(5000) for _ in range(10000)], time.time(), rng)
    user = {"user_id": "51", "role": "user"}
    bus.all([("notify.settings.set", {"radius_m": 5000}, user)])
    times, first = [], 0
    for k in range(6):
        la, lo = spot(3000)
        t = time.monotonic()
        r = bus.all([("notify.location", {"lat": la, "lon": lo}, user)])[0]
        times.append(time.monotonic() - t)
        if k == 0:
            first = len(r["alerts"]) + (r.get("more") or 0)
        time.sleep(1.1)
    print("notify.location, radius 5 km over 10,000 within 5 km: first %.0f ms (%d alerts), then p50 %.0f ms, max %.0f ms" % (
        times[0] * 1000, first, percentile(times[1:], 50) * 1000, max(times[1:]) * 1000))
    p.terminate(); p.wait()


if __name__ == "__main__":
    main(sys.argv[1])
