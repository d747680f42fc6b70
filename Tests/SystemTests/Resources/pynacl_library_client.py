"""An independent client of the library: PyNaCl (libsodium's Python binding) makes the
device keys and opens and verifies packages, talking to the gateway in JSON-RPC lines and,
with redis-py, in RESP. Prints one JSON summary line; the Swift test checks it.

argv[1]: a JSON plan {"host", "port", "tour_id", "users": [{"username", "password"}, ...]}.
"""
import base64
import hashlib
import json
import socket
import sys
import time

import nacl.bindings
import nacl.exceptions
import nacl.public
import nacl.signing
import redis

plan = json.loads(sys.argv[1])
summary = {"steps": {}}
steps = summary["steps"]


class Line:
    """One JSON-RPC connection to the gateway."""

    def __init__(self):
        self.sock = socket.create_connection((plan["host"], plan["port"]), timeout=20)
        self.buffer = b""
        self.next_id = 0

    def call(self, method, params=None):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}) + "\n"
        self.sock.sendall(line.encode())
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("gateway closed the connection")
            self.buffer += chunk
        reply, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(reply)


def error_of(reply):
    error = reply.get("error")
    if error is None:
        return None
    data = error.get("data") or {}
    return {"code": data.get("code"), "field": data.get("field"), "message": error.get("message")}


def signed_bytes(manifest, digest_hex):
    """Protocols/library.md, *What is signed*: six lines, each ending in a line feed."""
    return ("tourbus.package.v1\n" f"digest:{digest_hex}\n" f"user:{manifest['user_id']}\n" f"device:{manifest['device_id']}\n"
            f"tour:{manifest['tour_id']}\n" f"issued_at:{manifest['issued_at']}\n").encode()


def verifies(verify_key, manifest, sealed):
    digest = hashlib.blake2b(sealed, digest_size=32).hexdigest()
    try:
        verify_key.verify(signed_bytes(manifest, digest), base64.b64decode(manifest["signature"]))
        return True
    except nacl.exceptions.BadSignatureError:
        return False


def opens(private_key, sealed):
    try:
        return nacl.public.SealedBox(private_key).decrypt(sealed)
    except nacl.exceptions.CryptoError:
        return None


def fetch(line, manifest):
    sealed = b""
    for piece in range(manifest["pieces"]):
        reply = line.call("library.package", {"package_id": manifest["package_id"], "piece": piece})
        sealed += base64.b64decode(reply["result"]["data"])
    return sealed


def add_when_known(line, device_id, want_error=None, seconds=15):
    """library.add, again until the catalog has learnt (or forgotten) the device from social."""
    deadline = time.time() + seconds
    while True:
        reply = line.call("library.add", {"tour_id": plan["tour_id"], "device_id": device_id})
        error = error_of(reply)
        done = (error is None) if want_error is None else (error is not None and error["code"] == want_error)
        if done or time.time() > deadline:
            return reply
        time.sleep(0.05)


ann, ben = plan["users"]
line = Line()
for user in plan["users"]:
    line.call("auth.register", {"username": user["username"], "email": user["username"] + "@example.org", "name": user["username"],
                                "password": user["password"]})
steps["login"] = error_of(line.call("auth.login", {"username": ann["username"], "password": ann["password"]}))

phone = nacl.public.PrivateKey.generate()
other = nacl.public.PrivateKey.generate()
phone_key = base64.b64encode(bytes(phone.public_key)).decode()
steps["register"] = line.call("devices.register", {"device_id": "py-phone", "public_key": phone_key}).get("result")
steps["register_again"] = line.call("devices.register", {"device_id": "py-phone", "public_key": phone_key}).get("result")
steps["register_other_key"] = error_of(line.call("devices.register", {"device_id": "py-phone",
                                                                       "public_key": base64.b64encode(bytes(other.public_key)).decode()}))
steps["bad_keys"] = [error_of(line.call("devices.register", {"device_id": "bad", "public_key": key})) for key in [
    base64.b64encode(bytes(32)).decode(), base64.b64encode(bytes(31)).decode(), "!" * 44, "A" * 5000]]

