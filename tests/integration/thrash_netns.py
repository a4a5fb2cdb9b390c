#!/usr/bin/env python3
"""thrash_netns.py — the driver of test_thrash_netns.sh (a helper, not a
test): random faults on a netns cluster (infra/netns-cluster.sh) under a
verified S3 load, then every acknowledged byte checked. What Ceph's
thrashers do to OSDs, here to every process kind and to the network.

  thrash_netns.py --dir DIR --cl NETNS_CLUSTER_SH --seconds N --seed S
                  [--writers 4] [--faults osd,drive,meta,node,isolate,pause,slow]
                  [--max-faulted 2] [--live-mib 200]

The cluster is up already (DIR holds its state and credentials).

The load: WRITERS threads, each owning its keys (no two threads write a
key, so each key's history is one thread's order): PUTs of new keys
(0 B, inline up to 4 KiB, EC up to 4 MiB, multipart 6-11 MiB), overwrites,
DELETEs and GETs (a writer whose acknowledged bytes pass --live-mib
deletes instead of writing, so a long run stays within its drives), to
the gateways of nodes not under a fault (a request
already on its way when a fault starts fails like a client's would). The
model per key: the last acknowledged value (size and SHA-256, or absent),
and once any write of it failed (timeout, 5xx, reset: the write may or
may not have happened, now or later) the key is frozen: never written
again, and a read may return the acknowledged value or any of the failed
writes' values. A GET answering 200 with other bytes, or 404 for a key
that must exist, is a violation at once; a GET that fails is only
unavailability (counted).

The faults, one node at most once at a time and at most --max-faulted
nodes at a time (EC 4+2 over nodes as failure domains, six meta voters:
two nodes lost is what the cluster must survive):
  osd      SIGKILL one OSD, restart it on its data after 4-20 s
  drive    SIGKILL one OSD and delete its device and index (a dead drive),
           start it again on a blank drive after 4-20 s; only when every
           PG is active+clean and no other fault is on (once drawn, no new
           fault starts until then), and the node counts as faulted until
           every PG is active+clean again (the lost shards rebuilt)
  meta     SIGKILL one meta member, restart it after 4-20 s
  node     SIGKILL every process of a node, restart them after 4-20 s
  isolate  a node's link down (a partition), up again after 4-20 s
  pause    SIGSTOP one process of a node (a stall: swap, a VM hiccup),
           SIGCONT after 2-8 s
  slow     a node's link delayed 20-100 ms each way and losing 0-3 % of
           its packets (tc netem), for 4-20 s

At the end: every fault ended, `iolake-admin cluster wait-healthy` (every
member answering with a leader, every OSD up and in, every PG
active+clean), then every key read (retried while the cluster answers
5xx) and the bucket listed: each key's bytes must be one its model
allows, each listed key one written, each acknowledged key listed. Any
process that exited without being killed here is a violation too.

Prints the fault timeline and the counts; exit 0 when nothing was
violated, 1 otherwise. SigV4 by hand (s3sign.py), UNSIGNED-PAYLOAD,
keep-alive per gateway.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import s3sign  # noqa: E402

BUCKET = "thrash"
S3_PORT = 9000
TIMEOUT = 20
PART = 5 << 20
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"

T0 = time.time()
out_lock = threading.Lock()


def say(*a):
    with out_lock:
        print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def body_of(seed, key, gen, size):
    """The bytes of KEY's write number GEN: derived, never stored."""
    return random.Random("%s/%s/%d" % (seed, key, gen)).randbytes(size)


def code_of(st, data):
    """ "HTTP 503 SlowDown": the status and S3's error code, if any."""
    return ("HTTP %d %s" % (st, s3sign.error_code(data[:2000]))).strip()


def digest(b):
    return (len(b), hashlib.sha256(b).hexdigest())


