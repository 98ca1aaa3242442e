#!/usr/bin/env bash
# The shipped alert rules (deploy/prometheus/rmqns-rules.yml, their `for:`
# durations unchanged) in a real Prometheus scraping three rmqns nodes with
# embedded controllers on loopback, with brokers simulated by rmqns-bench
# (seeded brokers re-registering every 5 s with each node, and a set of
# brokers in controller mode). Scrapes and evaluations every second (this
# test's prometheus.yml). Then faults, one phase after the other:
#   1. a broker killed (its processes get SIGKILL: connections closed) and
#      another frozen (SIGSTOP): RmqnsBrokerGone and RmqnsClusterLostBrokerSet
#      for the first, RmqnsBrokerHeartbeatLate and ...Expiring for the
#      second; then the frozen one continued (SIGCONT, before its removal
#      at 120 s) and the killed one started again: all of them clear. A
#      third broker, on a fifth node that removes no expired broker (see 7),
#      frozen as well: RmqnsBrokerHeartbeatExpired past its 120 s; continued,
#      it clears;
#   2. the controller leader's node killed: RmqnsControllerMemberDown names
#      it; the node started again: RmqnsRestarted fires (and stays for its
#      15 minutes), RmqnsControllerMemberDown clears;
#   3. strays, side by side: a slave whose master never came
#      (RmqnsBrokerSetWithoutMaster on every node, cleared when its master
#      registers), a broker registering with one node only
#      (RmqnsNodesDisagreeOnBrokers and ...OnRoutes, cleared when it reaches
#      the other two), and a stranger writing garbage to a Raft port
#      (RmqnsControllerRaftRefused on that node);
#   4. a stray node in the job, a controller group of its own (as one
#      started with the wrong peers list): RmqnsControllerLeaderDisagreement,
#      ...SetStateDisagreement (another master for a set), and the nodes
#      disagreeing on brokers and routes; cleared when it is no longer scraped;
#   5. the controller leader killed and started again, over and over, until
#      RmqnsControllerLeaderChurn fires;
#   6. every broker of the controller-mode set killed: the leader's election
#      finds no master (RmqnsControllerElectionFoundNoMaster), the set stays
#      without (RmqnsControllerSetWithoutMaster), and the NameServers lose
#      it (RmqnsBrokerGone, RmqnsClusterLostBrokerSet). Not brought back:
#      bringing a set without in-sync replica back takes an unclean election;
#   7. a controller's heartbeat table near its bound: a fifth node, a
#      group of its own in a job of its own, started with the others with
#      controllerMaxLiveBrokers=2 and two brokers heart-beating, so that
#      RmqnsControllerHeartbeatTableNearFull (`for:` 5 minutes) fires while
#      the phases above run; restarted with a larger bound, it clears;
#   8. two of the three nodes killed: RmqnsControllerNoLeader on the
#      survivor, RmqnsControllerMemberDown and RmqnsDown for each of the
#      two; both started again: all of them clear.
# Throughout, no other alert may fire. Prints the time from each fault to
# each alert firing, and to its clearing. Alerts counting events over 10 or
# 15 minutes (restarts, churn, refused connections, elections without a
# master) stay firing that long after the fault: not waited for.
#   tools/alerts-live-test.sh [BUILD_DIR]   (default build)
# Installs Debian's prometheus package when it is missing. Loopback only;
# ends only the processes it started. About eight minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
fail() { echo "alerts-live-test: FAIL: $*" >&2; exit 1; }
[ -x "$BUILD/rmqns" ] || fail "$BUILD/rmqns is not built"
[ -x "$BUILD/tools/bench/rmqns-bench" ] || fail "$BUILD/tools/bench/rmqns-bench is not built"
[ -x "$BUILD/tools/admin/rmqns-admin" ] || fail "$BUILD/tools/admin/rmqns-admin is not built"
if ! command -v prometheus >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
command -v python3 >/dev/null || fail "python3 is needed"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rmqns-alerts-live-XXXXXX")
rc=0
python3 - "$(cd "$BUILD" && pwd)" "$(realpath deploy/prometheus/rmqns-rules.yml)" "$TMP" <<'PY' || rc=$?
import fcntl, json, os, random, signal, socket, subprocess, sys, time, urllib.request

