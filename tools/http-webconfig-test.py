#!/usr/bin/env python3
"""The HTTP port behind TLS and basic authentication, scraped by a real
Prometheus.

One rmqns node with httpWebConfigFile (a certificate signed by a CA made
here with openssl, a bcrypt user made with crypt(3)) and a short-lived
Prometheus on loopback scraping it three ways: scheme https with tls_config
(the CA, the name checked) and basic_auth (password_file), which must be
up == 1; the same with a wrong password, and plain http, which must both be
up == 0. Before that, the node itself is asked: 401 without credentials or
with a wrong password, 200 with the right one, /healthz open.

    tools/http-webconfig-test.py [BUILD_DIR]   (default build)

Installs Debian's prometheus package when it is missing. Ends only the
processes it started. KEEP=1 keeps the temporary directory.
"""
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # libxcrypt's crypt(3); deprecated since Python 3.11, in Debian 12's 3.11

T0 = time.time()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def step(what):
    print("http-webconfig-test: %s (%d s)" % (what, time.time() - T0), flush=True)


class Failed(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, ok, seconds, proc=None, log=None):
    """Waits for ok() to be true; fails after `seconds` or when proc exits."""
    deadline = time.time() + seconds
    while not ok():
        if proc is not None and proc.poll() is not None:
            raise Failed("%s: the process exited%s" % (what, "\n" + open(log).read() if log else ""))
        if time.time() > deadline:
            raise Failed("%s: not within %d s%s" % (what, seconds, "\n" + open(log).read() if log else ""))
        time.sleep(0.2)


def make_files(tmp, password):
    cmds = [
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key "
        "-out ca.pem -days 2 -subj /CN=rmqns-webconfig-test-ca",
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout http.key "
        "-out http.csr -subj /CN=rmqns-http",
        "printf 'subjectAltName=DNS:rmqns-http,IP:127.0.0.1\\n' >san.ext",
        "openssl x509 -req -in http.csr -CA ca.pem -CAkey ca.key -set_serial 7 -days 2 "
        "-extfile san.ext -out http.pem",
    ]
    for c in cmds:
        r = subprocess.run(c, shell=True, cwd=tmp, capture_output=True, text=True)
        if r.returncode:
            raise Failed("openssl: %s\n%s" % (c, r.stderr))
    digest = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
    if not digest or not digest.startswith("$2b$10$"):
        raise Failed("crypt(3) made no bcrypt hash: %r" % digest)
    with open(os.path.join(tmp, "web.yml"), "w") as f:
        f.write("tls_server_config:\n  cert_file: http.pem\n  key_file: http.key\n"
                "  min_version: TLS12\nbasic_auth_users:\n  prometheus: '%s'\n" % digest)
    for name, text in (("password", password), ("wrong-password", "wrong-" + password)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)


def http_status(url, cafile, user=None, password=None):
    req = urllib.request.Request(url)
    if user is not None:
        token = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    ctx = ssl.create_default_context(cafile=cafile)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def ask_the_node(http_port, tmp, password):
    url = "https://127.0.0.1:%d" % http_port
    ca = os.path.join(tmp, "ca.pem")
    checks = [
        ("/metrics without credentials", http_status(url + "/metrics", ca), 401),
        ("/metrics with a wrong password", http_status(url + "/metrics", ca, "prometheus", "wrong"), 401),
        ("/metrics with the password", http_status(url + "/metrics", ca, "prometheus", password), 200),
        ("/healthz without credentials", http_status(url + "/healthz", ca), 200),
    ]
    for what, got, want in checks:
        if got != want:
            raise Failed("%s: %s, not %d" % (what, got, want))
    step("the node: 401 without or with a wrong password, 200 with it, /healthz open")


def prometheus_config(tmp, http_port):
    target = "['127.0.0.1:%d']" % http_port
    ca = os.path.join(tmp, "ca.pem")

    def https_job(name, password_file, server_name):
        return ("  - job_name: %s\n    scheme: https\n    tls_config:\n      ca_file: %s\n%s"
                "    basic_auth:\n      username: prometheus\n      password_file: %s\n"
                "    static_configs:\n      - targets: %s\n"
                % (name, ca, "      server_name: %s\n" % server_name if server_name else "",
                   os.path.join(tmp, password_file), target))
    return ("global:\n  scrape_interval: 1s\nscrape_configs:\n"
            + https_job("rmqns-https", "password", "rmqns-http")
            + https_job("rmqns-wrong-password", "wrong-password", None)
            + "  - job_name: rmqns-plaintext\n    static_configs:\n      - targets: %s\n" % target)


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]


