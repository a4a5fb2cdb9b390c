#!/usr/bin/python3
"""test_pgbackrest.py — pgBackRest (Debian's 2.45: its own S3 client in C,
SigV4, multipart uploads, TLS required) backing a PostgreSQL cluster up to
iolake-aio and restoring it, unchanged, configured as an operator would:
`repo1-type=s3`, path-style URIs, the aio's TLS port with a CA file.

- a PostgreSQL cluster (Debian's server, run as the postgres user) with
  WAL archiving to the repository (`archive_command = pgbackrest
  archive-push`); `stanza-create`, `check` (a WAL segment archived);
- a table of 100,000 rows, a full backup (the table's file goes up as a
  multipart upload: over pgBackRest's 5 MiB chunk once compressed); 50,000 more rows, an incremental; 10,000 more and
  updates, archived by `check` but in no backup;
- `info`: the two backups; `verify`: every file in the repository reads
  back with the checksum its manifest records;
- the cluster stopped and its data directory emptied, `restore`, start:
  recovery replays the archived WAL and the table equals what it was
  (row count and an md5 over every row), the rows after the last
  backup included;
- two more full backups: `expire` (retention-full=2) removes the first
  full and the incremental on it, their objects gone from the bucket,
  `verify` still clean;
- a wrong secret key: `info` fails and the repository is untouched.
SKIP (exit 0 with a line) when pgbackrest or PostgreSQL's server is not
installed.
"""
import glob, json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aio_py import AK, SK, Checks, free_port, keys_of, listing, run_with_aio  # noqa: E402

checks = Checks()
expect = checks.expect
BUCKET = "pgbackrest"
ROWS = "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t"


def pg_bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


class Cluster:
    """A PostgreSQL cluster in DIR, run as the postgres user, on a Unix
    socket only; pgBackRest's configuration beside it."""

    def __init__(self, aio, bindir):
        self.bin = bindir
        self.dir = os.path.join(aio.tmp, "pg")
        self.data = os.path.join(self.dir, "data")
        self.sock = os.path.join(self.dir, "sock")
        self.port = free_port()
        os.chmod(aio.tmp, 0o711)   # the postgres user reaches its dir below
        os.makedirs(self.sock)
        for sub in ("log", "lock", "spool"):
            os.makedirs(os.path.join(self.dir, "pgbackrest", sub))
        subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        self.conf = self.write_conf(aio, SK)

    def write_conf(self, aio, sk, name="pgbackrest.conf"):
        path = os.path.join(self.dir, name)
        br = os.path.join(self.dir, "pgbackrest")
        with open(path, "w") as f:
            f.write("\n".join([
                "[global]",
                "repo1-type=s3",
                "repo1-s3-endpoint=localhost",
                "repo1-storage-port=%d" % aio.port,
                "repo1-storage-ca-file=%s" % aio.cafile,
                "repo1-s3-uri-style=path",
                "repo1-s3-bucket=%s" % BUCKET,
                "repo1-s3-region=us-east-1",
                "repo1-s3-key=%s" % AK,
                "repo1-s3-key-secret=%s" % sk,
                "repo1-path=/repo",
                "repo1-retention-full=2",
                "process-max=2",
                "start-fast=y",
                "log-level-console=warn",
                "log-level-file=detail",
                "log-path=%s/log" % br,
                "lock-path=%s/lock" % br,
                "spool-path=%s/spool" % br,
                "",
                "[demo]",
                "pg1-path=%s" % self.data,
                "pg1-port=%d" % self.port,
                "pg1-socket-path=%s" % self.sock,
                ""]))
        os.chmod(path, 0o644)
        return path

    def as_pg(self, argv, ok=True):
        r = subprocess.run(["runuser", "-u", "postgres", "--"] + argv, capture_output=True,
                           text=True, timeout=300, cwd=self.dir)
        if ok and r.returncode:
            raise RuntimeError("%s exited %d:\n%s%s" % (" ".join(argv), r.returncode,
                                                        r.stdout[-3000:], r.stderr[-3000:]))
        return r

    def pgbackrest(self, *args, ok=True, conf=None):
        return self.as_pg(["pgbackrest", "--config=" + (conf or self.conf), "--stanza=demo"]
                          + list(args), ok=ok)

    def initdb(self):
        self.as_pg([os.path.join(self.bin, "initdb"), "-D", self.data, "-A", "trust",
                    "-U", "postgres", "--no-sync"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n".join([
                "port = %d" % self.port,
                "listen_addresses = ''",
                "unix_socket_directories = '%s'" % self.sock,
                "wal_level = replica",
                "archive_mode = on",
                # in the data dir, not /dev/shm: nothing outlives the test's dir
                "dynamic_shared_memory_type = mmap",
                "archive_command = 'pgbackrest --config=%s --stanza=demo archive-push %%p'"
                % self.conf,
                ""]))

    def pg_ctl(self, *args, ok=True):
        return self.as_pg([os.path.join(self.bin, "pg_ctl"), "-D", self.data] + list(args), ok=ok)

    def start(self):
        self.pg_ctl("-l", os.path.join(self.dir, "server.log"), "-w", "-t", "120", "start")

    def stop(self):
        self.pg_ctl("-m", "fast", "-w", "stop")

    def sql(self, q):
        return self.as_pg([os.path.join(self.bin, "psql"), "-h", self.sock, "-p",
                           str(self.port), "-d", "postgres", "-XAtq", "-v", "ON_ERROR_STOP=1",
                           "-c", q]).stdout.strip()

    def print_logs(self, n=15):
        """The last lines of the server's log and of pgBackRest's logs (a
        failure's evidence: the dir goes with the aio's)."""
        logs = [os.path.join(self.dir, "server.log")] + sorted(
            glob.glob(os.path.join(self.dir, "pgbackrest", "log", "*.log")))
        for path in logs:
            try:
                with open(path, errors="replace") as f:
                    lines = f.readlines()[-n:]
            except OSError:
                continue
            print("--- %s\n%s" % (os.path.basename(path), "".join(lines)), file=sys.stderr)

    def running(self):
        return os.path.exists(os.path.join(self.data, "postmaster.pid"))