build, rules, tmp = sys.argv[1:4]
RMQNS, BENCH, ADMIN = build + "/rmqns", build + "/tools/bench/rmqns-bench", build + "/tools/admin/rmqns-admin"
t_start = time.time()
procs = []  # every process started here, ended by its PID at exit
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still cleans up


def log(msg):
    print("alerts-live-test: %s (%d s)" % (msg, time.time() - t_start), flush=True)


def start(args, name):
    out = open(os.path.join(tmp, name + ".log"), "ab")
    p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=tmp,
                         env=dict(os.environ, HOME=tmp))
    procs.append(p)
    return p


def stop_all():
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def free_block(n):
    """A base port with base .. base+n-1 free on 127.0.0.1, below the
    ephemeral range: a node restarted on its ports must not find one taken
    by a connection's local end meanwhile (peers dial its Raft port)."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    rnd = random.Random()
    for _ in range(200):
        base = rnd.randrange(10000, low - n)
        if base + n > 21000 and base < 21400:  # the simulated brokers' addresses
            continue
        ok = True
        for port in range(base, base + n):
            t = socket.socket()
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                t.bind(("127.0.0.1", port))
            except OSError:
                ok = False
            t.close()
            if not ok or not claim(port):
                ok = False
                break
        if ok:
            return base
    sys.exit("no free block of %d ports" % n)


claims = []  # open files whose flocks hold this run's ports until it exits


def claim(port):
    """Claims port as the test harness does (an flock on
    $TMPDIR/rmqns-test-ports/PORT), so tests running beside this one pick
    others; False when another process holds it."""
    d = os.path.join(os.environ.get("TMPDIR") or "/tmp", "rmqns-test-ports")
    os.makedirs(d, mode=0o1777, exist_ok=True)
    f = open(os.path.join(d, str(port)), "a")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return False
    claims.append(f)
    return True


def http(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def metric(port, name):
    try:
        for line in http("http://127.0.0.1:%d/metrics" % port).splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def wait(what, cond, bound):
    deadline = time.time() + bound
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    sys.exit("%s not within %d s" % (what, bound))


# node i: protocol base+4i, HTTP +1, controller +2, Raft +3
# (controllerRaftPortOffset=1)
base = free_block(20)
nodes = [dict(proto=base + 4 * i, http=base + 4 * i + 1, ctl=base + 4 * i + 2) for i in range(3)]
# a fourth node, a controller group of its own, for one phase
stray = dict(proto=base + 12, http=base + 13, ctl=base + 14)
# a fifth, a group of its own with a small heartbeat table, in a job of its own
full = dict(proto=base + 16, http=base + 17, ctl=base + 18)
# t0 removes no broker past its timeout (as a node whose scan stopped would
# not): the broker frozen on it in phase 1 outlives its timeout
table_flags = ["--scanNotActiveBrokerInterval=3600000", "--serverChannelMaxIdleTimeSeconds=0"]
peers = ";".join("n%d-127.0.0.1:%d" % (i, n["ctl"]) for i, n in enumerate(nodes))
prom_port = free_block(1)
API = "http://127.0.0.1:%d" % prom_port


def start_rmqns(n, name, group, peer_list, extra=()):
    os.makedirs(os.path.join(tmp, name), exist_ok=True)
    n["proc"] = start([RMQNS, "--bindAddress=127.0.0.1", "--listenPort=%d" % n["proto"],
                       "--httpPort=%d" % n["http"], "--enableControllerInNamesrv=true",
                       "--controllerDLegerGroup=" + group, "--controllerDLegerPeers=" + peer_list,
                       "--controllerDLegerSelfId=" + name, "--controllerRaftPortOffset=1",
                       "--controllerStorePath=" + os.path.join(tmp, name, "controller"),
                       "--kvConfigPath=" + os.path.join(tmp, name, "kv.json")] + list(extra), name)
    wait("node %s's /metrics" % name, lambda: metric(n["http"], "rmqns_controller_term") is not None, 30)


def start_node(i):
    start_rmqns(nodes[i], "n%d" % i, "AlertGroup", peers)


# a seeded broker: one process per NameServer (of `on`, default all), the
# same name and address; brokerId `bid`
def start_broker(name, port, bid=0, on=(0, 1, 2), topics=None):
    return [start([BENCH, "seed", "-a", "127.0.0.1:%d" % nodes[i]["proto"], "-b", "1", "-t", "2",
                   "--cluster", "AlertCluster", "--broker-prefix", name, "--broker-port", str(port),
                   "--broker-id", str(bid), "--topic-prefix", topics or name, "--keepalive", "5s",
                   "-d", "900s", "--quiet"], "%s-%d-n%d" % (name, bid, i))
            for i in on]


# a broker set of two in controller mode (rmqns-bench's players) with the
# controllers of ctl_addrs, registering with the NameServers of ns_addrs
def start_ctl_brokers(ctl_addrs, ns_addrs, prefix, cluster, name):
    return start([BENCH, "controller", "--controller-addr", ";".join(ctl_addrs), "-a", ";".join(ns_addrs),
                  "--broker-sets", "1", "--replicas", "2", "--broker-prefix", prefix, "--cluster", cluster,
                  "--heartbeat-timeout", "20s", "-d", "900s", "--quiet"], name)


def start_table_node(bound):
    start_rmqns(full, "t0", "TableGroup", "t0-127.0.0.1:%d" % full["ctl"],
                table_flags + ["--controllerMaxLiveBrokers=%d" % bound])


def leader_index():
    ls = [i for i, n in enumerate(nodes) if metric(n["http"], "rmqns_controller_leader") == 1]
    return ls[0] if len(ls) == 1 else None


def serving_leader():
    """The index of the one serving leader, waited for."""
    wait("a serving leader", lambda: leader_index() is not None, 60)
    return leader_index()


try:
    for i in range(3):
        start_node(i)
    log("three nodes with controllers on 127.0.0.1:%d.." % base)
    wait("a serving controller leader",
         lambda: sum(metric(n["http"], "rmqns_controller_leader") or 0 for n in nodes) == 1, 60)
    kept = start_broker("kept", 21000)
    killed = start_broker("killed", 21100)
    frozen = start_broker("frozen", 21200)
    ctl_brokers = start_ctl_brokers(["127.0.0.1:%d" % n["ctl"] for n in nodes],
                                    ["127.0.0.1:%d" % n["proto"] for n in nodes], "ctlset", "AlertCluster",
                                    "ctl-brokers")
    # the table's bound: two brokers of two heart-beating (the alert's
    # threshold is 80 %)
    start_table_node(2)
    start_ctl_brokers(["127.0.0.1:%d" % full["ctl"]], ["127.0.0.1:%d" % full["proto"]], "tblset",
                      "TableCluster", "table-brokers")
    wait("two brokers in t0's heartbeat table",
         lambda: metric(full["http"], "rmqns_controller_live_brokers") == 2, 60)
    table_full_at = time.time()
    log("t0's heartbeat table full (2 of controllerMaxLiveBrokers=2)")
    # a broker of t0's that phase 1 freezes past its timeout: t0 neither
    # scans for expired brokers nor closes idle connections
    stale = start([BENCH, "seed", "-a", "127.0.0.1:%d" % full["proto"], "-b", "1", "-t", "2",
                   "--cluster", "TableCluster", "--broker-prefix", "stale", "--broker-port", "21330",
                   "--topic-prefix", "stale", "--keepalive", "5s", "-d", "900s", "--quiet"], "stale-0-t0")
    wait("t0's brokers", lambda: metric(full["http"], "rmqns_brokers_live") == 3, 60)
    wait("the brokers on every node",
         lambda: all(metric(n["http"], "rmqns_brokers_live") == 5 for n in nodes), 60)
    # the same brokers and topics, learnt in different orders: one digest
    wait("one route digest on every node",
         lambda: len({metric(n["http"], "rmqns_route_digest") for n in nodes}) == 1, 30)

    def scrape(targets):
        """Writes prometheus.yml with these nodes as the job's targets."""
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("""global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: [%s]
scrape_configs:
  - job_name: rmqns
    static_configs:
      - targets: [%s]
  - job_name: rmqns-table
    static_configs:
      - targets: ['127.0.0.1:%d']
""" % (rules, ", ".join("'127.0.0.1:%d'" % n["http"] for n in targets), full["http"]))
    scrape(nodes)
    prom = start(["prometheus", "--config.file=" + os.path.join(tmp, "prometheus.yml"),
           "--storage.tsdb.path=" + os.path.join(tmp, "data"),
           "--web.listen-address=127.0.0.1:%d" % prom_port, "--log.level=warn"], "prometheus")
    def ready():
        try:
            http(API + "/-/ready")
            return True
        except OSError:
            return False
    wait("prometheus ready", ready, 60)

    def alerts():
        try:
            return json.loads(http(API + "/api/v1/alerts"))["data"]["alerts"]
        except (OSError, ValueError, KeyError):
            return None

    def rules_evaluated():
        try:
            groups = json.loads(http(API + "/api/v1/rules"))["data"]["groups"]
        except (OSError, ValueError, KeyError):
            return False
        rs = [r for g in groups for r in g["rules"]]
        bad = [r["name"] for r in rs if r["health"] == "err"]
        if bad:
            sys.exit("rules failing to evaluate: %s" % bad)
        return rs and all(r["health"] == "ok" for r in rs)
    wait("every rule evaluated", rules_evaluated, 60)
    time.sleep(15)  # some history: the rules look back at what was there
    now = alerts()
    if now is None or [a for a in now if a["state"] == "firing"]:
        sys.exit("alerts firing before any fault: %s" % json.dumps(now))
    log("prometheus on :%d, every rule evaluated, no alert firing" % prom_port)

    timings = []
    seen = {}  # an alert's labels -> when any phase first saw it firing

    def labels_key(a):
        return tuple(sorted(a["labels"].items()))

    def phase(name, t0, expected, actions, clear, bound, still=(), when_all=None):
        """Polls /api/v1/alerts until every (alertname, labels) in expected is
        firing, running actions[alertname] when that name first fires and
        when_all once all have; then until those whose name is in clear are
        gone. Any other alert firing, but those of still (fired earlier, by
        design still firing), fails."""
        fired, cleared = {}, {}
        deadline = t0 + bound

        def match(a, want):
            return a["labels"]["alertname"] == want[0] and \
                all(a["labels"].get(k) == v for k, v in want[1].items())
        while time.time() < deadline:
            got = alerts()
            now = got or []
            t = time.time() - t0
            if got is not None:  # an alert no longer firing fires anew later
                firing_now = {labels_key(a) for a in now if a["state"] == "firing"}
                for key in [key for key in seen if key not in firing_now]:
                    del seen[key]
            for a in now:
                if a["state"] == "firing":
                    seen.setdefault(labels_key(a), time.time())
                if a["state"] == "firing" and not any(match(a, w) for w in list(expected) + list(still)):
                    sys.exit("%s: unexpected alert firing: %s" % (name, json.dumps(a["labels"])))
            for k, w in enumerate(expected):
                if k not in fired and any(match(a, w) and a["state"] == "firing" for a in now):
                    first = w[0] not in [expected[f][0] for f in fired]
                    # firing already when this phase began (one of
                    # `for:` 5 minutes): when an earlier phase saw it
                    fired[k] = min(seen[labels_key(a)] for a in now
                                   if match(a, w) and a["state"] == "firing") - t0
                    log("%s: %s %s firing %.0f s after the fault%s" %
                        (name, w[0], w[1], fired[k], " (seen by an earlier phase)" if fired[k] < t - 1 else ""))
                    for a in now:
                        if match(a, w):
                            print("    %s" % a["annotations"].get("summary"))
                    if first and w[0] in actions:
                        actions[w[0]]()
                    if when_all and len(fired) == len(expected):
                        when_all()
            if got is not None:  # each one's clearing once it has fired
                for k, w in enumerate(expected):
                    if k in fired and w[0] in clear and k not in cleared and \
                            not any(match(a, w) for a in now):
                        cleared[k] = t
                        log("%s: %s %s cleared %.0f s after the fault" % (name, w[0], w[1], t))
            if len(fired) == len(expected) and \
                    len(cleared) == len([w for w in expected if w[0] in clear]):
                break
            time.sleep(0.5)
        else:
            sys.exit("%s: within %d s, fired %s, cleared %s, expected %s" %
                     (name, bound, sorted(expected[k][0] for k in fired),
                      sorted(expected[k][0] for k in cleared), [w[0] for w in expected]))
        for k, w in enumerate(expected):
            timings.append((name, w[0], fired[k], cleared.get(k)))

    # ---- phase 1: a broker killed, another frozen ----
    t0 = time.time()
    for p in killed:
        os.kill(p.pid, signal.SIGKILL)
    for p in frozen + [stale]:
        os.kill(p.pid, signal.SIGSTOP)
    log("broker killed-0 killed, broker frozen-0 frozen, broker stale-0 (on t0) frozen")

    def thaw():
        for p in frozen:
            os.kill(p.pid, signal.SIGCONT)
        log("broker frozen-0 continued")

    def thaw_stale():
        os.kill(stale.pid, signal.SIGCONT)
        log("broker stale-0 continued")

    def revive():
        killed[:] = start_broker("killed", 21100)
        log("broker killed-0 started again")
    phase("broker faults", t0, [
        ("RmqnsBrokerGone", {"broker": "killed-0", "cluster": "AlertCluster", "severity": "critical"}),
        ("RmqnsClusterLostBrokerSet", {"broker": "killed-0", "cluster": "AlertCluster"}),
        ("RmqnsBrokerHeartbeatLate", {"broker": "frozen-0", "severity": "warning"}),
        ("RmqnsBrokerHeartbeatExpiring", {"broker": "frozen-0", "severity": "critical"}),
        ("RmqnsBrokerHeartbeatLate", {"broker": "stale-0", "job": "rmqns-table"}),
        ("RmqnsBrokerHeartbeatExpiring", {"broker": "stale-0", "job": "rmqns-table"}),
        ("RmqnsBrokerHeartbeatExpired", {"broker": "stale-0", "job": "rmqns-table", "severity": "critical"}),
    ], {"RmqnsBrokerHeartbeatExpiring": lambda: (thaw(), revive()),
        "RmqnsBrokerHeartbeatExpired": thaw_stale},
        {"RmqnsBrokerGone", "RmqnsClusterLostBrokerSet", "RmqnsBrokerHeartbeatLate",
         "RmqnsBrokerHeartbeatExpiring", "RmqnsBrokerHeartbeatExpired"}, 230)

    # ---- phase 2: the controller leader's node killed ----
    leader = [i for i, n in enumerate(nodes) if metric(n["http"], "rmqns_controller_leader") == 1]
    if len(leader) != 1:
        sys.exit("no single serving leader: %s" % leader)
    leader = leader[0]
    instance = "127.0.0.1:%d" % nodes[leader]["http"]
    t0 = time.time()
    nodes[leader]["proc"].kill()
    nodes[leader]["proc"].wait()
    log("controller leader n%d (%s) killed" % (leader, instance))
    phase("leader killed", t0, [
        ("RmqnsControllerMemberDown", {"self": "n%d" % leader, "instance": instance}),
        ("RmqnsRestarted", {"instance": instance}),
    ], {"RmqnsControllerMemberDown": lambda: (start_node(leader), log("n%d started again" % leader))},
        {"RmqnsControllerMemberDown"}, 120)

    still = [("RmqnsRestarted", {"instance": instance}),
             # fires about 5 minutes after t0's table filled: phase 7
             ("RmqnsControllerHeartbeatTableNearFull", {"job": "rmqns-table"})]

    # ---- phase 3: strays, side by side ----
    t0 = time.time()
    start_broker("orphan", 21300, bid=1)
    start_broker("lonely", 21320, on=(0,))
    stranger = socket.create_connection(("127.0.0.1", nodes[0]["ctl"] + 1), timeout=5)
    stranger.sendall(b"GET / HTTP/1.0\r\n\r\n" + bytes(range(256)) * 4)
    log("orphan-0 registered as brokerId 1 only, lonely-0 with n0 only, garbage sent to n0's Raft port")
    fixed = []

    def lonely_everywhere():
        fixed.append(1)
        if len(fixed) == 2:  # both disagreements seen: the broker reaches n1 and n2
            start_broker("lonely", 21320, on=(1, 2))
            log("lonely-0 registered with n1 and n2 too")
    phase("strays", t0, [
        ("RmqnsBrokerSetWithoutMaster", {"cluster": "AlertCluster", "broker": "orphan-0",
                                         "severity": "critical"}),
        ("RmqnsNodesDisagreeOnBrokers", {"broker": "lonely-0", "id": "0"}),
        ("RmqnsNodesDisagreeOnRoutes", {"job": "rmqns"}),
        ("RmqnsControllerRaftRefused", {"instance": "127.0.0.1:%d" % nodes[0]["http"]}),
    ], {"RmqnsBrokerSetWithoutMaster": lambda: (start_broker("orphan", 21310, topics="orphan"),
                                                log("orphan-0's master registered")),
        "RmqnsNodesDisagreeOnBrokers": lonely_everywhere,
        "RmqnsNodesDisagreeOnRoutes": lonely_everywhere},
        {"RmqnsBrokerSetWithoutMaster", "RmqnsNodesDisagreeOnBrokers", "RmqnsNodesDisagreeOnRoutes"},
        180, still=still)
    stranger.close()
    still.append(("RmqnsControllerRaftRefused", {"instance": "127.0.0.1:%d" % nodes[0]["http"]}))

    # ---- phase 4: a stray node, a controller group of its own, in the job ----
    # (a node started with the wrong peers list): it names another leader,
    # holds another master for ctlset-0, lacks the others' brokers
    set_master = 'rmqns_controller_set_master_id{cluster="AlertCluster",broker="ctlset-0"}'
    main_master = metric(nodes[serving_leader()]["http"], set_master)
    start_rmqns(stray, "s0", "StrayGroup", "s0-127.0.0.1:%d" % stray["ctl"])
    stray_brokers = start_ctl_brokers(["127.0.0.1:%d" % stray["ctl"]], ["127.0.0.1:%d" % stray["proto"]],
                                      "ctlset", "AlertCluster", "stray-brokers")
    wait("ctlset-0's master in the stray group", lambda: (metric(stray["http"], set_master) or 0) > 0, 60)
    if metric(stray["http"], set_master) == main_master:
        other = 2 if main_master != 2 else 1
        r = subprocess.run([ADMIN, "electMaster", "-a", "127.0.0.1:%d" % stray["ctl"], "-c", "AlertCluster",
                            "-bn", "ctlset-0", "-b", str(other)], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            sys.exit("electMaster in the stray group: %s%s" % (r.stdout, r.stderr))
    t0 = time.time()
    scrape(nodes + [stray])
    prom.send_signal(signal.SIGHUP)
    log("stray node s0 (a group of its own, ctlset-0's master %s there, %s in AlertGroup) scraped in the job"
        % (metric(stray["http"], set_master), main_master))

    def unscrape_stray():
        scrape(nodes)
        prom.send_signal(signal.SIGHUP)
        log("s0 no longer scraped")
    phase("stray group", t0, [
        ("RmqnsControllerLeaderDisagreement", {"job": "rmqns", "severity": "warning"}),
        ("RmqnsControllerSetStateDisagreement", {"cluster": "AlertCluster", "broker": "ctlset-0"}),
        ("RmqnsNodesDisagreeOnBrokers", {"broker": "kept-0"}),
        ("RmqnsNodesDisagreeOnRoutes", {"job": "rmqns"}),
    ], {}, {"RmqnsControllerLeaderDisagreement", "RmqnsControllerSetStateDisagreement",
            "RmqnsNodesDisagreeOnBrokers", "RmqnsNodesDisagreeOnRoutes"}, 180,
        # every broker the stray lacks, and the stray's own, disagree alike
        still=still + [("RmqnsNodesDisagreeOnBrokers", {})], when_all=unscrape_stray)
    for p in (stray_brokers, stray["proc"]):
        p.kill()
        p.wait()

    # ---- phase 5: the leader killed and started again until it churns ----
    t0 = time.time()
    still.append(("RmqnsRestarted", {}))  # any node, from here on
    for kills in range(1, 9):
        lead = serving_leader()
        nodes[lead]["proc"].kill()
        nodes[lead]["proc"].wait()
        start_node(lead)
        serving_leader()
        now = alerts() or []
        if any(a["labels"]["alertname"] == "RmqnsControllerLeaderChurn" and a["state"] == "firing"
               for a in now):
            break
        time.sleep(3)
    log("leader killed and restarted %d times" % kills)
    phase("leader churn", t0, [("RmqnsControllerLeaderChurn", {"job": "rmqns"})], {}, set(), 60,
          still=still)
    still.append(("RmqnsControllerLeaderChurn", {"job": "rmqns"}))

    # ---- phase 6: every broker of the controller-mode set killed ----
    t0 = time.time()
    ctl_brokers.kill()
    ctl_brokers.wait()
    lead = serving_leader()
    log("the brokers of set ctlset-0 killed")
    set_killed = [
        ("RmqnsControllerElectionFoundNoMaster", {"instance": "127.0.0.1:%d" % nodes[lead]["http"]}),
        ("RmqnsControllerSetWithoutMaster", {"cluster": "AlertCluster", "broker": "ctlset-0"}),
        ("RmqnsBrokerGone", {"broker": "ctlset-0"}),
        ("RmqnsClusterLostBrokerSet", {"broker": "ctlset-0"}),
    ]
    phase("set killed", t0, set_killed, {}, set(), 120, still=still)
    # what stays: the set is not brought back, and the leader (whose
    # alerts these are) moves in the next phase
    still += [("RmqnsControllerElectionFoundNoMaster", {}),
              ("RmqnsControllerSetWithoutMaster", {"broker": "ctlset-0"}),
              ("RmqnsBrokerGone", {"broker": "ctlset-0"}),
              ("RmqnsClusterLostBrokerSet", {"broker": "ctlset-0"})]

    # ---- phase 7: t0's heartbeat table near its bound since the start ----
    def raise_bound():
        full["proc"].terminate()
        full["proc"].wait()
        start_table_node(10)
        log("t0 restarted with controllerMaxLiveBrokers=10")
    table_alert = ("RmqnsControllerHeartbeatTableNearFull",
                   {"job": "rmqns-table", "instance": "127.0.0.1:%d" % full["http"]})
    phase("table full", table_full_at, [table_alert], {table_alert[0]: raise_bound}, {table_alert[0]},
          max(420, time.time() - table_full_at + 120), still=still)

    # ---- phase 8: two of the three nodes killed ----
    lead = leader_index()
    down = [lead if lead is not None else 0]
    down.append((down[0] + 1) % 3)
    t0 = time.time()
    for i in down:
        nodes[i]["proc"].kill()
        nodes[i]["proc"].wait()
    log("n%d and n%d killed" % tuple(down))

    def restart_both():
        for i in down:
            start_node(i)
        log("n%d and n%d started again" % tuple(down))
    quorum = [("RmqnsControllerNoLeader", {"job": "rmqns", "severity": "critical"})]
    for i in down:
        inst = "127.0.0.1:%d" % nodes[i]["http"]
        quorum += [("RmqnsControllerMemberDown", {"self": "n%d" % i, "instance": inst}),
                   ("RmqnsDown", {"instance": inst})]
    phase("two nodes killed", t0, quorum, {},
          {"RmqnsControllerNoLeader", "RmqnsControllerMemberDown", "RmqnsDown"}, 180, still=still,
          when_all=restart_both)
    print("\nalerts-live-test: from fault to firing, and to clearing:")
    print("  %-16s %-38s %8s %8s" % ("fault", "alert", "firing", "cleared"))
    for name, alert, f, c in timings:
        print("  %-16s %-38s %7.0fs %8s" % (name, alert, f, "%.0fs" % c if c is not None else "-"))
    print("  (RmqnsRestarted and ...LeaderChurn stay firing for the 15 minutes they look back,\n"
          "   ...RaftRefused and ...ElectionFoundNoMaster for 10; the set killed is not brought\n"
          "   back: its alerts clear once its brokers return and a master is elected)")
finally:
    stop_all()
PY
if [ "$rc" != 0 ]; then
	for f in "$TMP"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f")" >&2; tail -5 "$f" >&2; }; done
	rm -rf "$TMP"
	fail "see above"
fi
rm -rf "$TMP"
echo "alerts-live-test: ok"
