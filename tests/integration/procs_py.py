"""procs_py.py — a cluster of the real binaries, started one process at a
time by a Python test (meta, OSDs, gateways on loopback): the process
list, a temp dir in /dev/shm for their data and logs, and the helpers
every such test needs. Not a test itself.

    P = Procs("iolake-x.")       # temp dir P.tmp
    P.run(main)                  # main(); on failure the logs' tails;
                                 # always: every process killed, dir gone
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

from aio_py import BUILD, free_port


class Procs:
    def __init__(self, prefix):
        self.tmp = tempfile.mkdtemp(prefix=prefix, dir="/dev/shm")
        self.procs = []

    def start(self, name, args):
        """Start build/args[0] with args[1:], output to TMP/name.log."""
        log = open(os.path.join(self.tmp, name + ".log"), "ab")
        p = subprocess.Popen([os.path.join(BUILD, args[0])] + args[1:], stdout=log, stderr=log)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def dump_logs(self, lines=15):
        for f in sorted(os.listdir(self.tmp)):
            if f.endswith(".log"):
                print("---- %s (tail)" % f)
                with open(os.path.join(self.tmp, f), errors="replace") as fh:
                    print("".join(fh.readlines()[-lines:]))

    def run(self, main):
        try:
            main()
        except BaseException:
            self.dump_logs()
            # Flushed now, so the traceback (stderr, at exit) comes after
            # the services' logs: a log cut to its tail keeps the reason.
            sys.stdout.flush()
            raise
        finally:
            self.cleanup()


def wait_for(what, fn, timeout=30):
    """Poll fn (exceptions count as not yet) until true, or fail."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            if fn():
                return
        except Exception:
            pass
        time.sleep(0.2)
    raise RuntimeError("timed out waiting for " + what)


def admin(meta, *args):
    out = subprocess.run([os.path.join(BUILD, "iolake-admin"), "--meta", meta, "--json"] + list(args),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def free_pair():
    """A port whose successor is free too (meta's Raft port)."""
    for _ in range(50):
        p = free_port()
        try:
            s = socket.socket()
            s.bind(("127.0.0.1", p + 1))
            s.close()
            return p
        except OSError:
            continue
    raise RuntimeError("no free port pair")


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)
