#!/usr/bin/env python3
"""run-tests.py — run unit-test binaries or integration scripts, several at
a time, and print one line per test (the failing output in full).

    tests/run-tests.py unit BUILD_DIR TEST_BIN...
    tests/run-tests.py integration BUILD_DIR

Owns the scheduling of a test run, not the tests: each test is a program
that exits 0 on success. Tests run in two phases:

  1. the shared phase: up to TEST_JOBS tests at once (default: the number
     of cores), longest first when an earlier run left its durations in
     BUILD_DIR/.test-times, else in name order;
  2. the alone phase: the tests whose source says `make-test: alone` (in a
     comment), one at a time with nothing beside them, in name order.
     A test is alone when what it checks depends on timing that a
     neighbour's CPU use could upset (hedges, rate limits, liveness
     deadlines), or when it loads the machine itself.

Tests are written to run side by side: ports from free-port probes,
scratch dirs from mktemp, netns names and subnets from the PID. A unit-test
binary gets its own scratch directory under /dev/shm in
$IOLAKE_TEST_SCRATCH (tests/lib/scratch.h), removed when it passes; a
failing binary's is kept and its path printed under the failure (its
files, e.g. a crashed server's log, are the evidence), so nothing is left
in /dev/shm that the output does not name.

Integration tests run in tests/integration with IOLAKE_BUILD set and
Debian's clients first in PATH; a test that cannot run here exits 0 after
a "SKIP test_...: why" line. Exit status: non-zero if any test failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALONE = re.compile(rb"make-test: alone")
CHECK_SUMMARY = re.compile(r"^[0-9]+%: Checks.*$", re.M)
CHECK_VERDICT = re.compile(r"^[^ ]+:[0-9]+:[EF]:.*$", re.M)
# An integration test's own verdict: a shell test's "FAIL: why", a Python
# test's exception line ("AssertionError: ...", "RuntimeError: timed out
# waiting for ...") or a failed expect ("FAIL ...").
SCRIPT_VERDICT = re.compile(r"^(?:FAIL\b.*|[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b(?::.*)?)$",
                            re.M)


class Test:
    def __init__(self, name, argv, log, source, cwd=None):
        self.name, self.argv, self.log, self.cwd = name, argv, log, cwd
        try:
            with open(source, "rb") as f:
                self.alone = bool(ALONE.search(f.read()))
        except OSError:
            self.alone = False
        self.proc = None
        self.start = 0.0
        self.scratch = None


def unit_tests(build, bins):
    tests = []
    prefix = os.path.join(build, "tests", "unit") + "/"
    for b in bins:
        path = os.path.abspath(b)
        name = path[len(prefix):] if path.startswith(prefix) else b
        src = os.path.join(HERE, "unit", name + ".c")
        tests.append(Test(name, [b], b + ".log", src))
    return tests


def integration_tests(build):
    d = os.path.join(HERE, "integration")
    names = sorted(n for n in os.listdir(d) if n.startswith("test_") and n.endswith(".sh"))
    names += sorted(n for n in os.listdir(d) if n.startswith("test_") and n.endswith(".py"))
    return [Test("integration/" + n, ["./" + n], os.path.join(build, n + ".log"),
                 os.path.join(d, n), cwd=d) for n in names]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def indent(text, mark, last=60):
    lines = text.splitlines()[-last:]
    return "".join("    %s %s\n" % (mark, ln) for ln in lines)


def report(kind, t, rc, secs):
    """The line (and on failure the output) for a test that ended."""
    out = read(t.log)
    if rc != 0:
        s = "  FAIL    %s (log: %s)\n" % (t.name, t.log)
        if kind == "unit":
            # Check's verdicts first ("file:line:F:case:test:...", ":E:" for
            # a crash or timeout): a long log is cut by whoever shows it.
            s += "".join("    ! %s\n" % v for v in CHECK_VERDICT.findall(out))
        else:
            # The same for scripts: their logs end with the services' log
            # tails, so the reason may lie above what the tail shows.
            s += "".join("    ! %s\n" % v for v in SCRIPT_VERDICT.findall(out)[-5:])
        return s + indent(out, "|"), False
    if kind == "integration":
        skip = re.search(r"^SKIP test_[^:]*:(.*)$", out, re.M)
        if skip:
            return "  SKIP    %-36s %s\n" % (t.name, skip.group(1)), True
        steps = re.findall(r"^SKIP step:.*$", out, re.M)
        return ("  PASS    %-36s %3ds\n" % (t.name, secs) +
                "".join("          %s\n" % s for s in steps)), True
    summary = CHECK_SUMMARY.findall(out)
    return "  PASS    %-36s %3ds  %s\n" % (t.name, secs, summary[-1] if summary else ""), True


def spawn(t, env, kind):
    t.start = time.monotonic()
    if kind == "unit":
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        t.scratch = tempfile.mkdtemp(prefix="iol.%s." % os.path.basename(t.name), dir=shm)
        env = dict(env, IOLAKE_TEST_SCRATCH=t.scratch)
    log = open(t.log, "wb")
    try:
        t.proc = subprocess.Popen(t.argv, cwd=t.cwd, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    except OSError:
        drop_scratch(t)   # nothing ran: nothing in it to keep
        raise
    finally:
        log.close()


def drop_scratch(t):
    if t.scratch:
        shutil.rmtree(t.scratch, ignore_errors=True)
        t.scratch = None


def run_phase(kind, queue, jobs, env, times):
    """Run queue with up to jobs at once; True when all passed."""
    ok = True
    running = []
    queue = list(queue)
    while queue or running:
        while queue and len(running) < jobs:
            t = queue.pop(0)
            try:
                spawn(t, env, kind)
            except OSError as e:
                # Not startable (not executable, say): a failure of that
                # test; the others run, and the ones running are waited for.
                sys.stdout.write("  FAIL    %s: cannot start %s: %s\n" % (t.name, t.argv[0], e))
                sys.stdout.flush()
                ok = False
                continue
            running.append(t)
        if not running:
            continue
        pid, status = os.wait()
        done = next((t for t in running if t.proc.pid == pid), None)
        if done is None:
            continue
        running.remove(done)
        done.proc.returncode = os.waitstatus_to_exitcode(status)
        secs = time.monotonic() - done.start
        times[done.name] = secs
        text, passed = report(kind, done, done.proc.returncode, int(secs))
        if passed:
            drop_scratch(done)
        elif done.scratch and os.listdir(done.scratch):
            text += "    scratch kept for the failure: %s\n" % done.scratch
        else:
            drop_scratch(done)
        ok &= passed
        sys.stdout.write(text)
        sys.stdout.flush()
    return ok


def load_times(path):
    times = {}
    for ln in read(path).splitlines():
        name, _, secs = ln.partition("\t")
        try:
            times[name] = float(secs)
        except ValueError:
            pass
    return times


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("unit", "integration"):
        sys.exit("usage: run-tests.py unit BUILD_DIR TEST_BIN... | integration BUILD_DIR")
    kind, build = sys.argv[1], os.path.abspath(sys.argv[2])
    env = dict(os.environ)
    if kind == "integration":
        # The clients the tests promise are Debian's (aws-cli, boto3,
        # s3cmd): /usr/bin first, so a pip install earlier in PATH is not
        # what runs.
        env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
        env["IOLAKE_BUILD"] = build
        tests = integration_tests(build)
    else:
        tests = unit_tests(build, sys.argv[3:])
    jobs = int(env.get("TEST_JOBS") or os.cpu_count() or 1)
    times_path = os.path.join(build, ".test-times")
    times = load_times(times_path)
    shared = [t for t in tests if not t.alone]
    shared.sort(key=lambda t: -times.get(t.name, 0.0))  # stable: name order without times
    alone = [t for t in tests if t.alone]
    ok = True
    try:
        ok &= run_phase(kind, shared, max(1, jobs), env, times)
        ok &= run_phase(kind, alone, 1, env, times)
    except KeyboardInterrupt:
        for t in tests:
            if t.proc and t.proc.returncode is None:
                t.proc.terminate()
                t.proc.wait()
            drop_scratch(t)
        raise
    finally:
        with open(times_path + ".tmp", "w") as f:
            f.writelines("%s\t%.1f\n" % kv for kv in sorted(times.items()))
        os.replace(times_path + ".tmp", times_path)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
