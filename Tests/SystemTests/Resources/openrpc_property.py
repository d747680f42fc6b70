"""Property-based check of a running gateway against its OpenRPC document, with PyPI
hypothesis-jsonschema, as an outside tool would.

For every method of the document, 200 params generated from its params schema and 200
mutated ones (a member of the wrong type, out of its range, an unknown member, a required one
missing) are sent over JSON-RPC lines, each method on its own connection signed in as a fresh
user (an admin for admin methods). Every answer must be:
- a result that validates against the method's result schema, or an error whose `data.code`
  the method declares, with a `data.field` that is one of its params (a path into one) or a
  field the method declares for that code; never `internal`;
- for a mutated call, `invalid_argument` naming the member that was mutated.
At least 80 % of the generated (valid) calls must reach their handler: a result, or an error
other than rate_limited, unauthenticated, unavailable or deadline_exceeded. Pushes heard
meanwhile (every connection subscribes to every topic) must validate against their topic's
body schema in `x-notifications`. Prints a JSON summary; exit 1 on a fault.

usage: python openrpc_property.py DOCUMENT.json PORT ADMIN-USERNAME ADMIN-PASSWORD [EXAMPLES]
"""
import json
import os
import random
import re
import select
import socket
import sys
import time

import jsonschema
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

EXAMPLES = int(sys.argv[5]) if len(sys.argv) > 5 else 200
# The same params every run, unless TOURBUS_PROPERTY_RANDOM=1 asks for new ones.
DERANDOMIZE = os.environ.get("TOURBUS_PROPERTY_RANDOM") != "1"
# Requests written ahead of the replies read on one connection (the gateway reads at most
# 128 ahead of its replies; fewer keeps the two from waiting on each other).
WINDOW = 32
DEADLINE_S = 30
NOT_REACHED = {"rate_limited", "unauthenticated", "unavailable", "deadline_exceeded"}
# The fields the gateway itself may name, whatever the method.
ENVELOPE_FIELDS = {"token", "params", "deadline_ms"}


