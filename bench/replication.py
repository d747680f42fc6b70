"""Replication peers on three namespace hosts (issue 34): etcd 3.4 and dqlite 1.11, each as a
three-node cluster on hosts a, b and c, loaded from a fourth host x. Prints, for each: writes/s
with 1 and 50 clients, latency, time to fail over after the leader's host dies (kill -9, link
down), and what a leader cut off from the other replicas (not from its clients) acknowledges.
Run by bench/replication, as root.

    python replication.py WORK_DIR SECONDS
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
from netns import HOSTS, NS, build_network, remove_network, set_link, sh  # noqa: E402

WORK, SECONDS = os.path.abspath(sys.argv[1]), int(sys.argv[2])
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


def wait(condition, seconds, step=0.05):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


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


def main():
    os.makedirs(WORK, exist_ok=True)
    log("replication peers: replicas on a %s, b %s, c %s; clients on x %s; %d s per load"
        % (HOSTS["a"], HOSTS["b"], HOSTS["c"], HOSTS["x"], SECONDS))
    build_network()
    etcd()
    dqlite()


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_all()
        remove_network()
