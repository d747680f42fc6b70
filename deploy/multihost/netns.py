"""Hosts as Linux network namespaces on one bridge, for the multi-host test and the replication
benchmark: the network, its faults (a link down, packet loss) and a delaying TCP proxy. Needs root.

TAG (environment) names this run's namespaces and bridge, so the calling script's cleanup finds
them; the hosts are a, b, c and x.
"""
import os
import signal
import subprocess
import sys
import time

TAG = os.environ.get("TAG") or "%04d" % (os.getpid() % 10000)  # the test script's, so its cleanup finds what this made
NET = "10.88.%d" % (int(TAG) % 200 + 20)
HOSTS = {"a": NET + ".1", "b": NET + ".2", "c": NET + ".3", "x": NET + ".9"}
BRIDGE_IP = NET + ".254"
BRIDGE = "tbbr" + TAG
NS = {h: "tb%s-%s" % (TAG, h) for h in HOSTS}


def sh(*command, ns=None, check_rc=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(command)
    result = subprocess.run(full, capture_output=True, text=True, timeout=60)
    if check_rc and result.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(full), result.stderr.strip()))
    return result.stdout


# --- the network ---------------------------------------------------------------------------

def veth(host):
    return "tb%s%s" % (TAG, host), "tb%s%s-br" % (TAG, host)


def build_network():
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", BRIDGE_IP + "/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for host, address in HOSTS.items():
        inside, outside = veth(host)
        sh("ip", "netns", "add", NS[host])
        sh("ip", "link", "add", inside, "type", "veth", "peer", "name", outside)
        sh("ip", "link", "set", inside, "netns", NS[host])
        sh("ip", "link", "set", outside, "master", BRIDGE)
        sh("ip", "link", "set", outside, "up")
        sh("ip", "addr", "add", address + "/24", "dev", inside, ns=NS[host])
        sh("ip", "link", "set", inside, "up", ns=NS[host])
        sh("ip", "link", "set", "lo", "up", ns=NS[host])


def remove_network():
    """Kills every process left in the namespaces, then removes them and the bridge."""
    for ns in NS.values():
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)


def set_link(host, up):
    sh("ip", "link", "set", veth(host)[1], "up" if up else "down")


def packet_loss(percent, folder, hosts="abc"):
    """Drops `percent`% of the packets each of `hosts` receives from the others (nftables numgen);
    the rules file is written in `folder`."""
    for host in hosts:
        sh("nft", "delete", "table", "inet", "tbloss", ns=NS[host], check_rc=False)
        if percent:
            rules = "%s/loss.nft" % folder
            with open(rules, "w") as f:
                f.write("table inet tbloss {\n  chain input {\n    type filter hook input priority 0; policy accept;\n"
                        "    ip saddr %s.0/24 numgen random mod 100 < %d drop\n  }\n}\n" % (NET, percent))
            sh("nft", "-f", rules, ns=NS[host])


def wait(condition, seconds, step=0.2):
    """Polls `condition` every `step` seconds for at most `seconds`: whether it held."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


# --- a delaying TCP proxy ------------------------------------------------------------------

class DelayProxy:
    """Forwards TCP from LISTEN to TARGET, each chunk held `delay_ms` in each direction, in order.
    Each route runs as its own process (python -c) in its namespace, reading the delay from a file."""
    CODE = r'''
import socket, sys, threading, time, collections
listen_host, listen_port, target_host, target_port, delay_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
def delay():
    try:
        return float(open(delay_file).read() or 0) / 1000
    except Exception:
        return 0
def close_both(a, b):
    # Either way ending ends the connection, both ways: a peer that died leaves no half-open
    # link behind the proxy, which its other side would keep writing into.
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def pump(src, dst):
    queue = collections.deque(); cv = threading.Condition(); done = [False]
    def sender():
        while True:
            with cv:
                while not queue and not done[0]:
                    cv.wait()
                if not queue:
                    break
                due, data = queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                dst.sendall(data)
            except OSError:
                break
        close_both(src, dst)
    t = threading.Thread(target=sender, daemon=True); t.start()
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        with cv:
            if not data:
                done[0] = True; cv.notify(); break
            queue.append((time.monotonic() + delay(), data)); cv.notify()
    t.join(30)
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((listen_host, listen_port)); server.listen(128)
while True:
    client, _ = server.accept()
    try:
        upstream = socket.create_connection((target_host, target_port), timeout=5)
        upstream.settimeout(None)
    except OSError:
        client.close(); continue
    for a, b in ((client, upstream), (upstream, client)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
'''

    def __init__(self, delay_file, routes):
        """`routes`: (host, listen port, target address, target port) each; the proxy listens on
        the host's own address. The processes are in `self.processes`."""
        self.delay_file = delay_file
        self.set(0)
        self.processes = [subprocess.Popen(["ip", "netns", "exec", NS[host], sys.executable, "-c", self.CODE, HOSTS[host], str(port),
                                            target, str(target_port), delay_file])
                          for host, port, target, target_port in routes]

    def set(self, milliseconds):
        with open(self.delay_file + ".tmp", "w") as f:
            f.write(str(milliseconds))
        os.replace(self.delay_file + ".tmp", self.delay_file)


# --- the line protocol -------------------------------------------------------------------------

