"""aio_py.py — helpers for the Python iolake-aio tests (imported, not run):
start iolake-aio on a temp dir under /dev/shm with fixed root credentials,
wait for /health/ready, stop it by PID, and make boto3 clients; and what
S3 tests share: Checks (expectations), error_code, run_with_aio."""
import json, os, shutil, signal, ssl, subprocess, tempfile, time, urllib.request

import boto3
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from free_port import free_block

BUILD = os.environ.get("IOLAKE_BUILD") or os.path.join(os.path.dirname(__file__), "../../build")
AK = "AKIAIOLAKETEST000001"
SK = "iolake-test-secret-key-0123456789abcdef"


def free_port():
    """A port free on 127.0.0.1 now, below the kernel's ephemeral range
    (free_port.py says why)."""
    return free_block(1)


class Aio:
    def __init__(self, osd_size="256M", args=()):
        self.tmp = tempfile.mkdtemp(prefix="iolake-py.", dir="/dev/shm")
        self.data = os.path.join(self.tmp, "data")
        self.port = free_port()
        self.ep = "http://127.0.0.1:%d" % self.port
        self.osd_size = osd_size
        # more iolake-aio flags, on every start; IOLAKE_AIO_EXTRA_ARGS adds
        # some to every test's aio (e.g. "--range-groups 4": the S3 tests
        # with object records in range groups)
        self.args = list(args) + os.environ.get("IOLAKE_AIO_EXTRA_ARGS", "").split()
        self.proc = None
        self.cafile = None   # set by tls()
        self.log = open(os.path.join(self.tmp, "aio.log"), "ab")

    def tls(self):
        """Serve S3 over TLS from the next start on: a test CA and a server
        certificate for 127.0.0.1 and localhost made here with openssl (in
        the aio's dir), --tls-cert/--tls-key, an https endpoint. The CA's
        PEM is self.cafile, for clients to verify the server with."""
        d = os.path.join(self.tmp, "tls")
        os.mkdir(d)
        def ssl_cmd(*a):
            subprocess.run(["openssl"] + list(a), cwd=d, check=True, capture_output=True)
        ssl_cmd("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=iolake test CA")
        ssl_cmd("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        ssl_cmd("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-set_serial", "0x1001", "-out", "srv.pem", "-days", "2", "-extfile", "ext")
        self.args += ["--tls-cert", os.path.join(d, "srv.pem"),
                      "--tls-key", os.path.join(d, "srv.key")]
        self.cafile = os.path.join(d, "ca.pem")
        self.ep = "https://127.0.0.1:%d" % self.port

    # Ready in ~1-3 s on a quiet machine; 180 s is for a loaded one (at
    # load 20-45 aio took 20-37 s) and for a restart whose kept meta port
    # another test's connection holds (aio waits up to 120 s for it), a
    # wait and not a check of speed.
    def start(self, timeout=180):
        env = dict(os.environ, IOLAKE_ROOT_ACCESS_KEY=AK, IOLAKE_ROOT_SECRET_KEY=SK)
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "iolake-aio"), "--data-dir", self.data, "--s3-listen",
             "127.0.0.1:%d" % self.port, "--osd-size", self.osd_size] + self.args,
            stdout=self.log, stderr=self.log, env=env)
        ctx = ssl.create_default_context(cafile=self.cafile) if self.cafile else None
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("iolake-aio exited %d; log %s:\n%s" % (
                    self.proc.returncode, self.log.name, self.log_tail()))
            try:
                if urllib.request.urlopen(self.ep + "/health/ready", timeout=1,
                                          context=ctx).status == 200:
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise RuntimeError("iolake-aio not ready in %ds; log %s:\n%s" % (
            timeout, self.log.name, self.log_tail()))

    def log_tail(self, n=20):
        """The last n lines of the aio's log (the evidence of a failed
        start, printed before close() removes the dir)."""
        self.log.flush()
        try:
            with open(self.log.name, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError as e:
            return "(%s)" % e

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, limit=5.0):
        t0 = time.time()
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=limit)
        return rc, time.time() - t0

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def client(self, ak=AK, sk=SK, **cfg):
        return boto3.client("s3", endpoint_url=self.ep, aws_access_key_id=ak,
                            aws_secret_access_key=sk, region_name="us-east-1",
                            verify=self.cafile, config=Config(s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1}, **cfg))

    def anonymous_client(self):
        """A client that signs nothing (botocore UNSIGNED)."""
        return boto3.client("s3", endpoint_url=self.ep, region_name="us-east-1",
                            verify=self.cafile, config=Config(signature_version=UNSIGNED,
                                          s3={"addressing_style": "path"},
                                          retries={"max_attempts": 1}))

    def add_user(self, name):
        """iolake-admin user add NAME on this aio's meta: (access key, secret)."""
        meta = open(os.path.join(self.data, "meta", "rpc-addr")).read().strip()
        out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json",
                              "user", "add", name], check=True, capture_output=True,
                             text=True).stdout
        j = json.loads(out)
        return j["access_key"], j["secret_key"]


