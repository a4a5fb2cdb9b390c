"""benchlib.py — shared by bench/regression.py, bench/e2e.py and
bench/baseline.py (imported, not run): start a fresh iolake-aio on a work
dir and stop it by PID, run one iolake-s3-bench cell and read its JSON,
check that a work dir is a tmpfs outside /dev (or mount one), and record
the machine's load.

A "cell" is one object size at one concurrency: a warm-up, a PUT phase
and a GET phase (each object read `gets` times), as iolake-s3-bench runs
them; its figures are the PUT and GET phases' ops/s, MiB/s and latencies.
"""
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

AK = "AKIAIOLAKEBENCH00001"
SK = "iolake-bench-secret-key-0123456789abcdef"

# Mount a tmpfs for the benchmarks like this (docs/ci-benchmarks.md).
MOUNT_HINT = "mount -t tmpfs -o size=8g tmpfs /mnt/iolake-bench"


class BenchError(Exception):
    """A run that could not be measured (not a regression)."""


def uptime():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_ticks(pid):
    """utime + stime of process pid, in clock ticks (os.sysconf SC_CLK_TCK)."""
    with open("/proc/%d/stat" % pid) as f:
        x = f.read().rsplit(")", 1)[1].split()
    return int(x[11]) + int(x[12])


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {"cpus": os.cpu_count(), "cpu": cpu, "mem_gib": round(mem_kib / 2**20, 1),
            "kernel": os.uname().release, "host": socket.gethostname()}


def fs_type(path):
    """File system type of the mount holding path (longest mount prefix)."""
    path = os.path.realpath(path)
    best, typ = "", "?"
    with open("/proc/self/mounts") as f:
        for line in f:
            _, mnt, t = line.split()[:3]
            mnt = mnt.replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, typ = mnt, t
    return typ


def check_workdir(path, need_tmpfs=True):
    """Refuse a work dir under /dev (an OSD takes a path there for a block
    device) and, unless need_tmpfs is false, one that is not on a tmpfs.
    Returns the resolved path."""
    real = os.path.realpath(path)
    if real == "/dev" or real.startswith("/dev/"):
        raise BenchError("work dir %s is under /dev: iolake-aio's OSDs would take their files "
                         "for block devices; mount a tmpfs elsewhere (%s) and pass that"
                         % (path, MOUNT_HINT))
    if not os.path.isdir(real):
        raise BenchError("work dir %s: no such directory" % path)
    if need_tmpfs and fs_type(real) != "tmpfs":
        raise BenchError("work dir %s is on %s, not tmpfs: the figures would measure the disk's "
                         "flush, not the software (%s)" % (path, fs_type(real), MOUNT_HINT))
    return real


@contextlib.contextmanager
def tmpfs_mount(size="8g"):
    """A fresh tmpfs mounted on a temp dir under /tmp (root only),
    unmounted and removed on exit."""
    d = tempfile.mkdtemp(prefix="iolake-bench.", dir="/tmp")
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", d],
                           capture_output=True, text=True)
        if r.returncode:
            raise BenchError("cannot mount a tmpfs on %s (%s); mount one yourself (%s) and pass "
                             "it as the work dir" % (d, r.stderr.strip(), MOUNT_HINT))
        try:
            yield d
        finally:
            subprocess.run(["umount", "-l", d])
    finally:
        os.rmdir(d)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def build_bin(build, name):
    p = os.path.join(os.path.abspath(build), name)
    if not os.access(p, os.X_OK):
        raise BenchError("no %s: build it first (make B=%s)" % (p, build))
    return p


def unlimited_flags(exe):
    """The flags that turn off the per-address connection cap and request
    rate, or [] for builds that predate them."""
    try:
        out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    if "--rate-per-addr" not in out.stdout + out.stderr:
        return []
    return ["--rate-per-addr", "0", "--max-conns-per-addr", "0"]