def check_scrapes(base):
    want = {"rmqns-https": 1, "rmqns-wrong-password": 0, "rmqns-plaintext": 0}
    state = {}

    def settled():
        # three scrapes of each job, so one is not a fluke
        seen = {r["metric"]["job"] for r in api(base, "/api/v1/query", query="count_over_time(up[1m]) >= 3")["result"]}
        state["up"] = {r["metric"]["job"]: int(float(r["value"][1]))
                       for r in api(base, "/api/v1/query", query="up")["result"]}
        return seen >= set(want) and all(state["up"].get(j) == v for j, v in want.items())
    try:
        until("up per job", settled, 60)
    finally:
        targets = {t["labels"]["job"]: t for t in api(base, "/api/v1/targets")["activeTargets"]}
        for job, v in sorted(want.items()):
            t = targets.get(job, {})
            print("  %-22s up == %s (want %d)  %s" % (job, state.get("up", {}).get(job), v,
                                                      t.get("lastError", "")))
    series = api(base, "/api/v1/query", query='rmqns_build_info{job="rmqns-https"}')["result"]
    if not series:
        raise Failed("no rmqns_build_info scraped through TLS and basic authentication")
    step("Prometheus: up 1 through https + basic_auth, up 0 with a wrong password and over plaintext")


def main():
    build = os.path.abspath(os.path.join(ROOT, sys.argv[1] if len(sys.argv) > 1 else "build"))
    rmqns = os.path.join(build, "rmqns")
    if not os.access(rmqns, os.X_OK):
        raise Failed("%s is not built" % rmqns)
    if not shutil.which("prometheus"):
        step("installing prometheus")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    if not shutil.which("openssl"):
        raise Failed("openssl is needed")

    tmp = tempfile.mkdtemp(prefix="rmqns-webconfig-")
    procs = []
    try:
        step("certificates and the bcrypt hash")
        password = "scrape-%d" % int.from_bytes(os.urandom(4), "big")
        make_files(tmp, password)

        http_port, prom_port = free_port(), free_port()
        step("starting rmqns (HTTP port %d, TLS and basic authentication)" % http_port)
        node_dir = os.path.join(tmp, "rmqns")
        os.mkdir(node_dir)
        out, log = os.path.join(node_dir, "stdout.txt"), os.path.join(node_dir, "stderr.txt")
        procs.append(subprocess.Popen(
            [rmqns, "--listenPort=0", "--bindAddress=127.0.0.1", "--httpPort=%d" % http_port,
             "--httpWebConfigFile=" + os.path.join(tmp, "web.yml")],
            cwd=node_dir, env=dict(os.environ, HOME=node_dir),
            stdout=open(out, "w"), stderr=open(log, "w")))
        until("rmqns boot", lambda: "boot success" in open(out).read(), 20, procs[-1], log)
        ask_the_node(http_port, tmp, password)

        step("starting prometheus on 127.0.0.1:%d" % prom_port)
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write(prometheus_config(tmp, http_port))
        prom_log = os.path.join(tmp, "prometheus.log")
        procs.append(subprocess.Popen(
            ["prometheus", "--config.file=" + os.path.join(tmp, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % prom_port, "--log.level=warn"],
            stdout=open(prom_log, "w"), stderr=subprocess.STDOUT))
        base = "http://127.0.0.1:%d" % prom_port

        def ready():
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=2):
                    return True
            except OSError:
                return False
        until("prometheus ready", ready, 30, procs[-1], prom_log)
        step("waiting for the scrapes (up per job, through the Prometheus API)")
        check_scrapes(base)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if os.environ.get("KEEP") == "1":
            print("http-webconfig-test: keeping " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    step("PASS")


if __name__ == "__main__":
    try:
        main()
    except (Failed, subprocess.CalledProcessError) as e:
        print("http-webconfig-test: FAIL: %s" % e, file=sys.stderr)
        sys.exit(1)
