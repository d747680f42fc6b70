"""Attack: invalid UTF-8, overlong forms and lone surrogates over RESP in a note, a list
name and a pin title; and a RESP bulk string far past the bounds."""
import random, socket
import tb

u = tb.user("resp%d" % random.randint(0, 10**6))

def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

s = socket.create_connection(("127.0.0.1", tb.PORT), timeout=10)
def ask(*args):
    s.sendall(resp(*args))
    data = b""
    while not data.endswith(b"\r\n"):
        data += s.recv(65536)
    return data[:200]
print("AUTH:", ask("AUTH", u.token))
for label, value in [("invalid byte 0xff", b"ab\xffcd"), ("overlong slash", b"\xc0\xaf"), ("lone surrogate", b"\xed\xa0\x80"),
                     ("truncated 3-byte", b"\xe2\x82"), ("NUL", b"a\x00b")]:
    print(f"note {label:20}", ask("favorites.add", "place_id", "5", "note", value))
    print(f"list {label:20}", ask("favorites.lists.create", "name", value))
    print(f"pin  {label:20}", ask("pins.add", "lat", "-33.8", "lon", "151.2", "title", value))
print("note 1 MB:", ask("favorites.add", "place_id", "5", "note", b"x" * (1 << 20)))
print("still alive:", ask("PING"))
