"""Drives a Tourbus gateway's WebSocket with PyPI `websockets`, an independent RFC 6455 client.

Run by HTTPSuiteTests with the interpreter of .build/pyenv (deploy/local/test makes it):

    python websockets_client.py '{"base":"http://127.0.0.1:7700","token":"…","sender":{"token":"…"},"to":"user:2"}'

`base` may be https (through a TLS proxy: the WebSocket is then wss, and the proxy's
certificate is not checked, as a test's is self-signed).

Signs in over the WebSocket as a browser must (auth.resume with the token, first), subscribes
to chat.message, has `sender` send a chat message over HTTP, and waits for the push. Prints
one JSON object of every step's answer, or the error it raised, and exits 0 whatever the
gateway did; the test asserts on it. Every wait is bounded.
"""

import base64
import http.client
import json
import os
import ssl
import sys
import urllib.parse
import urllib.request

from websockets.sync.client import connect

plan = json.loads(sys.argv[1])
base = plan["base"]
uri = "ws" + base[len("http"):] + "/rpc"
tls = ssl._create_unverified_context() if base.startswith("https:") else None
steps = {}


def call(ws, request):
    ws.send(json.dumps(request))
    return json.loads(ws.recv(timeout=5))


def step(name, action):
    # Each step named on stderr as it starts: a run killed at its bound shows where it stalled.
    print("step " + name, file=sys.stderr, flush=True)
    try:
        steps[name] = action()
    except Exception as error:  # noqa: BLE001 - the summary says what failed
        steps[name] = {"error": "%s: %s" % (type(error).__name__, error)}


def session():
    # compression is offered (the library's default) and must be declined.
    with connect(uri, open_timeout=5, close_timeout=5, proxy=None, ssl=tls) as ws:
        steps["extensions"] = [str(e) for e in (ws.response.headers.get_all("Sec-WebSocket-Extensions"))]
        step("ping", lambda: call(ws, {"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        step("resume", lambda: call(ws, {"jsonrpc": "2.0", "id": 2, "method": "auth.resume", "params": {"token": plan["token"]}}))
        step("subscribe", lambda: call(ws, {"jsonrpc": "2.0", "id": 3, "method": "subscribe", "params": {"topics": ["chat.message"]}}))
        # A message in fragments, and a ping of the protocol's own.
        def fragmented():
            ws.send(iter(['{"jsonrpc":"2.0",', '"id":4,"method":', '"ping"}']))
            return json.loads(ws.recv(timeout=5))
        step("fragmented", fragmented)
        step("pong", lambda: ws.ping(b"hello").wait(5))

        def chat():
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "chat.send",
                               "params": {"to": plan["to"], "text": "over a WebSocket", "client_msg_id": "ws-1"}}).encode()
            request = urllib.request.Request(base + "/rpc", data=body, method="POST",
                                             headers={"Content-Type": "application/json", "Authorization": "Bearer " + plan["sender"]["token"]})
            with urllib.request.urlopen(request, timeout=5, context=tls) as response:
                sent = json.loads(response.read())
            return {"sent": sent, "push": json.loads(ws.recv(timeout=5))}
        step("chat", chat)
    steps["close_code"] = ws.close_code


def foreign_origin():
    # The upgrade asked plainly over HTTP(S), not through the library: a refused handshake
    # leaves the keep-alive connection open, and the library's close of a TLS socket through
    # the proxy once waited out the test's bound (CI, 2026-12-02: stalled in this step).
    parts = urllib.parse.urlsplit(base)
    host, port = parts.hostname, parts.port
    if tls is not None:
        conn = http.client.HTTPSConnection(host, port, context=tls, timeout=5)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request("GET", "/rpc", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), "Origin": "https://evil.example"})
        response = conn.getresponse()
        response.read()
        return {"opened": True} if response.status == 101 else {"status": response.status}
    finally:
        conn.close()


step("session", session)
step("foreign_origin", foreign_origin)
import websockets  # noqa: E402 - only for its version
print(json.dumps({"library": websockets.__version__, "steps": steps}))
