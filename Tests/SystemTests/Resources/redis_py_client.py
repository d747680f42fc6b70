"""Drives a Tourbus gateway with redis-py, the Redis client library, as an application would.

Run by RedisClientTests with the interpreter of .build/pyenv (deploy/local/test makes it):

    python redis_py_client.py '{"host":"127.0.0.1","port":7700,"places":[{"id":1,"name":"…"}],
                                "user":{"username":"…","password":"…"},"pipeline":300}'

Prints one JSON object on stdout and exits 0 whatever the gateway answers; the test
asserts on it. For each way of connecting ("default": what redis.Redis(host, port) does
by itself, the library's own protocol; "resp2": protocol=2) it records every step's
answer or the error it raised, so a failure says where and why:

    {"library": "8.1.0", "runs": {"default": {"ping": true, "categories": {...}, "get": {...},
     "pipeline": {"sent": 300, "replies": 300, "correct": 300, "errors": {}, "first_wrong": null},
     "login": {"user": {...}, "token_received": true}, "token_profile": {...},
     "user_password_profile": {...}}, "resp2": {...}}}

A step that failed holds {"error": "ResponseError: …"} instead. Every socket operation has
a timeout, so the script always ends, if slowly against a silent server (redis-py tries a
timed-out command again a few times); the test kills it after 120 s.
"""

import json
import sys

import redis

TIMEOUTS = {"socket_timeout": 10, "socket_connect_timeout": 5}


def failure(error):
    """A step's record when it raised."""
    return {"error": f"{type(error).__name__}: {error}"}


def step(record, name, action):
    """Runs one step, keeping its answer (JSON-decoded when it is JSON) or its error."""
    try:
        answer = action()
        if isinstance(answer, bytes):
            answer = answer.decode("utf-8")
        if isinstance(answer, str):
            try:
                answer = json.loads(answer)
            except ValueError:
                pass
        record[name] = answer
    except Exception as error:  # every failure is a finding to report, never a crash
        record[name] = failure(error)
    return record[name]


def pipeline(client, places, count):
    """`count` catalog.get commands in one pipeline (no MULTI), cycling over `places`;
    counts the replies that are the right place in the right position."""
    pipe = client.pipeline(transaction=False)
    expected = [places[i % len(places)] for i in range(count)]
    for place in expected:
        pipe.execute_command("catalog.get", "id", str(place["id"]))
    replies = pipe.execute(raise_on_error=False)
    summary = {"sent": count, "replies": len(replies), "correct": 0, "errors": {}, "first_wrong": None}
    for index, (place, reply) in enumerate(zip(expected, replies)):
        if isinstance(reply, Exception):
            text = f"{type(reply).__name__}: {reply}"
            summary["errors"][text] = summary["errors"].get(text, 0) + 1
            good = False
        else:
            try:
                got = json.loads(reply)
                good = got.get("id") == place["id"] and got.get("name") == place["name"]
            except (ValueError, TypeError, AttributeError):
                good = False
        if good:
            summary["correct"] += 1
        elif summary["first_wrong"] is None:
            summary["first_wrong"] = {"index": index, "expected_id": place["id"], "got": repr(reply)[:300]}
    return summary


def run(plan, protocol):
    """Every step with one way of connecting; protocol None is the library's default."""
    host, port = plan["host"], plan["port"]
    user = plan["user"]
    extra = dict(TIMEOUTS)
    if protocol is not None:
        extra["protocol"] = protocol
    record = {}
    client = redis.Redis(host, port, **extra)
    try:
        step(record, "ping", client.ping)
        step(record, "categories", lambda: client.execute_command("catalog.categories"))
        step(record, "get", lambda: client.execute_command("catalog.get", "id", str(plan["places"][0]["id"])))
        try:
            record["pipeline"] = pipeline(client, plan["places"], plan["pipeline"])
        except Exception as error:
            record["pipeline"] = failure(error)
        login = step(record, "login", lambda: client.execute_command(
            "auth.login", "username", user["username"], "password", user["password"]))
    finally:
        client.close()

    # Signed in by the token auth.login answered: redis-py sends it as the password.
    token = login.pop("token", None) if isinstance(login, dict) else None
    if token is not None:
        login["token_received"] = True  # the secret itself stays out of the summary
    if token is None:
        record["token_profile"] = {"error": "no token from auth.login"}
    else:
        signed = redis.Redis(host, port, password=token, **extra)
        try:
            step(record, "token_profile", lambda: signed.execute_command("profile.get"))
        finally:
            signed.close()

    # Signed in by username and password, as with Redis 6 ACL users.
    named = redis.Redis(host, port, username=user["username"], password=user["password"], **extra)
    try:
        step(record, "user_password_profile", lambda: named.execute_command("profile.get"))
    finally:
        named.close()
    return record


def main():
    plan = json.loads(sys.argv[1])
    summary = {"library": redis.__version__, "runs": {}}
    for name, protocol in (("default", None), ("resp2", 2)):
        summary["runs"][name] = run(plan, protocol)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
