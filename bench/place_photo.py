"""Times catalog.photo.add (see bench/place-photo): ./bench/place-photo runs it."""
import base64, io, json, socket, statistics, sys, time

from PIL import Image

port, username, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def photo(width, height, progressive=False):
    """Noise under a gradient: detail a JPEG must spend bytes on, as a photo's."""
    noise = Image.effect_noise((width // 4, height // 4), 60).convert("RGB").resize((width, height), Image.BILINEAR)
    gradient = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    Image.blend(noise, gradient, 0.5).save(out, "JPEG", quality=90, progressive=progressive)
    return out.getvalue()


connection = socket.create_connection(("127.0.0.1", port), timeout=30)
stream = connection.makefile("rwb")
counter = 0


def call(method, params):
    global counter
    counter += 1
    stream.write((json.dumps({"jsonrpc": "2.0", "id": counter, "method": method, "params": params}) + "\n").encode())
    stream.flush()
    reply = json.loads(stream.readline())
    if "error" in reply:
        raise SystemExit("%s: %s" % (method, reply["error"]))
    return reply["result"]


token = call("auth.login", {"username": username, "password": password})["token"]
call("auth.resume", {"token": token})
place = call("catalog.create", {"name": "Timing", "category": "museum", "lat": -33.87, "lon": 151.21})["id"]
print("%-40s %10s %10s %8s" % ("photo", "bytes", "median ms", "max ms"))
for name, (width, height, progressive) in [("12 MP baseline", (4000, 3000, False)), ("8 MP progressive", (3264, 2448, True)),
                                           ("1.9 MP baseline", (1600, 1200, False))]:
    jpeg = photo(width, height, progressive)
    times = []
    for _ in range(5):
        upload = call("tours.map.upload.begin", {})["upload_id"]
        for offset in range(0, len(jpeg), 524288):
            chunk = base64.b64encode(jpeg[offset:offset + 524288]).decode()
            call("tours.map.upload.append", {"upload_id": upload, "offset": offset, "chunk": chunk})
        call("tours.map.upload.commit", {"upload_id": upload})
        started = time.monotonic()
        call("catalog.photo.add", {"place_id": place, "upload_id": upload})
        times.append((time.monotonic() - started) * 1000)
    print("%-40s %10d %10.0f %8.0f" % ("%s %dx%d" % (name, width, height), len(jpeg), statistics.median(times), max(times)))