anyone = Line()
server_key = anyone.call("library.key")["result"]["public_key"]
verify_key = nacl.signing.VerifyKey(base64.b64decode(server_key))

added = add_when_known(line, "py-phone")
manifest = added.get("result")
steps["add"] = manifest if manifest is None else {k: v for k, v in manifest.items() if k != "signature"}
if manifest is None:
    steps["add_error"] = error_of(added)
    print(json.dumps(summary))
    sys.exit(0)
sealed = fetch(line, manifest)
steps["bytes_match"] = len(sealed) == manifest["bytes"]
steps["digest_match"] = hashlib.blake2b(sealed, digest_size=32).hexdigest() == manifest["digest"]
steps["signing_key_match"] = manifest["signing_key"] == server_key
steps["verified"] = verifies(verify_key, manifest, sealed)
plain = opens(phone, sealed)
steps["opened"] = plain is not None
if plain is not None:
    content = json.loads(plain)
    steps["content"] = {"format": content["format"], "user_id": content["user_id"], "device_id": content["device_id"],
                        "tour_id": content["tour_id"], "issued_at_match": content["issued_at"] == manifest["issued_at"],
                        "places": [p["id"] for p in content["places"]], "tiles": len(content["tiles"]),
                        "tour_name": content["tour"]["name"], "tiles_complete": content["tiles_complete"],
                        "name_i18n": content["places"][0].get("name_i18n")}
steps["other_device_opens"] = opens(other, sealed) is not None
tampered = bytearray(sealed)
tampered[len(tampered) // 2] ^= 0x01
tampered = bytes(tampered)
steps["tampered_verifies"] = verifies(verify_key, manifest, tampered)
steps["tampered_opens"] = opens(phone, tampered) is not None
forged = dict(manifest, user_id=manifest["user_id"] + 1)
steps["forged_user_verifies"] = verifies(verify_key, forged, sealed)

# RESP, with redis-py signed in as Ann: the same first piece, and a package whole.
client = redis.Redis(host=plan["host"], port=plan["port"], username=ann["username"], password=ann["password"], protocol=2,
                     socket_timeout=20, decode_responses=False)
piece = json.loads(client.execute_command("library.package", "package_id", manifest["package_id"], "piece", "0"))
steps["resp_piece_match"] = base64.b64decode(piece["data"]) == sealed[:manifest["piece_bytes"]]
resp_manifest = json.loads(client.execute_command("library.add", "tour_id", str(plan["tour_id"]), "device_id", "py-phone"))
resp_sealed = b"".join(base64.b64decode(json.loads(client.execute_command(
    "library.package", "package_id", resp_manifest["package_id"], "piece", str(i)))["data"]) for i in range(resp_manifest["pieces"]))
steps["resp_verified"] = verifies(verify_key, resp_manifest, resp_sealed)
steps["resp_opened"] = opens(phone, resp_sealed) is not None

# Ben, from the attacker's side: Ann's device, Ann's package.
intruder = Line()
intruder.call("auth.login", {"username": ben["username"], "password": ben["password"]})
steps["intruder_add"] = error_of(intruder.call("library.add", {"tour_id": plan["tour_id"], "device_id": "py-phone"}))
steps["intruder_piece"] = error_of(intruder.call("library.package", {"package_id": manifest["package_id"], "piece": 0}))
steps["intruder_revoke"] = error_of(intruder.call("devices.revoke", {"device_id": "py-phone"}))
steps["anonymous_add"] = error_of(anyone.call("library.add", {"tour_id": plan["tour_id"], "device_id": "py-phone"}))

# Revoked, the device gets no new package.
steps["revoke"] = line.call("devices.revoke", {"device_id": "py-phone"}).get("result")
steps["after_revoke"] = error_of(add_when_known(line, "py-phone", want_error="not_found"))
steps["list"] = line.call("library.list").get("result")
print(json.dumps(summary))
