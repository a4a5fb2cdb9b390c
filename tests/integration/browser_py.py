"""browser_py.py — what the browser tests share (imported, not run):
Debian's chromium driven by playwright-core from npm, pinned in
tests/browser/package-lock.json and installed with `npm ci` into
$IOLAKE_BUILD/browser-node (once; later runs reuse it), and running one
of tests/browser/*.js there with a bounded time, its process group killed
whatever happens.

Used by test_browser_post_cors.py (drive.js) and test_console.py
(console.js). Chromium runs with --no-sandbox as root (the scripts decide:
Chromium refuses its sandbox to root)."""
import fcntl, filecmp, json, os, shutil, signal, subprocess, sys

from aio_py import BUILD

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
BROWSER_DIR = os.path.join(TOP, "tests/browser")


def require():
    """Exit with a FAIL line unless node, npm and chromium are here."""
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            sys.exit("FAIL: %s not found (scripts/deps.sh installs nodejs and npm)" % tool)
    if not os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")):
        sys.exit("FAIL: /usr/bin/chromium not found (scripts/deps.sh installs Debian's chromium)")


def npm_ci():
    """playwright-core, as pinned, into the build directory; the scripts
    copied beside it. Returns that directory. Under a lock on it: the
    browser tests may run side by side (tests/run-tests.py), and a file
    copied while the other test's node reads it would be cut short."""
    dst = os.path.join(os.path.abspath(BUILD), "browser-node")
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for f in os.listdir(BROWSER_DIR):
            if f in ("package.json", "package-lock.json") or f.endswith(".js"):
                src, out = os.path.join(BROWSER_DIR, f), os.path.join(dst, f)
                if not os.path.exists(out) or not filecmp.cmp(src, out, shallow=False):
                    shutil.copy(src, out + ".tmp")
                    os.replace(out + ".tmp", out)
        if not os.path.exists(os.path.join(dst, "node_modules/playwright-core/package.json")):
            subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund",
                            "--loglevel=error"], cwd=dst, check=True, timeout=300)
    return dst


def run_node(node_dir, script, args, timeout=150):
    """node SCRIPT ARGS... in node_dir; its last stdout line parsed as JSON.
    Raises RuntimeError (with the end of its stderr printed) on a non-zero
    exit; the whole process group (node and its chromium) is killed on
    the way out."""
    p = subprocess.Popen(["node", os.path.join(node_dir, script)] + list(args),
                         cwd=node_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, errs = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        else:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # a browser left behind
            except ProcessLookupError:
                pass
    if p.returncode != 0:
        print(errs.decode(errors="replace")[-3000:])
        raise RuntimeError("%s exited %d" % (script, p.returncode))
    return json.loads(out.decode().strip().splitlines()[-1])
