"""Replication on three namespace hosts (issue 34): the catalog replicated on hosts a, b and c
(dqlite's VFS, Raft from libraft), beside the same catalog on one host with its plain SQLite
file, each behind a gateway on a fourth host x; and the peers etcd 3.4 and dqlite 1.11 as
three-node clusters on a, b and c. Prints writes/s with 1 and 50 clients, latency, reads, time
to fail over after the leader's host dies (kill -9, link down), and what a leader cut off from
the other replicas (not from its clients) acknowledges. Run by bench/replication, as root.

    python replication.py WORK_DIR SECONDS BIN_DIR CITIES_CSV PLACES [PARTS]

PARTS: a comma-separated choice of tourbus, curve (the same catalogs on a secured bus), etcd,
dqlite (default tourbus, etcd, dqlite).
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "multihost"))
from netns import HOSTS, NS, build_network, remove_network, set_link, sh, wait  # noqa: E402

WORK, SECONDS = os.path.abspath(sys.argv[1]), int(sys.argv[2])
# Requests a redis-benchmark figure of ours takes: a few seconds each at this machine's rates.
CREATES = max(2000, SECONDS * 3000)
BIN, CITIES, PLACES = os.path.abspath(sys.argv[3]), sys.argv[4], int(sys.argv[5])
PROTOTYPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".build", "dqlite_catalog")
PARTS = (sys.argv[6] if len(sys.argv) > 6 else "tourbus,etcd,dqlite").split(",")
HERE = os.path.dirname(os.path.abspath(__file__))
REPLICAS = "abc"
started = []


def log(message):
    print(message, flush=True)


def start(host, command, logname):
    process = subprocess.Popen(["ip", "netns", "exec", NS[host]] + command,
                               stdout=open("%s/%s.log" % (WORK, logname), "w"), stderr=subprocess.STDOUT)
    started.append(process)
    return process


def stop_all():
    for process in started:
        if process.poll() is None:
            process.kill()
    for process in started:
        process.wait(10)
    started.clear()


def cut_from_replicas(host, cut):
    """Drops what `host` sends to and receives from the other replicas (not x, the clients' host)."""
    sh("nft", "delete", "table", "inet", "tbcut", ns=NS[host], check_rc=False)
    if cut:
        others = ", ".join(HOSTS[h] for h in REPLICAS if h != host)
        rules = "%s/cut.nft" % WORK
        with open(rules, "w") as f:
            f.write("table inet tbcut {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
                    "    ip saddr { %s } drop\n  }\n  chain output {\n    type filter hook output priority 0; policy accept;\n"
                    "    ip daddr { %s } drop\n  }\n}\n" % (others, others))
        sh("nft", "-f", rules, ns=NS[host])


def while_cut(leader, write_to_leader, write_to_others):
    """Cuts `leader` off from the other replicas; meanwhile writes to it for 3 s (from a thread)
    and to the others until one succeeds. (acknowledged by the leader, tried, seconds until the
    others took a write or None)."""
    outcomes = []

    def to_leader():
        end = time.monotonic() + 3
        while time.monotonic() < end:
            outcomes.append(write_to_leader())
    cut_from_replicas(leader, True)
    thread = threading.Thread(target=to_leader)
    thread.start()
    took = failover_probe(write_to_others)
    thread.join()
    return sum(outcomes), len(outcomes), took


def failover_probe(write, seconds=30, interval=0.01):
    """Writes every `interval` until one succeeds; the seconds it took, or None."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if write():
            return time.monotonic() - began
        time.sleep(interval)
    return None


# --- etcd --------------------------------------------------------------------------------------

ETCD_PUT = r'''
local v = string.rep("eHh4", 100)
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  local k = {}
  for i = 1, 12 do local r = math.random(1, 62); k[i] = alphabet:sub(r, r) end
  return wrk.format("POST", "/v3/kv/put", {["Content-Type"]="application/json"},
                    '{"key":"' .. table.concat(k) .. '","value":"' .. v .. '"}')
end
'''


def etcd_url(host):
    return "http://%s:2379" % HOSTS[host]


def etcd_call(host, path, body, timeout=0.5):
    request = urllib.request.Request(etcd_url(host) + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def etcd_leader():
    for host in REPLICAS:
        try:
            status = etcd_call(host, "/v3/maintenance/status", {})
            if status.get("leader") and status["leader"] == status["header"]["member_id"]:
                return host
        except OSError:
            pass
    return None


def etcd_put(host, key, timeout=0.5):
    try:
        etcd_call(host, "/v3/kv/put", {"key": key, "value": "eHh4"}, timeout)
        return True
    except OSError:
        return False


def start_etcd():
    cluster = ",".join("e%s=http://%s:2380" % (h, HOSTS[h]) for h in REPLICAS)
    for h in REPLICAS:
        start(h, ["etcd", "--name", "e" + h, "--data-dir", "%s/etcd-%s" % (WORK, h),
                  "--listen-peer-urls", "http://%s:2380" % HOSTS[h], "--initial-advertise-peer-urls", "http://%s:2380" % HOSTS[h],
                  "--listen-client-urls", etcd_url(h), "--advertise-client-urls", etcd_url(h),
                  "--initial-cluster", cluster, "--initial-cluster-state", "new"], "etcd-" + h)
    if not wait(lambda: etcd_leader() is not None, 20):
        raise RuntimeError("etcd elected no leader in 20 s")


def wrk(url, connections, script):
    with open("%s/put.lua" % WORK, "w") as f:
        f.write(script)
    out = subprocess.run(["ip", "netns", "exec", NS["x"], "wrk", "-t%d" % min(2, connections), "-c%d" % connections, "-d%ds" % SECONDS,
                          "-s", "%s/put.lua" % WORK, "--latency", url], capture_output=True, text=True, timeout=SECONDS + 60).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if failed:
        raise RuntimeError("etcd refused %s writes:\n%s" % (failed.group(1), out))
    p50, p99 = (re.search(r"%s%%\s+([\d.]+)(\w+)" % q, out).groups() for q in ("50", "99"))
    return rate, p50, p99


def etcd():
    log("etcd %s, three members on a, b, c (--snapshot-count default, fsync on)" % subprocess.run(
        ["etcd", "--version"], capture_output=True, text=True).stdout.split("\n")[0].split()[-1])
    start_etcd()
    leader = etcd_leader()
    for connections in (1, 50):
        rate, p50, p99 = wrk(etcd_url(leader) + "/v3/kv/put", connections, ETCD_PUT)
        log("  writes, %d connection%s to the leader: %.0f/s, p50 %s, p99 %s" % (
            connections, "s" if connections > 1 else "", rate, "".join(p50), "".join(p99)))
    # The leader's host dies: every process on it killed, its link down.
    survivors = [h for h in REPLICAS if h != leader]
    kill_host(leader)
    took = failover_probe(lambda: any(etcd_put(h, "ZmFpbG92ZXI=", 0.2) for h in survivors))
    log("  failover after the leader's host died: %s" % ("%.2f s" % took if took is not None else "none in 30 s"))
    set_link(leader, True)
    start_etcd_member_again(leader)
    wait(lambda: etcd_leader() is not None, 20)
    # The leader is cut off from the other replicas, not from its clients.
    leader = etcd_leader()
    cut_at = time.monotonic()
    others = [h for h in REPLICAS if h != leader]
    acknowledged, tried, took = while_cut(leader, lambda: etcd_put(leader, "Y3V0", 0.3),
                                          lambda: any(etcd_put(h, "bmV3bGVhZGVy", 0.2) for h in others))
    log("  leader cut off from the replicas: it acknowledged %d of %d writes after the cut; the others took writes after %s"
        % (acknowledged, tried, "%.2f s" % took if took is not None else "none in 30 s"))
    cut_from_replicas(leader, False)
    healed = wait(lambda: etcd_leader() is not None and etcd_put(leader, "aGVhbGVk", 0.5), 20)
    log("  after the cut healed, the old leader takes writes again (through the new one): %s (%.1f s after the cut)"
        % ("yes" if healed else "no", time.monotonic() - cut_at))
    stop_all()


def kill_host(host):
    for pid in subprocess.run(["ip", "netns", "pids", NS[host]], capture_output=True, text=True).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    set_link(host, False)


def start_etcd_member_again(host):
    cluster = ",".join("e%s=http://%s:2380" % (h, HOSTS[h]) for h in REPLICAS)
    start(host, ["etcd", "--name", "e" + host, "--data-dir", "%s/etcd-%s" % (WORK, host),
                 "--listen-peer-urls", "http://%s:2380" % HOSTS[host], "--initial-advertise-peer-urls", "http://%s:2380" % HOSTS[host],
                 "--listen-client-urls", etcd_url(host), "--advertise-client-urls", etcd_url(host),
                 "--initial-cluster", cluster, "--initial-cluster-state", "existing"], "etcd-%s-again" % host)


# --- dqlite ------------------------------------------------------------------------------------

def dqlite_address(host):
    return "%s:9001" % HOSTS[host]


def dqlite_sql(hosts, sql, timeout=2):
    """Runs `sql` through go-dqlite's shell from host x; its output, or None on failure."""
    servers = ",".join(dqlite_address(h) for h in hosts)
    try:
        result = subprocess.run(["ip", "netns", "exec", NS["x"], "dqlite", "-s", servers, "bench", sql],
                                capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None
    return result.stdout.strip() if result.returncode == 0 and "Error" not in result.stdout else None


def start_dqlite(driver_workers=None, data="dqlite"):
    """Three nodes, a first; with `driver_workers`, a drives dqlite-benchmark's kvwrite."""
    cluster = ",".join(dqlite_address(h) for h in REPLICAS)
    for h in REPLICAS:
        command = ["dqlite-benchmark", "--db", dqlite_address(h), "-D", "%s/%s-%s" % (WORK, data, h)]
        if h != "a":
            command += ["--join", dqlite_address("a")]
        if h == "a" and driver_workers:
            command += ["--driver", "--cluster", cluster, "--duration", str(SECONDS), "--workers", str(driver_workers),
                        "--value-size", "400", "--cluster-timeout", "30"]
        start(h, command, "%s-%s" % (data, h))
        if h == "a":
            time.sleep(0.5)


def dqlite_results(folder):
    done = errors = 0
    total_ms = 0.0
    for path in glob.glob(folder + "/*/results/*-exec-*"):
        lines = open(path).read().split("\n")
        n, n_err = int(lines[0].split()[1]), int(lines[1].split()[1])
        average = float(lines[2].split()[-1])
        done += n
        errors += n_err
        total_ms += average * (n + n_err)
    return done, errors, total_ms / max(1, done + errors)


def dqlite():
    log("dqlite 1.11 (libdqlite0), three nodes on a, b, c through go-dqlite's dqlite-benchmark kvwrite "
        "(one INSERT per transaction, 400-byte values; the database in memory, the Raft log fsynced)")
    for workers in (1, 50):
        start_dqlite(driver_workers=workers, data="dqlite%d" % workers)
        driver = started[0]
        driver.wait(SECONDS + 90)
        done, errors, average = dqlite_results("%s/dqlite%d-a" % (WORK, workers))
        log("  writes, %d client%s: %.0f/s committed, %.0f/s refused busy, %.2f ms average"
            % (workers, "s" if workers > 1 else "", done / SECONDS, errors / SECONDS, average))
        stop_all()
    # The first prototype: the catalog's own statements through dqlite's wire protocol, from
    # the leader's host as the catalog beside its node would send them (bench/dqlite_catalog.swift).
    start_dqlite(data="dqlitecat")
    wait(lambda: (dqlite_sql(REPLICAS, ".cluster") or "").count("voter") == 3, 30, 0.2)
    leader = dqlite_leader()
    servers = ",".join(dqlite_address(h) for h in REPLICAS)
    for args, label in ((["creates", "64"], "creates, one writer connection, 64 a transaction"),
                        (["gets", "8"], "catalog.get's SELECT, 8 connections")):
        out = subprocess.run(["ip", "netns", "exec", NS[leader], PROTOTYPE, servers] + args + [str(SECONDS)],
                             capture_output=True, text=True, timeout=SECONDS + 120)
        log("  prototype (the catalog's statements on dqlite's wire, from the leader's host), %s: %s"
            % (label, (out.stdout.strip() or out.stderr.strip()).split("\n")[-1]))
    stop_all()
    # Failover and partition, through the dqlite shell (which finds the leader).
    start_dqlite(data="dqlitef")
    if not wait(lambda: dqlite_sql(REPLICAS, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)") is not None, 30, 0.2):
        raise RuntimeError("dqlite took no write in 30 s")
    wait(lambda: (dqlite_sql(REPLICAS, ".cluster") or "").count("voter") == 3, 30, 0.2)
    leader = dqlite_leader()
    survivors = [h for h in REPLICAS if h != leader]
    kill_host(leader)
    took = failover_probe(lambda: dqlite_sql(survivors, "INSERT INTO t (v) VALUES ('failover')", 1) is not None)
    log("  failover after the leader's host died: %s (the shell's own start, about 15 ms, included)"
        % ("%.2f s" % took if took is not None else "none in 30 s"))
    stop_all()
    set_link(leader, True)
    # The leader is cut off from the other replicas, not from its clients.
    start_dqlite(data="dqlitep")
    wait(lambda: dqlite_sql(REPLICAS, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT)") is not None, 30, 0.2)
    wait(lambda: (dqlite_sql(REPLICAS, ".cluster") or "").count("voter") == 3, 30, 0.2)
    leader = dqlite_leader()
    others = [h for h in REPLICAS if h != leader]
    acknowledged, tried, took = while_cut(leader, lambda: dqlite_sql([leader], "INSERT INTO t (v) VALUES ('cut')", 1) is not None,
                                          lambda: dqlite_sql(others, "INSERT INTO t (v) VALUES ('new leader')", 1) is not None)
    log("  leader cut off from the replicas: it acknowledged %d of %d writes after the cut; the others took writes after %s"
        % (acknowledged, tried, "%.2f s" % took if took is not None else "none in 30 s"))
    cut_from_replicas(leader, False)
    count = dqlite_sql(REPLICAS, "SELECT count(*) FROM t WHERE v = 'cut'", 5)
    log("  after the cut healed, rows the cut-off leader wrote alone: %s" % count)
    stop_all()


def dqlite_leader():
    address = dqlite_sql(REPLICAS, ".leader")
    return next((h for h in REPLICAS if address == dqlite_address(h)), None)


# --- the replicated catalog -------------------------------------------------------------------

sys.path.insert(0, HERE)
from rebuild import Client  # noqa: E402
import zmq  # noqa: E402

CATALOG_RPC, CATALOG_PUB, RAFT_PORT = 7101, 7111, 7190
SINGLE_RPC, SINGLE_PUB = 7201, 7211
VOTER_RPC, VOTER_PUB, VOTER_RAFT = 7301, 7311, 7391
SOCIAL_RPC, SOCIAL_PUB = 7104, 7114
ADMIN = ("benchadmin", "Bench-Admin-Pass-1")


def endpoint(host, port):
    return "tcp://%s:%d" % (HOSTS[host], port)


def start_service(host, name, args, logname, ready_wait=True):
    ready = "%s/%s.ready" % (WORK, logname)
    env = dict(os.environ, TOURBUS_PASSWORD_COST="minimum")
    process = subprocess.Popen(["ip", "netns", "exec", NS[host], "%s/tourbus-%s" % (BIN, name), "--ready-file", ready,
                                "--log-level", "warn"] + args,
                               stdout=subprocess.DEVNULL, stderr=open("%s/%s.log" % (WORK, logname), "w"), env=env)
    started.append(process)
    if ready_wait:
        await_ready(host, name, logname)
    return process


def await_ready(host, name, logname):
    ready = "%s/%s.ready" % (WORK, logname)
    if not wait(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, 90, 0.1):
        raise RuntimeError("%s on %s was not ready in 90 s (see %s.log)" % (name, host, logname))


def start_replica(host, index):
    """Starts a replica; it is ready once a leader has the schema (`await_ready`)."""
    raft = ",".join("%s:%d" % (HOSTS[h], RAFT_PORT) for h in REPLICAS)
    return start_service(host, "catalog", ["--data-dir", "%s/data-%s" % (WORK, host), "--bind", endpoint(host, CATALOG_RPC),
                                           "--publish", endpoint(host, CATALOG_PUB), "--raft", raft, "--replica", str(index)],
                         "catalog-%s" % host, ready_wait=False)


def replication_status(ctx, host, timeout_ms=500):
    reply = Client(ctx, endpoint(host, CATALOG_RPC), "s").call("sys.stats", {}, timeout_ms)
    return (reply or {}).get("body", {}).get("replication") if reply and reply.get("ok") else None


def catalog_leader(ctx, hosts=REPLICAS, seconds=30):
    found = []

    def ready():
        for host in hosts:
            status = replication_status(ctx, host)
            if status and status.get("ready"):
                found.append(host)
                return True
        return False
    return found[0] if wait(ready, seconds, 0.05) else None


def admin_and_leader(ctx):
    """Creates the bench's admin at social (on x), and answers the catalog replica that leads."""
    reply = Client(ctx, endpoint("x", SOCIAL_RPC), "a").call(
        "admin.create", {"username": ADMIN[0], "email": "bench@example.org", "name": "Bench", "password": ADMIN[1]}, 10000)
    if not reply or not reply.get("ok"):
        raise RuntimeError("admin.create: %s" % reply)
    leader = catalog_leader(ctx)
    if not leader:
        raise RuntimeError("no catalog replica became the leader in 30 s")
    return leader


def redis_benchmark(port, connections, requests, *command, auth=True):
    args = ["ip", "netns", "exec", NS["x"], "redis-benchmark", "-h", HOSTS["x"], "-p", str(port), "-c", str(connections),
            "-n", str(requests), "--csv", "--precision", "3"]
    if auth:
        args += ["--user", ADMIN[0], "-a", ADMIN[1]]
    out = subprocess.run(args + list(command), capture_output=True, text=True, timeout=600)
    if out.returncode != 0 or "rror" in out.stdout + out.stderr:
        raise RuntimeError("redis-benchmark %s: %s %s" % (" ".join(command), out.stdout[-400:], out.stderr[-400:]))
    fields = re.findall(r'"([0-9.]+)"', out.stdout.strip().split("\n")[-1])
    return float(fields[-7]), float(fields[-4]), float(fields[-2])  # req/s, p50 ms, p99 ms


def redis_cli(port, *command):
    out = subprocess.run(["ip", "netns", "exec", NS["x"], "redis-cli", "-h", HOSTS["x"], "-p", str(port), "--user", ADMIN[0],
                          "--pass", ADMIN[1], "--no-auth-warning"] + list(command), capture_output=True, text=True, timeout=30)
    return out.stdout


def load_places(rpc, count):
    """Real places (rg_cities1000.csv) created through `rpc`, 512 in flight: (created, seconds)."""
    began = time.monotonic()
    out = subprocess.run([sys.executable, HERE + "/goals.py", "load", rpc, CITIES, str(count), WORK + "/load.resp"],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError("loading places: %s" % out.stderr[-400:])
    return int(out.stdout.split()[0]), time.monotonic() - began


def acknowledged_writer(ctx, hosts, stop, acks, errors, began, interval=0.01):
    """Creates a place every `interval` through the replica that last took one, else the next
    of `hosts` (each asked with a 300 ms deadline); records the ids acknowledged and the errors,
    with the seconds since `began`."""
    clients = {h: Client(ctx, endpoint(h, CATALOG_RPC), "w" + h) for h in hosts}
    order = list(hosts)
    n = 0
    while not stop.is_set():
        n += 1
        body = {"name": "Failover %d" % n, "category": "cafe", "lat": 60.17, "lon": 24.94}
        for host in list(order):
            reply = clients[host].call("catalog.create", body, 300)
            if reply and reply.get("ok"):
                acks.append((time.monotonic() - began, reply["body"]["id"], host))
                order.remove(host)
                order.insert(0, host)
                break
            errors.append((time.monotonic() - began, host, (reply or {}).get("error", {}).get("message", "no reply")))
            order.remove(host)
            order.append(host)
        time.sleep(interval)


def tourbus():
    log("tourbus: the catalog (%s) replicated on a, b, c (dqlite's VFS in memory, Raft log fsynced by libraft), "
        "beside one catalog on a with its SQLite file (WAL, synchronous=NORMAL) and one on a as a one-voter cluster; "
        "social and a gateway for each on x" % BIN)
    ctx = zmq.Context()
    for index, host in enumerate(REPLICAS, 1):
        start_replica(host, index)
    for host in REPLICAS:
        await_ready(host, "catalog", "catalog-" + host)
    start_service("a", "catalog", ["--data-dir", WORK + "/single", "--bind", endpoint("a", SINGLE_RPC), "--publish", endpoint("a", SINGLE_PUB)],
                  "catalog-single")
    start_service("a", "catalog", ["--data-dir", WORK + "/voter", "--bind", endpoint("a", VOTER_RPC), "--publish", endpoint("a", VOTER_PUB),
                                   "--raft", "%s:%d" % (HOSTS["a"], VOTER_RAFT), "--replica", "1"], "catalog-voter")
    start_service("x", "social", ["--data-dir", WORK + "/social", "--bind", endpoint("x", SOCIAL_RPC), "--publish", endpoint("x", SOCIAL_PUB),
                                  "--peer", "catalog=" + endpoint("a", SINGLE_RPC), "--peer-pub", "catalog=" + endpoint("a", SINGLE_PUB)],
                  "social")
    leader = admin_and_leader(ctx)
    # The replicated gateway follows the leader among the three, as deployed; its window is then
    # the default's for each replica (48 to the leader). The single catalog is measured at the
    # default window (16) and, behind a fourth gateway, at 48 too: the same window to compare with.
    replicas = ",".join(endpoint(h, CATALOG_RPC) for h in REPLICAS)
    gateways = {"single": 7700, "replicated": 7701, "one voter": 7702, "single at 48": 7703}
    for name, port, peer in (("single", 7700, ["--peer", "catalog=" + endpoint("a", SINGLE_RPC)]),
                             ("replicated", 7701, ["--peer", "catalog=" + replicas, "--peer-replicated", "catalog"]),
                             ("one voter", 7702, ["--peer", "catalog=" + endpoint("a", VOTER_RPC)]),
                             ("single at 48", 7703, ["--peer", "catalog=" + endpoint("a", SINGLE_RPC), "--backend-window", "48"])):
        start_service("x", "gateway", ["--listen", "%s:%d" % (HOSTS["x"], port), "--peer", "social=" + endpoint("x", SOCIAL_RPC),
                                       "--logins-per-minute-per-address", "100000"] + peer, "gateway-" + name.replace(" ", "-"))
    for name, rpc in (("single", endpoint("a", SINGLE_RPC)), ("replicated", endpoint(leader, CATALOG_RPC)), ("one voter", endpoint("a", VOTER_RPC))):
        created, seconds = load_places(rpc, PLACES)
        log("  %s: %d real places loaded straight into the catalog, 512 in flight: %.0f/s" % (name, created, created / seconds))
    figures = {}
    for name, port in gateways.items():
        if not wait(lambda: '"id"' in redis_cli(port, "catalog.create", "name", "Bench cafe", "category", "cafe", "lat", "48.85", "lon", "2.35"), 10, 0.5):
            raise RuntimeError("catalog.create through the %s gateway failed" % name)
    for round_ in range(2):
        for name, port in gateways.items():
            figures.setdefault((name, "create"), []).append(
                redis_benchmark(port, 50, CREATES, "catalog.create", "name", "Bench cafe", "category", "cafe", "lat", "48.85", "lon", "2.35"))
        for name, port in gateways.items():
            figures.setdefault((name, "get"), []).append(redis_benchmark(port, 50, CREATES * 2, "catalog.get", "id", "5", auth=False))
        # One connection: one request in flight whatever the window.
        for name in ("single", "replicated", "one voter"):
            figures.setdefault((name, "get1"), []).append(redis_benchmark(gateways[name], 1, CREATES // 4, "catalog.get", "id", "5", auth=False))
    for what, label in (("create", "catalog.create, 50 connections"), ("get", "catalog.get id 5, 50 connections"),
                        ("get1", "catalog.get id 5, one connection")):
        best = {name: max(figures[(name, what)]) for name in gateways if (name, what) in figures}
        log("  %s through the gateway: replicated %.0f/s (p50 %.3f ms, p99 %.3f ms), one host %.0f/s (p50 %.3f ms): %.2f; "
            "one host as a one-voter cluster %.0f/s (p50 %.3f ms): %.2f"
            % (label, best["replicated"][0], best["replicated"][1], best["replicated"][2], best["single"][0], best["single"][1],
               best["replicated"][0] / best["single"][0], best["one voter"][0], best["one voter"][1], best["one voter"][0] / best["single"][0]))
        if "single at 48" in best:
            log("    the one host at the replicated leader's window (48 in flight): %.0f/s (p50 %.3f ms); replicated %.2f of it"
                % (best["single at 48"][0], best["single at 48"][1], best["replicated"][0] / best["single at 48"][0]))

    # A backup of a follower, as the docs advise: its pages are copied into memory in one pass
    # of its gate (its reads, and its Raft loop when a commit comes, wait that long), then
    # written out; the leader goes on with the other follower.
    leader = catalog_leader(ctx)
    follower = next(h for h in REPLICAS if h != leader)
    began = time.monotonic()
    reply = Client(ctx, endpoint(follower, CATALOG_RPC), "k").call("sys.backup", {"to": WORK + "/backup.sqlite"}, 120000) or {}
    if not reply.get("ok"):
        raise RuntimeError("sys.backup: %s" % reply)
    log("  sys.backup of a follower, %d places and the writes since: %.1f MB in %.0f ms (%d ms in the service)"
        % (PLACES, reply["body"]["bytes"] / 1e6, (time.monotonic() - began) * 1000, reply["body"]["milliseconds"]))

    # The leader's host dies under a writer: every process on it killed, its link down.
    stop, acks, errors, began = threading.Event(), [], [], time.monotonic()
    writer = threading.Thread(target=acknowledged_writer, args=(ctx, [leader] + [h for h in REPLICAS if h != leader], stop, acks, errors, began))
    writer.start()
    time.sleep(2)
    killed_at = time.monotonic() - began
    kill_host(leader)
    survivors = [h for h in REPLICAS if h != leader]
    resumed = wait(lambda: len(acks) > 0 and acks[-1][0] > killed_at and acks[-1][2] != leader, 30, 0.01)
    time.sleep(2)
    stop.set()
    writer.join()
    after = [t for t, _, host in acks if t > killed_at and host != leader]
    new_leader = catalog_leader(ctx, survivors)
    check = Client(ctx, endpoint(new_leader, CATALOG_RPC), "v") if new_leader else None
    lost = [i for _, i, _ in acks if not check or not (check.call("catalog.get", {"id": i}, 2000) or {}).get("ok")]
    log("  the leader's host (%s) died under a writer (one create each 10 ms, 300 ms deadline): writes resumed on %s %s; "
        "%d acknowledged, %d lost" % (leader, new_leader, "%.2f s after the kill" % (after[0] - killed_at) if resumed and after else "never",
                                      len(acks), len(lost)))
    set_link(leader, True)

    # The killed replica comes back from its own Raft log and catches up.
    start_replica(leader, REPLICAS.index(leader) + 1)
    await_ready(leader, "catalog", "catalog-" + leader)
    highest = max(i for _, i, _ in acks)
    back = Client(ctx, endpoint(leader, CATALOG_RPC), "b")
    caught_up = wait(lambda: (back.call("catalog.get", {"id": highest}, 1000) or {}).get("ok"), 30, 0.1)
    log("  the killed replica restarted on its own Raft log: %s" % ("it has every acknowledged write" if caught_up else "it did NOT catch up in 30 s"))

    # The leader cut off from the other replicas, not from its clients.
    leader = catalog_leader(ctx)
    others = [h for h in REPLICAS if h != leader]
    old = Client(ctx, endpoint(leader, CATALOG_RPC), "o")
    clients = {h: Client(ctx, endpoint(h, CATALOG_RPC), "n" + h) for h in others}

    def create_on(client, category):
        reply = client.call("catalog.create", {"name": "Partition", "category": category, "lat": 60.17, "lon": 24.94}, 1000)
        return bool(reply and reply.get("ok"))
    cut_at = time.monotonic()
    # The cut-off leader is asked for viewpoints, a category nothing else creates.
    acknowledged, tried, took = while_cut(leader, lambda: create_on(old, "viewpoint"),
                                          lambda: any(create_on(c, "cafe") for c in clients.values()))
    log("  the leader (%s) cut off from the replicas, not from its clients: it acknowledged %d of %d creates after the cut "
        "(each asked with a 1 s deadline); the others took writes after %s"
        % (leader, acknowledged, tried, "%.2f s" % took if took is not None else "none in 30 s"))
    cut_from_replicas(leader, False)
    healed = wait(lambda: (replication_status(ctx, leader) or {}).get("role") == "follower"
                  and (replication_status(ctx, leader) or {}).get("applied_index", 0) >= (replication_status(ctx, others[0]) or {}).get("commit_index", 1), 30, 0.1)
    alone = {h: len(((Client(ctx, endpoint(h, CATALOG_RPC), "l").call("catalog.list", {"category": "viewpoint", "limit": 100}, 2000)
                      or {}).get("body") or {}).get("places", [None] * 999)) for h in REPLICAS}
    log("  after the cut healed (%.1f s after it), the old leader %s; places it was asked to write alone, on a, b, c: %s" % (
        time.monotonic() - cut_at, "rejoined as a follower and caught up" if healed else "did NOT rejoin as a caught-up follower in 30 s",
        ", ".join(str(alone[h]) for h in REPLICAS)))
    stop_all()


def tourbus_curve():
    """The create rate on a secured bus, where Raft's links go through each replica's CURVE
    tunnel: the replicated catalog beside one catalog on plain SQLite, the same CURVE on every
    bus link of both, each behind its gateway on x (the replicated one following the leader
    among the three), both loaded with the same real places."""
    log("tourbus on a secured bus: the same catalogs, every bus link CURVE, Raft's links through the replicas' CURVE tunnels")
    import rebuild
    names = ["catalog", "social", "gateway", "operator"]
    out = subprocess.run([BIN + "/tourbus", "keys", "--out", WORK + "/keys"] + names, capture_output=True, text=True, check=True).stdout
    curve = json.loads(out)["curve"]
    suite = WORK + "/suite.json"
    with open(suite, "w") as f:
        json.dump({"curve": curve}, f)
    with open(WORK + "/keys/operator.key") as f:
        pair = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line and not line.startswith("#"))
    rebuild.CURVE.update(public=pair["public"], secret=pair["secret"])
    for host in REPLICAS:
        rebuild.CURVE["servers"][endpoint(host, CATALOG_RPC)] = curve["keys"]["catalog"][0]
    rebuild.CURVE["servers"][endpoint("a", SINGLE_RPC)] = curve["keys"]["catalog"][0]
    rebuild.CURVE["servers"][endpoint("x", SOCIAL_RPC)] = curve["keys"]["social"][0]
    os.environ["TOURBUS_BENCH_CURVE"] = json.dumps(rebuild.CURVE)  # for goals.py load

    def secured(name):
        return ["--config", suite, "--curve-key", "%s/keys/%s.key" % (WORK, name)]
    ctx = zmq.Context()
    raft = ",".join("%s:%d" % (HOSTS[h], RAFT_PORT) for h in REPLICAS)
    for index, host in enumerate(REPLICAS, 1):
        start_service(host, "catalog", secured("catalog") + ["--data-dir", "%s/curve-%s" % (WORK, host), "--bind", endpoint(host, CATALOG_RPC),
                                                              "--publish", endpoint(host, CATALOG_PUB), "--raft", raft, "--replica", str(index)],
                      "curve-catalog-%s" % host, ready_wait=False)
    for host in REPLICAS:
        await_ready(host, "catalog", "curve-catalog-" + host)
    start_service("a", "catalog", secured("catalog") + ["--data-dir", WORK + "/curve-single", "--bind", endpoint("a", SINGLE_RPC),
                                                         "--publish", endpoint("a", SINGLE_PUB)], "curve-catalog-single")
    start_service("x", "social", secured("social") + ["--data-dir", WORK + "/curve-social", "--bind", endpoint("x", SOCIAL_RPC),
                                                       "--publish", endpoint("x", SOCIAL_PUB), "--peer", "catalog=" + endpoint("a", SINGLE_RPC),
                                                       "--peer-pub", "catalog=" + endpoint("a", SINGLE_PUB)], "curve-social")
    leader = admin_and_leader(ctx)
    replicas = ",".join(endpoint(h, CATALOG_RPC) for h in REPLICAS)
    gateways = {"single": 7700, "replicated": 7701, "single at 48": 7703}
    for name, port, peer in (("single", 7700, ["--peer", "catalog=" + endpoint("a", SINGLE_RPC)]),
                             ("replicated", 7701, ["--peer", "catalog=" + replicas, "--peer-replicated", "catalog"]),
                             ("single at 48", 7703, ["--peer", "catalog=" + endpoint("a", SINGLE_RPC), "--backend-window", "48"])):
        start_service("x", "gateway", secured("gateway") + ["--listen", "%s:%d" % (HOSTS["x"], port), "--peer", "social=" + endpoint("x", SOCIAL_RPC),
                                                             "--logins-per-minute-per-address", "100000"] + peer, "curve-gateway-" + name)
    for name, rpc in (("single", endpoint("a", SINGLE_RPC)), ("replicated", endpoint(leader, CATALOG_RPC))):
        created, seconds = load_places(rpc, PLACES)
        log("  %s: %d real places loaded straight into the catalog, 512 in flight: %.0f/s" % (name, created, created / seconds))
    for name, port in gateways.items():
        if not wait(lambda: '"id"' in redis_cli(port, "catalog.create", "name", "Bench cafe", "category", "cafe", "lat", "48.85", "lon", "2.35"), 10, 0.5):
            raise RuntimeError("catalog.create through the %s gateway failed" % name)
    figures = {}
    for _ in range(2):
        for name, port in gateways.items():
            figures.setdefault(name, []).append(
                redis_benchmark(port, 50, CREATES, "catalog.create", "name", "Bench cafe", "category", "cafe", "lat", "48.85", "lon", "2.35"))
    best = {name: max(figures[name]) for name in gateways}
    log("  catalog.create, 50 connections, through the gateway, every link CURVE: replicated %.0f/s (p50 %.3f ms, p99 %.3f ms), "
        "one host %.0f/s (p50 %.3f ms): %.2f; the one host at the leader's window (48) %.0f/s: %.2f"
        % (best["replicated"][0], best["replicated"][1], best["replicated"][2], best["single"][0], best["single"][1],
           best["replicated"][0] / best["single"][0], best["single at 48"][0], best["replicated"][0] / best["single at 48"][0]))
    stop_all()


def main():
    os.makedirs(WORK, exist_ok=True)
    log("replication: replicas on a %s, b %s, c %s; clients on x %s; %d s per load of etcd and dqlite; "
        "%d creates and %d gets a redis-benchmark figure, best of two" % (HOSTS["a"], HOSTS["b"], HOSTS["c"], HOSTS["x"], SECONDS, CREATES, CREATES * 2))
    build_network()
    if "tourbus" in PARTS:
        tourbus()
    if "curve" in PARTS:
        tourbus_curve()
    if "etcd" in PARTS:
        etcd()
    if "dqlite" in PARTS:
        dqlite()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        kept = os.environ.get("KEEP_LOGS")
        if kept:
            os.makedirs(kept, exist_ok=True)
            for path in glob.glob(WORK + "/*.log"):
                subprocess.run(["cp", path, kept])
        for path in sorted(glob.glob(WORK + "/*.log")):
            lines = open(path, errors="replace").readlines()
            crash = [line for line in lines if re.search(r"Assertion|Fatal error|crashed| at /work/", line)][:12]
            if lines:
                log("--- %s (last lines)\n%s" % (os.path.basename(path), "".join(crash or lines[-12:])))
        raise
    finally:
        stop_all()
        remove_network()