class Aio:
    """A fresh iolake-aio (six OSDs, 4+2, in-process RPC) on DIR/data."""

    def __init__(self, build, workdir, osd_size="2G", env=None, flags=()):
        self.exe = build_bin(build, "iolake-aio")
        self.dir = tempfile.mkdtemp(prefix="aio.", dir=workdir)
        self.port = free_port()
        self.ep = "http://127.0.0.1:%d" % self.port
        self.osd_size = osd_size
        self.env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK,
                        **(env or {}))
        # A benchmark is one client address doing tens of thousands of
        # requests a second: lift the per-address limits before
        # authentication (issue 16) where the build has them.
        self.flags = unlimited_flags(self.exe) + list(flags)
        self.proc = None
        self.log_path = os.path.join(self.dir, "aio.log")

    def start(self, timeout=30):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.exe, "--data-dir", os.path.join(self.dir, "data"), "--s3-listen",
             "127.0.0.1:%d" % self.port, "--osd-size", self.osd_size] + self.flags,
            stdout=log, stderr=log, env=self.env)
        log.close()
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise BenchError("iolake-aio exited %d at start:\n%s" % (self.proc.returncode,
                                                                        self.log_tail()))
            try:
                if urllib.request.urlopen(self.ep + "/health/ready", timeout=1).status == 200:
                    return self
            except Exception:
                pass
            time.sleep(0.1)
        raise BenchError("iolake-aio not ready in %d s:\n%s" % (timeout, self.log_tail()))

    def log_tail(self, n=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def rss_kib(self):
        """(current, peak) resident set of the process, KiB."""
        cur = peak = 0
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
        return cur, peak

    def close(self):
        """SIGTERM (SIGKILL after 10 s), then remove its data."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def s3bench(bench, endpoint, size, objects, concurrency, gets, json_path, ak=AK, sk=SK,
            bucket="bench", prefix=None, warmup_ops=0, extra=(), duration_s=0, warmup_s=0):
    """One cell; returns {"put": {...}, "get": {...}} from the JSON report
    ("get" only with gets), each with ops_per_s, mib_per_s, p50_ms, p99_ms,
    max_ms, ops, errors. With duration_s the PUT phase runs that long (after
    warmup_s of unmeasured PUTs) instead of PUTting `objects`, which then
    bounds it."""
    if duration_s:
        what = ["--duration", "%gs" % duration_s, "--max-objects", str(objects),
                "--warmup", "%gs" % warmup_s]
    else:
        what = ["--objects", str(objects), "--warmup-ops", str(warmup_ops)]
    cmd = [bench, "--endpoint", endpoint, "--access-key", ak, "--secret-key", sk,
           "--bucket", bucket, "--size", size] + what + [
           "--concurrency", str(concurrency), "--gets", str(gets),
           "--json", json_path] + list(extra)
    if prefix:
        cmd += ["--prefix", prefix]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode or not os.path.exists(json_path):
        raise BenchError("iolake-s3-bench %s exited %d:\n%s" % (size, r.returncode, r.stdout[-2000:]))
    with open(json_path) as f:
        d = json.load(f)
    out = {}
    for p in d["phases"]:
        if p["name"] in ("put", "get"):
            out[p["name"]] = {
                "ops": p["ops"], "errors": p["errors"], "ops_per_s": p["ops_per_s"],
                "mib_per_s": p["mib_per_s"], "p50_ms": p["latency_us"]["p50"] / 1e3,
                "p99_ms": p["latency_us"]["p99"] / 1e3,
                "max_ms": p["latency_us"].get("max", 0) / 1e3, "elapsed_s": p["elapsed_s"]}
    want = ("put", "get") if gets else ("put",)
    if "--skip-put" in extra:
        want = ("get",)   # a GET-only load: no PUT phase
    for name in want:
        if name not in out or out[name]["errors"]:
            raise BenchError("iolake-s3-bench %s: %s phase %s" % (
                size, name, "missing" if name not in out else
                "had %d errors" % out[name]["errors"]))
    return out


def fmt_int(v):
    return "{:,.0f}".format(v)