class Checks:
    """A test's expectations: each printed as it is met or not, the failures
    kept; finish() exits 1 if any failed."""

    def __init__(self):
        self.fails = []

    def expect(self, got, want, what):
        if got != want:
            self.fails.append(what)
            print("FAIL: %s: got %r want %r" % (what, got, want))
        else:
            print("ok:", what, "->", got)

    def finish(self):
        if self.fails:
            print("%d failures" % len(self.fails))
            raise SystemExit(1)
        print("PASS")


def listing(s3, bucket, prefix=""):
    """Every entry of ListObjectsV2 on bucket under prefix, all pages, in
    key order (dicts with Key, Size, ETag ...)."""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return pages.build_full_result().get("Contents", [])


def keys_of(s3, bucket, prefix=""):
    """The keys of listing(s3, bucket, prefix)."""
    return [o["Key"] for o in listing(s3, bucket, prefix)]


def error_code(fn, *a, **kw):
    """The S3 error code fn raised, or "OK"."""
    try:
        fn(*a, **kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


def run_programs(name, argvs, osd_size="512M"):
    """A fresh aio, and each argv of argvs run against it, in the caller's
    environment without AWS_* settings or proxies and with IOLAKE_EP,
    IOLAKE_AK and IOLAKE_SK (an SDK test program's inputs); each must exit
    0, and aio must then exit 0 on SIGTERM. Prints "PASS name", or exits
    with a FAIL line."""
    aio = Aio(osd_size=osd_size)
    try:
        aio.start()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_") and not k.lower().endswith("_proxy")}
        env.update(IOLAKE_EP=aio.ep, IOLAKE_AK=AK, IOLAKE_SK=SK)
        for argv in argvs:
            r = subprocess.run(argv, env=env, timeout=600)
            if r.returncode != 0:
                raise SystemExit("FAIL: %s exited %d (aio log %s)" % (
                    os.path.basename(argv[-1]), r.returncode, aio.log.name))
        rc, _ = aio.stop(limit=15)
        if rc != 0:
            raise SystemExit("FAIL: iolake-aio exited %d on SIGTERM" % rc)
        print("PASS", name)
    finally:
        aio.close()


def run_with_aio(run, checks, args=(), tls=False):
    """A fresh aio (args: its extra flags; tls: serving S3 over TLS, see
    Aio.tls), run(aio), then SIGTERM, which must end it with 0 (under
    ASan, a report makes it nonzero); the aio is killed and its dir
    removed whatever happened; then checks.finish()."""
    aio = Aio(args=args)
    try:
        if tls:
            aio.tls()
        aio.start()   # in the try: an aio that fails to start leaves no dir behind
        run(aio)
        rc, _ = aio.stop(limit=15)
        checks.expect(rc, 0, "iolake-aio exits 0 on SIGTERM")
    finally:
        aio.close()
    checks.finish()
