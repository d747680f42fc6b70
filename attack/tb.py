"""A small JSON-RPC line client of the Tourbus gateway, for the attack scripts."""
import json, os, socket, itertools

PORT = int(os.environ.get("TB_PORT", "7790"))
_ids = itertools.count(1)


class Conn:
    """One gateway connection speaking JSON-RPC lines."""

    def __init__(self, port=PORT, timeout=10, source=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                          source_address=(source, 0) if source else None)
        self.buf = b""

    def send_raw(self, data: bytes):
        self.s.sendall(data)

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None, raw_params=None):
        rid = next(_ids)
        p = raw_params if raw_params is not None else json.dumps(params or {})
        self.send_raw(('{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}\n' % (rid, method, p)).encode())
        while True:
            msg = self.line()
            if msg.get("id") in (rid, None) and "method" not in msg:
                return msg
            # pushes and notifications are skipped here

    def ok(self, method, params=None):
        r = self.call(method, params)
        if "error" in r:
            raise RuntimeError(f"{method} {params}: {r['error']}")
        return r["result"]


def user(name, port=PORT, source=None):
    """A signed-in connection of user `name` (registered if new), from address `source`."""
    c = Conn(port, source=source)
    pw = "Pass-word-1"
    c.call("auth.register", {"username": name, "email": f"{name}@example.org", "name": name, "password": pw})
    r = c.call("auth.login", {"username": name, "password": pw})
    if "error" in r:
        raise RuntimeError(r)
    c.token = r["result"]["token"]
    c.user_id = r["result"].get("user_id")
    return c