def backups(pg):
    info = json.loads(pg.pgbackrest("info", "--output=json").stdout)
    return [(b["label"], b["type"]) for b in info[0]["backup"]]


def wait_promoted(pg, secs=120):
    for _ in range(secs * 10):
        try:
            if pg.sql("SELECT pg_is_in_recovery()") == "f":
                return True
        except RuntimeError:
            pass   # not accepting connections yet
        time.sleep(0.1)
    return False


def run(aio, bindir):
    aio.client().create_bucket(Bucket=BUCKET)
    pg = Cluster(aio, bindir)
    try:
        pg.initdb()
        pg.start()
        pg.pgbackrest("stanza-create")
        pg.pgbackrest("check")   # a WAL segment archived and found in the repository

        pg.sql("CREATE TABLE t (id int PRIMARY KEY, v text); "
               "INSERT INTO t SELECT g, md5(g::text) || md5((g * 7)::text) || md5((g * 13)::text) "
               "FROM generate_series(1, 100000) g")
        pg.pgbackrest("backup", "--type=full")
        pg.sql("INSERT INTO t SELECT g, md5(g::text) FROM generate_series(100001, 150000) g")
        pg.pgbackrest("backup", "--type=incr")
        pg.sql("INSERT INTO t SELECT g, 'after the last backup ' || g "
               "FROM generate_series(150001, 160000) g; "
               "UPDATE t SET v = 'updated' WHERE id % 1000 = 0")
        before = pg.sql(ROWS)
        pg.pgbackrest("check")   # switches WAL: the rows above are archived, in no backup

        got = backups(pg)
        expect([t for _, t in got], ["full", "incr"], "info: a full and an incremental backup")
        first_full = got[0][0]
        r = pg.pgbackrest("verify", ok=False)
        expect(r.returncode, 0, "verify: every repository file reads back as its checksum says")
        files = listing(aio.client(), BUCKET, "repo/backup/demo/%s/pg_data/base/" % first_full)
        expect(len(files) > 100, True, "the full backup's data files are in the bucket")
        expect(any("-" in o["ETag"] and o["Size"] > 5 << 20 for o in files), True,
               "the table's file went up as a multipart upload")

        pg.stop()
        shutil.rmtree(pg.data)
        pg.as_pg(["mkdir", "-m", "700", pg.data])
        pg.pgbackrest("restore")
        pg.start()
        expect(wait_promoted(pg), True, "the restored cluster replays the archive and promotes")
        after = pg.sql(ROWS)
        expect(after, before, "restored: every row, those after the last backup included")
        expect(after.split("|")[0], "160000", "restored row count")

        pg.pgbackrest("backup", "--type=full")
        pg.pgbackrest("backup", "--type=full")   # retention-full=2: expires the first
        got = backups(pg)
        expect([t for _, t in got], ["full", "full"], "expire: two full backups left")
        expect(first_full in [label for label, _ in got], False, "the first full is expired")
        expect(keys_of(aio.client(), BUCKET, "repo/backup/demo/%s/" % first_full), [],
               "the expired backup's objects are deleted from the bucket")
        r = pg.pgbackrest("verify", ok=False)
        expect(r.returncode, 0, "verify after expire")

        keys_before = keys_of(aio.client(), BUCKET)
        bad = pg.write_conf(aio, SK[:-1] + "x", name="bad.conf")
        r = pg.pgbackrest("repo-ls", ok=False, conf=bad)
        expect((r.returncode != 0, "403" in r.stdout + r.stderr), (True, True),
               "a wrong secret key: repo-ls fails with 403")
        expect(keys_of(aio.client(), BUCKET) == keys_before and len(keys_before) > 10, True,
               "the repository untouched by it")
    except Exception:
        pg.print_logs()
        raise
    finally:
        if pg.running():
            pg.pg_ctl("-m", "immediate", "stop", ok=False)


if __name__ == "__main__":
    bindir = pg_bindir()
    if not shutil.which("pgbackrest") or not bindir:
        print("SKIP test_pgbackrest: pgbackrest or PostgreSQL's server not installed "
              "(scripts/deps.sh installs them)")
        sys.exit(0)

    run_with_aio(lambda aio: run(aio, bindir), checks, tls=True)