class Cluster:
    """The cluster's state file, its script and its processes."""

    def __init__(self, d, cl):
        self.dir, self.cl = d, cl
        st = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(d, "state")) if "=" in line)
        self.nodes, self.osds = int(st["NODES"]), int(st["OSDS"])
        self.subnet, self.build = st["SUBNET"], st["BUILD"]
        cred = dict(line.strip().split("=", 1) for line in open(os.path.join(d, "credentials")) if "=" in line)
        self.ak, self.sk = cred["AWS_ACCESS_KEY_ID"], cred["AWS_SECRET_ACCESS_KEY"]
        self.meta = ",".join("%s.%d:7000" % (self.subnet, i) for i in range(1, self.nodes + 1))

    def ep(self, n):
        return ("%s.%d" % (self.subnet, n), S3_PORT)

    def run(self, *args, timeout=180):
        """netns-cluster.sh VERB --dir DIR ARGS: (ok, its stderr's tail)."""
        verb, rest = args[0], [str(a) for a in args[1:]]
        try:
            p = subprocess.run([self.cl, verb, "--dir", self.dir] + rest, capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, "timed out after %d s" % timeout
        tail = " | ".join((p.stderr + p.stdout).strip().splitlines()[-4:])
        return p.returncode == 0, tail

    def admin(self, *args, timeout=60):
        try:
            p = subprocess.run([os.path.join(self.build, "iolake-admin"), "--meta", self.meta,
                                "--timeout", "3s"] + [str(a) for a in args],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, ""
        return p.returncode == 0, p.stdout + p.stderr

    def pgs_clean(self):
        ok, out = self.admin("--json", "pg", "ls")
        if not ok:
            return False
        try:
            pgs = json.loads(out)["pgs"]
        except (ValueError, KeyError):
            return False
        return bool(pgs) and all(p.get("state") == "active+clean" for p in pgs)

    def procs(self):
        """{(node, role): pid} of the newest process recorded per role, and
        whether it is alive and ours."""
        last = {}
        for line in open(os.path.join(self.dir, "pids")):
            f = line.split()
            if len(f) == 3:
                last[(int(f[0][1:]), f[1])] = int(f[2])
        return {k: (pid, self.ours(pid)) for k, pid in last.items()}

    def ours(self, pid):
        """A process (not a thread: /proc/TID answers too, and thread ids
        reuse dead PIDs) of this cluster (netns-cluster.sh's marker)."""
        try:
            st = open("/proc/%d/status" % pid).read()
            env = open("/proc/%d/environ" % pid, "rb").read().split(b"\0")
        except OSError:
            return False
        return ("\nTgid:\t%d\n" % pid) in st and ("IOLAKE_NETNS_CLUSTER=%s" % self.dir).encode() in env


class Conn:
    """Keep-alive connections to the gateways, one per node, and SigV4."""

    def __init__(self, cl):
        self.cl, self.sg, self.c = cl, s3sign.Signer(cl.ak, cl.sk), {}

    def req(self, node, method, key, query=None, body=b""):
        """(status, body) or raises OSError / http.client errors."""
        host, port = self.cl.ep(node)
        path = "/%s/%s" % (BUCKET, key) if key is not None else "/%s" % BUCKET
        c = self.c.get(node)
        if c is None:
            c = self.c[node] = http.client.HTTPConnection(host, port, timeout=TIMEOUT)
        hdr = {"host": "%s:%d" % (host, port), "content-length": str(len(body))}
        h, _, _ = self.sg.sign_headers(method, path, hdr, "UNSIGNED-PAYLOAD", query=query)
        url = urllib.parse.quote(path, safe="/~")
        if query:
            url += "?" + "&".join(urllib.parse.quote(k, safe="-_.~") +
                                  ("=" + urllib.parse.quote(v, safe="-_.~") if v != "" else "")
                                  for k, v in sorted(query.items()))
        try:
            st, rh, data = s3sign.exchange(c, method, url, h, body)
            if rh.get("connection", "").lower() == "close":
                self.drop(node)
            return st, data
        except Exception:
            self.drop(node)
            raise

    def drop(self, node):
        c = self.c.pop(node, None)
        if c:
            c.close()


class Key:
    __slots__ = ("name", "gen", "acked", "doubts", "frozen")

    def __init__(self, name):
        self.name, self.gen, self.acked, self.doubts, self.frozen = name, 0, None, [], False

    def allowed(self):
        return [self.acked] + self.doubts

    def describe(self):
        v = "acknowledged %d bytes" % self.acked[0] if self.acked else "acknowledged absent"
        return v + (", then %d write(s) failed (frozen)" % len(self.doubts) if self.frozen else "")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {}
        self.violations = []

    def inc(self, what, n=1):
        with self.lock:
            self.c[what] = self.c.get(what, 0) + n

    def violate(self, msg):
        with self.lock:
            self.violations.append(msg)
        say("VIOLATION:", msg)


class Faults:
    """Which nodes are under a fault now (the writers avoid their gateways)."""

    def __init__(self, nodes):
        self.lock = threading.Lock()
        self.faulted = {}      # node -> what
        self.nodes = nodes

    def healthy(self):
        with self.lock:
            return [n for n in range(1, self.nodes + 1) if n not in self.faulted]


class Writer(threading.Thread):
    def __init__(self, i, cl, faults, stats, seed, stop, live_bytes):
        super().__init__(daemon=True)
        self.live_max, self.live_bytes = live_bytes, 0
        self.i, self.cl, self.faults, self.stats, self.stop = i, cl, faults, stats, stop
        self.seed = seed
        self.rnd = random.Random("%s/w%d" % (seed, i))
        self.conn = Conn(cl)
        self.keys = []       # every key this writer made
        self.live = []       # keys it may still write (not frozen)

    def node(self):
        h = self.faults.healthy()
        return self.rnd.choice(h) if h else self.rnd.randint(1, self.cl.nodes)

    def size(self):
        r = self.rnd.random()
        if r < 0.03:
            return 0
        if r < 0.45:
            return self.rnd.randint(1, 4096)
        if r < 0.80:
            return self.rnd.randint(4097, 256 << 10)
        if r < 0.96:
            return self.rnd.randint(256 << 10, 4 << 20)
        return self.rnd.randint(6 << 20, 11 << 20)

    def fail_write(self, k, value, why):
        """A write of K with unknown outcome: K frozen, VALUE one it may hold."""
        k.doubts.append(value)
        if not k.frozen:
            k.frozen = True
            self.live.remove(k)
        self.stats.inc("writes failed")
        self.stats.inc("failed: " + why)

    def put(self, k):
        k.gen += 1
        n = self.size()
        body = body_of(self.seed, k.name, k.gen, n)
        value = digest(body)
        node = self.node()
        try:
            if n > PART:
                st, data = self.multipart(node, k.name, body)
            else:
                st, data = self.conn.req(node, "PUT", k.name, body=body)
        except Exception as e:
            return self.fail_write(k, value, type(e).__name__)
        if st == 200:
            self.live_bytes += n - (k.acked[0] if k.acked else 0)
            k.acked, k.doubts = value, []
            self.stats.inc("PUT acked")
            self.stats.inc("bytes acked", n)
        else:
            self.fail_write(k, value, ("MPU " if n > PART else "PUT ") + code_of(st, data))

    def multipart(self, node, key, body):
        st, data = self.conn.req(node, "POST", key, query={"uploads": ""})
        if st != 200:
            return st, data
        uid = ET.fromstring(data).find(NS + "UploadId").text
        parts = []
        for pn, off in enumerate(range(0, len(body), PART), 1):
            st, data = self.conn.req(node, "PUT", key, query={"partNumber": str(pn), "uploadId": uid},
                                     body=body[off:off + PART])
            if st != 200:
                return st, data
            parts.append(pn)
        # The ETags are not checked by IOLake's CompleteMultipartUpload
        # against anything this test knows; list them back from the parts.
        st, data = self.conn.req(node, "GET", key, query={"uploadId": uid})
        if st != 200:
            return st, data
        tags = {int(p.find(NS + "PartNumber").text): p.find(NS + "ETag").text
                for p in ET.fromstring(data).iter(NS + "Part")}
        xml = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
            "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (pn, tags.get(pn, ""))
            for pn in parts)
        st, data = self.conn.req(node, "POST", key, query={"uploadId": uid}, body=xml.encode())
        # S3 may answer 200 with an error document once it began answering.
        if st == 200 and b"<Error>" in data:
            return 500, data
        if st == 200:
            self.stats.inc("multipart acked")
        return st, data

    def delete(self, k):
        try:
            st, data = self.conn.req(self.node(), "DELETE", k.name)
        except Exception as e:
            return self.fail_write(k, None, type(e).__name__)
        if st == 204:
            self.live_bytes -= k.acked[0] if k.acked else 0
            k.acked, k.doubts = None, []
            self.stats.inc("DELETE acked")
        else:
            self.fail_write(k, None, "DELETE " + code_of(st, data))

    def get(self, k, final=False):
        """Check K against its model. Returns True when checked, False when
        the cluster did not answer (5xx, timeout)."""
        try:
            st, data = self.conn.req(self.node(), "GET", k.name)
        except Exception:
            self.stats.inc("GET unavailable")
            return False
        allowed = k.allowed()
        if st == 200:
            if digest(data) not in allowed:
                self.stats.violate("%s: GET returned %d bytes (sha256 %s...) that no write of it "
                                   "had; allowed %s" % (k.name, len(data), digest(data)[1][:12],
                                                        [a and (a[0], a[1][:12]) for a in allowed]))
        elif st == 404:
            if None not in allowed:
                self.stats.violate("%s: GET 404 but acknowledged %s bytes%s" % (
                    k.name, k.acked and k.acked[0], " (final check)" if final else ""))
        else:
            self.stats.inc("GET unavailable")
            self.stats.inc("GET " + code_of(st, data))
            return False
        self.stats.inc("GET checked")
        return True

    def run(self):
        n = 0
        while not self.stop.is_set():
            r = self.rnd.random()
            if self.live_bytes > self.live_max and r < 0.65:
                held = [k for k in self.live if k.acked]
                self.delete(self.rnd.choice(held or self.live))
            elif r < 0.40 or len(self.live) < 4:
                k = Key("w%d/%06d" % (self.i, n))
                n += 1
                self.keys.append(k)
                self.live.append(k)
                self.put(k)
            elif r < 0.55:
                self.put(self.rnd.choice(self.live))
            elif r < 0.65:
                self.delete(self.rnd.choice(self.live))
            else:
                self.get(self.rnd.choice(self.keys))


class Thrasher(threading.Thread):
    def __init__(self, cl, faults, stats, seed, kinds, max_faulted, stop):
        super().__init__(daemon=True)
        self.cl, self.faults, self.stats, self.stop = cl, faults, stats, stop
        self.rnd = random.Random("%s/thrash" % seed)
        self.kinds, self.max = kinds, max_faulted
        self.active = []            # [end_time, node, kind, undo-callable]
        self.rebuilding = None      # node whose destroyed drive is being rebuilt
        self.dead = set()           # pids found dead without a fault of ours
        self.last_tail = ""         # what the last netns-cluster.sh call said
        self.drive_wanted = False   # a drive fault waits for a clean cluster
        self.timeline = []

    def note(self, msg):
        self.timeline.append("%6.1fs %s" % (time.time() - T0, msg))
        say(msg)

    def cmd(self, *args):
        ok, tail = self.cl.run(*args)
        self.last_tail = tail
        if not ok:
            self.stats.violate("netns-cluster.sh %s failed: %s" % (" ".join(map(str, args)), tail))
        return ok

    def begin(self):
        busy = set(self.faults.faulted)
        free = [n for n in range(1, self.cl.nodes + 1) if n not in busy]
        if len(busy) >= self.max or not free:
            return
        kind = "drive" if self.drive_wanted else self.rnd.choice(self.kinds)
        if kind == "drive" and (self.rebuilding or busy or not self.cl.pgs_clean()):
            # A drive goes only from active+clean with no other fault: no
            # new fault until then (else, with faults every few seconds,
            # that moment never comes).
            self.drive_wanted = True
            return
        self.drive_wanted = False
        n = self.rnd.choice(free)
        j = self.rnd.randint(1, self.cl.osds)
        dur = self.rnd.uniform(2, 8) if kind == "pause" else self.rnd.uniform(4, 20)
        with self.faults.lock:
            self.faults.faulted[n] = kind
        time.sleep(0.5)   # let the writers' requests to it already sent finish
        roles = []                  # the processes this fault kills
        if kind == "osd":
            roles = ["osd%d" % j]
            ok = self.cmd("kill-osd", n, j)
            undo = lambda: self.cmd("start-osd", n, j)
            what = "osd%d of node %d killed" % (j, n)
        elif kind == "drive":
            roles = ["osd%d" % j]
            ok = self.cmd("kill-osd", n, j, "--destroy")
            self.rebuilding = n
            undo = lambda: self.cmd("start-osd", n, j)
            what = "osd%d of node %d killed, its drive destroyed" % (j, n)
        elif kind == "meta":
            roles = ["meta"]
            ok = self.cmd("kill-meta", n)
            undo = lambda: self.cmd("start-meta", n)
            what = "meta member of node %d killed" % n
        elif kind == "node":
            roles = ["meta", "gw"] + ["osd%d" % x for x in range(1, self.cl.osds + 1)]
            ok = self.cmd("kill", n)
            undo = lambda: self.cmd("start", n)
            what = "node %d killed" % n
        elif kind == "slow":
            delay, loss = self.rnd.randint(20, 100), self.rnd.choice([0, 0.5, 1, 3])
            ok, tail = self.cl.run("slow", n, "--delay", "%dms" % delay, "--loss", "%g%%" % loss)
            if not ok and ("not available" in tail or "tc: command not found" in tail):
                self.kinds = [k for k in self.kinds if k != "slow"]
                self.note("tc netem not available here (%s): no more slow faults" % tail[-80:])
            elif not ok:
                self.stats.violate("netns-cluster.sh slow %d failed: %s" % (n, tail))
            undo = lambda: self.cmd("unslow", n)
            what = "node %d slowed (%d ms, %g %% loss)" % (n, delay, loss)
        elif kind == "isolate":
            ok = self.cmd("isolate", n)
            undo = lambda: self.cmd("heal", n)
            what = "node %d isolated" % n
        else:   # pause
            procs = [(role, pid) for (node, role), (pid, alive) in self.cl.procs().items()
                     if node == n and alive]
            if not procs:
                ok, undo, what = False, None, ""
            else:
                role, pid = self.rnd.choice(procs)
                os.kill(pid, signal.SIGSTOP)
                ok = True
                def undo():
                    try:
                        os.kill(pid, signal.SIGCONT)
                    except ProcessLookupError:
                        pass   # died while stopped: watch() says so
                    return True
                what = "node %d's %s paused (SIGSTOP)" % (n, role)
        if not ok:
            with self.faults.lock:
                self.faults.faulted.pop(n, None)
            return
        self.stats.inc("fault: " + kind)
        said = self.last_tail.rsplit("netns-cluster.sh: ", 1)[-1] if kind in ("osd", "drive", "meta") else ""
        self.note("%s for %.0f s%s" % (what, dur, " [%s]" % said if said else ""))
        self.active.append([time.time() + dur, n, kind, undo, what, roles])

    def watch(self):
        """A process dead that no fault of ours killed: say so at once."""
        killed = {(f[1], r) for f in self.active for r in f[5]}
        for (n, role), (pid, alive) in self.cl.procs().items():
            if not alive and (n, role) not in killed and pid not in self.dead:
                self.dead.add(pid)
                self.stats.violate("node %d's %s (pid %d) died by itself; log tail: %s" % (
                    n, role, pid, " | ".join(tail_of(self.cl, n, role))))

    def end(self, f):
        _, n, kind, undo, what, _ = f
        t = time.time()
        ok = undo()
        self.note("%s: ended%s (%.1f s)" % (what, "" if ok else " (FAILED)", time.time() - t))
        self.active.remove(f)
        if kind != "drive":
            with self.faults.lock:
                self.faults.faulted.pop(n, None)

    def settle_drive(self, wait=False):
        """The destroyed drive's node stays faulted until every PG is clean."""
        if self.rebuilding is None or any(f[2] == "drive" for f in self.active):
            return
        deadline = time.time() + (300 if wait else 0)
        while True:
            if self.cl.pgs_clean():
                self.note("node %d: every PG active+clean again after its drive's rebuild" % self.rebuilding)
                with self.faults.lock:
                    self.faults.faulted.pop(self.rebuilding, None)
                self.rebuilding = None
                return
            if time.time() >= deadline:
                if wait:
                    self.stats.violate("PGs not all active+clean 300 s after node %d's drive came back"
                                       % self.rebuilding)
                return
            time.sleep(2)

    def run(self):
        next_at = time.time() + 3
        last_settle = 0
        while not self.stop.is_set():
            now = time.time()
            for f in sorted(self.active, key=lambda f: f[0]):
                if f[0] <= now:
                    self.end(f)
            if now - last_settle > 3:
                self.settle_drive()
                self.watch()
                last_settle = now
            if now >= next_at:
                self.begin()
                next_at = time.time() + self.rnd.uniform(1, 6)
            time.sleep(0.2)

    def finish(self):
        for f in sorted(self.active, key=lambda f: f[0]):
            self.end(f)
        self.settle_drive(wait=True)


def tail_of(cl, n, role, lines=3):
    log = os.path.join(cl.dir, "n%d" % n, "%s.log" % role)
    return open(log, errors="replace").read().splitlines()[-lines:] if os.path.exists(log) else []


def core_stack(cl, n, role):
    """The stack of the core in node N's directory, if one is there."""
    core = os.path.join(cl.dir, "n%d" % n, "core")
    if not os.path.exists(core):
        return "no core in %s (ulimit -c, /proc/sys/kernel/core_pattern)" % os.path.dirname(core)
    binary = os.path.join(cl.build, "iolake-" + ("osd" if role.startswith("osd") else role))
    try:
        p = subprocess.run(["gdb", "-batch", "-nx", "-ex", "thread apply all bt 12", binary, core],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "core %s, no stack (%s)" % (core, e)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("#", "Thread", "Program terminated"))]
    return "core %s:\n      " % core + "\n      ".join(lines[:80])