class Connection:
    """One JSON-RPC line connection; every read bounded by DEADLINE_S."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
        self.buffer = b""
        self.next_id = 0
        self.pushes = []

    def take(self, wait):
        """Reads what arrived within `wait` seconds; False at the end of stream."""
        ready, _, _ = select.select([self.sock], [], [], wait)
        if not ready:
            return True
        chunk = self.sock.recv(1 << 16)
        self.buffer += chunk
        return bool(chunk)

    def lines(self):
        """The whole lines read so far, as JSON."""
        *whole, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in whole if line.strip()]

    def calls(self, requests):
        """Sends (method, params) pairs, at most WINDOW ahead of the replies, reading whenever
        there is something to read (so neither side waits on the other); answers the replies
        in the order of the requests. Every wait is bounded by DEADLINE_S."""
        replies, ids, pending = {}, [], b""
        sent = 0
        last_progress = time.time()
        while len(replies) < len(requests):
            while not pending and sent < len(requests) and sent - len(replies) < WINDOW:
                method, params = requests[sent]
                self.next_id += 1
                ids.append(self.next_id)
                pending = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode() + b"\n"
                sent += 1
            readable, writable, _ = select.select([self.sock], [self.sock] if pending else [], [], 1.0)
            if writable:
                pending = pending[self.sock.send(pending):]
                last_progress = time.time()
            if readable:
                if not self.take(0):
                    raise ConnectionError("the gateway closed the connection after %d of %d replies" % (len(replies), len(requests)))
                for reply in self.lines():
                    if reply.get("method") == "push":
                        self.pushes.append(reply["params"])
                    elif "id" in reply:
                        replies[reply["id"]] = reply
                last_progress = time.time()
            if time.time() - last_progress > DEADLINE_S:
                raise TimeoutError("no reply for %d s (%d of %d answered)" % (DEADLINE_S, len(replies), len(requests)))
        return [replies[i] for i in ids]

    def call(self, method, params=None):
        reply = self.calls([(method, params or {})])[0]
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"]))
        return reply["result"]


def params_schema(method, for_generation=False):
    """The method's params as one closed object schema; for generating, without the session
    `token` (the connection's is the one to use), strings held to their byte limits."""
    properties, required = {}, []
    for param in method["params"]:
        if for_generation and param["name"] == "token" and param.get("description", "").startswith("a session token"):
            continue
        properties[param["name"]] = bounded(param["schema"]) if for_generation else param["schema"]
        if param.get("required"):
            required.append(param["name"])
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def bounded(schema):
    """A copy of `schema` whose strings, at 4 bytes a character at most, keep within x-maxBytes."""
    if isinstance(schema, list):
        return [bounded(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bounded(v) for k, v in schema.items()}
    if "x-maxBytes" in out:
        out["maxLength"] = min(out.get("maxLength", 1 << 30), out["x-maxBytes"] // 4)
        del out["x-maxBytes"]
    return out


def generate(strategy, count):
    """`count` values drawn by hypothesis (fewer when the space has fewer, then repeated)."""
    found = []

    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate], derandomize=DERANDOMIZE,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        found.append(value)

    collect()
    if not found:
        return []
    return [found[i % len(found)] for i in range(count)]


def types_of(schema):
    kinds = schema.get("type")
    if kinds is None and "anyOf" in schema:
        return {t for s in schema["anyOf"] for t in types_of(s)}
    return set(kinds if isinstance(kinds, list) else [kinds] if kinds else [])


def wrong_value(schema, rng):
    """A value of a type `schema` does not allow, or None when it allows any."""
    allowed = types_of(schema)
    if not allowed:
        return None
    if "integer" in allowed:
        allowed.add("number")  # 2.5 is still wrong for an integer, but not a clean wrong type
    candidates = [v for t, v in (("string", "not a %s" % "/".join(sorted(allowed))), ("number", 12.5),
                                 ("boolean", True), ("array", [1, "two"]), ("object", {"x": 1}))
                  if t not in allowed]
    return rng.choice(candidates) if candidates else None


def out_of_range(schema):
    """A value of the schema's type just outside one of its bounds, or None when it has none."""
    if "maximum" in schema:
        return schema["maximum"] + 1 if "integer" in types_of(schema) else schema["maximum"] * 1.5 + 1
    if "minimum" in schema:
        return schema["minimum"] - 1
    if "exclusiveMinimum" in schema:
        return schema["exclusiveMinimum"]
    if "maxLength" in schema:
        return "a" * (schema["maxLength"] + 1)
    if "minLength" in schema and schema["minLength"] > 0:
        return ""
    if "maxItems" in schema:
        return [None] * (schema["maxItems"] + 1)
    if "enum" in schema:
        return "not-one-of-" + "-".join(schema["enum"])[:40]
    return None


def mutate(valid, method, rng):
    """(params, the member mutated) for one of the four kinds of mistake, or None if none applies."""
    schema = params_schema(method)
    properties = {k: v for k, v in schema["properties"].items() if k != "token"}
    kinds = ["unknown"]
    if schema["required"]:
        kinds.append("missing")
    if any(wrong_value(s, rng) is not None for s in properties.values()):
        kinds.append("type")
    if any(out_of_range(s) is not None for s in properties.values()):
        kinds.append("range")
    kind = rng.choice(kinds)
    params = dict(valid)
    if kind == "unknown":
        name = rng.choice(["x_" + "".join(rng.choice("abcdefghij") for _ in range(5)), "lat", "lon", "Limit", "user", "ids"])
        if name in properties:
            name = "unknown_" + name
        params[name] = rng.choice([1, "a", None, [], {}])
        return params, name
    if kind == "missing":
        name = rng.choice(schema["required"])
        params.pop(name, None)
        return params, name
    if kind == "type":
        name = rng.choice([k for k, s in properties.items() if wrong_value(s, rng) is not None])
        params[name] = wrong_value(properties[name], rng)
        return params, name
    name = rng.choice([k for k, s in properties.items() if out_of_range(s) is not None])
    params[name] = out_of_range(properties[name])
    return params, name


def names_param(field, names):
    """Whether an error's field is one of the params, or a path into one (`near.lat`, `stops[2]`)."""
    return field is None or field.split(".")[0].split("[")[0] in names


def main():
    document = json.load(open(sys.argv[1]))
    port, admin_name, admin_password = int(sys.argv[2]), sys.argv[3], sys.argv[4]
    common = document.get("components", {}).get("errors", {})
    pushes = {p["name"]: p["body"] for p in document.get("x-notifications", [])}
    rng = random.Random(30)
    faults, counts = [], {"valid": 0, "reached": 0, "mutated": 0, "refused_by_name": 0}
    per_method = {}
    started = time.time()

    admin = Connection(port)
    admin.call("auth.login", {"username": admin_name, "password": admin_password})
    stamp = "%x" % int(time.time() * 1000)

    def fresh(access, n):
        """A connection signed in as a new user (made an admin for admin methods)."""
        name = "prop%s_%d" % (stamp, n)
        connection = Connection(port)
        user = connection.call("auth.register", {"username": name, "email": name + "@example.org", "name": "P " + name,
                                                 "password": "Property-Test-1"})
        if access == "admin":
            admin.call("admin.set_role", {"user_id": user["id"], "role": "admin"})
        connection.call("auth.login", {"username": name, "password": "Property-Test-1"})
        connection.call("subscribe", {"topics": sorted(pushes)})
        connection.username, connection.user_id = name, user["id"]
        return connection

    # Last, the methods whose calls can take from the others: admin.set_role may demote their
    # admins, auth.delete and auth.logout end sessions.
    methods = sorted(document["methods"], key=lambda m: m["name"] in ("admin.set_role", "auth.delete", "auth.logout"))
    # Every user first: a method's calls may demote or sign out anyone (admin.set_role, auth.logout).
    connections = {m["name"]: fresh(m.get("x-access"), i) for i, m in enumerate(methods)}
    for method in methods:
        name = method["name"]
        connection = connections[name]
        declared = {}
        for error in method["errors"]:
            if "$ref" in error:
                error = common[error["$ref"].rsplit("/", 1)[1]]
            declared.setdefault(error["data"]["code"], set()).add(error["data"].get("field"))
        param_names = {p["name"] for p in method["params"]} | ENVELOPE_FIELDS
        result_validator = None if "$ref" in method["result"]["schema"] else jsonschema.Draft7Validator(method["result"]["schema"])

        print("%.1f s: %s" % (time.time() - started, name), file=sys.stderr, flush=True)
        valid = generate(from_schema(params_schema(method, for_generation=True)), EXAMPLES)
        mutations = [m for m in (mutate(v, method, rng) for v in (valid or [{}])[:EXAMPLES]) if m]
        mutations = [mutations[i % len(mutations)] for i in range(EXAMPLES)] if mutations else []
        requests = [(name, p) for p in valid]
        if name == "auth.logout":
            # Each sign-out ends the connection's session: sign in again before each, and
            # before the mutated calls.
            login = ("auth.login", {"username": connection.username, "password": "Property-Test-1"})
            requests = [r for p in valid for r in (login, (name, p))] + [login]
        replies = connection.calls(requests + [(name, p) for p, _ in mutations])
        if name == "auth.logout":
            replies = replies[1:2 * len(valid):2] + replies[2 * len(valid) + 1:]
        stats = {"valid": len(valid), "reached": 0, "mutated": len(mutations), "refused_by_name": 0, "codes": {}}
        for index, reply in enumerate(replies):
            is_valid = index < len(valid)
            params = valid[index] if is_valid else mutations[index - len(valid)][0]
            where = "%s %s %s" % (name, "valid" if is_valid else "mutated", json.dumps(params, ensure_ascii=True)[:160])
            if "result" in reply:
                if not is_valid:
                    faults.append("%s: answered a result: %s" % (where, json.dumps(reply["result"])[:160]))
                    continue
                stats["reached"] += 1
                if result_validator:
                    for error in list(result_validator.iter_errors(reply["result"]))[:1]:
                        faults.append("%s: result: %s at %s" % (where, error.message[:160], "/".join(map(str, error.absolute_path))))
                elif not isinstance(reply["result"], dict) or "openrpc" not in reply["result"]:
                    faults.append("%s: not an OpenRPC document" % where)
                continue
            error = reply.get("error", {})
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            code, field = data.get("code"), data.get("field")
            if not is_valid:
                mutated = mutations[index - len(valid)][1]
                if code == "invalid_argument" and field is not None and names_param(field, {mutated}):
                    stats["refused_by_name"] += 1
                else:
                    faults.append("%s: answers %s on '%s' (%s), not invalid_argument on '%s'"
                                  % (where, code, field, error.get("message", "")[:120], mutated))
                continue
            if code not in declared:
                faults.append("%s: answers %s (%s), which the method does not declare" % (where, code, error.get("message", "")[:120]))
                continue
            if not names_param(field, param_names) and field not in declared[code]:
                faults.append("%s: %s names '%s', neither a param nor a declared field" % (where, code, field))
            stats["codes"][code] = stats["codes"].get(code, 0) + 1
            if code not in NOT_REACHED:
                stats["reached"] += 1
        per_method[name] = stats
        for key in counts:
            counts[key] += stats[key]

    # Pushes on purpose, of every topic two users can cause between them, each to a
    # connection that subscribed to them all: their bodies are checked with the rest.
    ann, bob = fresh("user", len(methods)), fresh("user", len(methods) + 1)
    ann_again = Connection(port)
    ann_again.call("auth.login", {"username": ann.username, "password": "Property-Test-1"})
    ann_again.call("subscribe", {"topics": sorted(pushes)})
    ann.call("favorites.lists.create", {"name": "Pushed"})
    group = ann.call("groups.create", {"name": "Pushes"})["id"]
    ann.call("groups.invite", {"group_id": group, "username": bob.username})
    bob.call("groups.accept", {"group_id": group})
    for member in (ann, bob):
        member.call("groups.sharing", {"group_id": group, "on": True})
    bob.call("groups.follow", {"group_id": group, "user_id": ann.user_id})
    ann.call("groups.position", {"lat": -33.8568, "lon": 151.2153})
    sent = ann.call("chat.send", {"to": "user:%d" % bob.user_id, "text": "Pushed", "client_msg_id": "property-1"})
    ann.call("chat.read", {"conversation": "user:%d" % bob.user_id, "up_to": sent["seq"]})
    # What is pushed arrives between replies: a last call on each connection after a moment.
    time.sleep(1.5)
    for connection in (ann, bob, ann_again):
        connection.call("ping")
    connections.update({"ann": ann, "bob": bob, "ann again": ann_again})
    topics = {push.get("topic") for c in (ann, bob, ann_again) for push in c.pushes}
    for topic in ("favorites.changed", "group.invited", "group.followed", "group.position", "chat.message", "chat.read"):
        if topic not in topics:
            faults.append("no %s push was heard" % topic)

    heard = 0
    for connection in connections.values():
        for push in connection.pushes:
            heard += 1
            schema = pushes.get(push.get("topic"))
            if schema is None:
                faults.append("push on an undeclared topic %s" % push.get("topic"))
                continue
            for error in list(jsonschema.Draft7Validator(schema).iter_errors(push.get("body")))[:1]:
                faults.append("push %s: body: %s" % (push["topic"], error.message[:160]))
    share = counts["reached"] / max(1, counts["valid"])
    if share < 0.8:
        faults.append("only %.1f %% of the valid calls reached their handler" % (100 * share))
    if counts["refused_by_name"] != counts["mutated"]:
        faults.append("%d of %d mutated calls were refused by name" % (counts["refused_by_name"], counts["mutated"]))
    # The methods whose generated calls mostly did not reach their handler, and what they answered.
    low = {n: "%d/%d %s" % (s["reached"], s["valid"], s["codes"]) for n, s in per_method.items() if s["reached"] < 0.5 * s["valid"]}
    # Faults of one kind (a method, valid or mutated, and what went wrong) once each, counted.
    kinds = {}
    for fault in faults:
        kind = re.sub(r" \{.*?\}: ", ": ", fault, count=1)
        kind = re.sub(r"'[^']*'|\d+", "_", kind)[:160]
        kinds.setdefault(kind, [0, fault])[0] += 1
    print(json.dumps({"methods": len(per_method), "seconds": round(time.time() - started, 1), "pushes": heard,
                      "reached_share": round(share, 3), "low_methods": low, **counts, "fault_count": len(faults),
                      "faults": ["%d× %s" % (n, example[:400]) for n, example in sorted(kinds.values(), key=lambda k: -k[0])][:80]}))
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