def final_check(cl, writers, stats, seed):
    dead = [(n, role, pid) for (n, role), (pid, alive) in cl.procs().items() if not alive]
    for n, role, pid in dead:
        stats.violate("node %d's %s (pid %d) is not running at the end: %s; %s" % (
            n, role, pid, " | ".join(tail_of(cl, n, role)), core_stack(cl, n, role)))
    say("final check: every fault ended; waiting for the cluster to be healthy")
    t = time.time()
    ok, out = cl.admin("cluster", "wait-healthy", "60" if dead else "300", timeout=330)
    if not ok:
        stats.violate("cluster not healthy after the last fault: %s" % out.strip()[-400:])
    else:
        say("healthy after %.1f s" % (time.time() - t))
    # What the OSDs hold once every PG says active+clean: pg check lists
    # stripes lacking a shard on an up slot (shown, not judged here: the
    # shards of writes that failed count too; the reads below judge).
    ok, out = cl.admin("pg", "check", timeout=300)
    say("pg check (%s):\n    %s" % ("clean" if ok else "stripes lacking shards",
                                     "\n    ".join(out.strip().splitlines()[:40])))
    keys = [(w, k) for w in writers for k in w.keys]
    say("reading back %d keys" % len(keys))
    for w, k in keys:
        for attempt in range(60):
            if w.get(k, final=True):
                break
            time.sleep(1)
        else:
            stats.violate("%s: no answer to GET in 60 s after the cluster was healthy (%s)"
                          % (k.name, k.describe()))
    # The listing: exactly the keys that may exist.
    conn = Conn(cl)
    listed, token = set(), None
    while True:
        q = {"list-type": "2", "max-keys": "1000"}
        if token:
            q["continuation-token"] = token
        st, data = conn.req(1, "GET", None, query=q)
        if st != 200:
            stats.violate("ListObjectsV2 answered %d after the cluster was healthy" % st)
            break
        doc = ET.fromstring(data)
        listed.update(c.find(NS + "Key").text for c in doc.iter(NS + "Contents"))
        if doc.findtext(NS + "IsTruncated") != "true":
            break
        token = doc.findtext(NS + "NextContinuationToken")
    model = {k.name: k for _, k in keys}
    for name in sorted(listed - set(model)):
        stats.violate("listed key %s was never written" % name)
    for name, k in sorted(model.items()):
        allowed = k.allowed()
        if name in listed and all(a is None for a in allowed):
            stats.violate("%s: listed, but its last acknowledged write deleted it" % name)
        if name not in listed and None not in allowed:
            stats.violate("%s: acknowledged (%d bytes) but not listed" % (name, k.acked[0]))
    live = sum(1 for k in model.values() if k.acked is not None)
    say("listed %d keys; %d with an acknowledged value, %d frozen after a failed write"
        % (len(listed), live, sum(1 for k in model.values() if k.frozen)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cl", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", default="1")
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--faults", default="osd,drive,meta,node,isolate,pause,slow")
    ap.add_argument("--max-faulted", type=int, default=2)
    ap.add_argument("--live-mib", type=int, default=200, help="acknowledged bytes per writer")
    a = ap.parse_args()
    kinds = a.faults.split(",")
    bad = [k for k in kinds if k not in ("osd", "drive", "meta", "node", "isolate", "pause", "slow")]
    if bad:
        sys.exit("thrash_netns.py: unknown fault kinds %s" % bad)
    cl = Cluster(a.dir, a.cl)
    stats, stop, faults = Stats(), threading.Event(), Faults(cl.nodes)
    st, data = Conn(cl).req(1, "PUT", None)
    if st != 200:
        sys.exit("thrash_netns.py: create bucket: HTTP %d %s" % (st, data[:200]))
    say("seed %s: %d writers, faults %s, at most %d nodes at a time, %.0f s"
        % (a.seed, a.writers, ",".join(kinds), a.max_faulted, a.seconds))
    writers = [Writer(i, cl, faults, stats, a.seed, stop, a.live_mib << 20) for i in range(a.writers)]
    th = Thrasher(cl, faults, stats, a.seed, kinds, a.max_faulted, stop)
    for w in writers:
        w.start()
    th.start()
    last = time.time()
    while time.time() - T0 < a.seconds:
        time.sleep(1)
        if time.time() - last >= 10:
            last = time.time()
            with stats.lock:
                c = dict(stats.c)
            say("PUT %d, MPU %d, DELETE %d acked; %d writes failed; GET %d checked, %d unavailable; "
                "faulted now %s" % (c.get("PUT acked", 0), c.get("multipart acked", 0),
                                    c.get("DELETE acked", 0), c.get("writes failed", 0),
                                    c.get("GET checked", 0), c.get("GET unavailable", 0),
                                    dict(faults.faulted) or "none"))
    stop.set()
    th.join()
    for w in writers:
        w.join()
    th.finish()
    final_check(cl, writers, stats, a.seed)
    print("\nfault timeline:")
    for line in th.timeline:
        print("  " + line)
    print("\ncounts:")
    for k in sorted(stats.c):
        print("  %-28s %d" % (k, stats.c[k]))
    if stats.violations:
        print("\n%d VIOLATIONS (seed %s):" % (len(stats.violations), a.seed))
        for v in stats.violations[:50]:
            print("  " + v)
        return 1
    print("\nno violation (seed %s)" % a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
