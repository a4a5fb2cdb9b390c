/*
 * main.c — iolake-aio: a whole IOLake in one process, for development and
 * single-host use: one meta member (a one-voter Raft group), N OSDs (one
 * sparse file each) and the S3 gateway.
 *
 *   iolake-aio --data-dir DIR [--s3-listen 127.0.0.1:9000] [--osds 6]
 *              [--ec 4+2] [--osd-size 64G] [--inline-max-size 4096]
 *              [--rpc local|loopback] [--scrub-rate 32M] [--scrub-interval 24h]
 *              [--orphan-grace 24h] [--orphan-scan-interval 1h]
 *              [--recovery-rate 64M] [--recovery-max-pgs 2] [--pg-report-interval 2s]
 *              [--recovery-rescan-interval 1h] [--deep-scrub-interval 7d]
 *              [--admin-listen HOST:PORT] [--admin-api-listen HOST:PORT]
 *
 * Addresses: S3 on --s3-listen (default 127.0.0.1:9000); meta's RPC for
 * iolake-admin on --admin-listen (default: the S3 host, port + 1); the
 * admin HTTP API and the console's files on --admin-api-listen (default:
 * the S3 host, port + 2). Port 0 picks a free port. A default address whose
 * port is taken falls back to a free port (with a warning); an address given
 * by flag that is taken is an error.
 * Layout of DIR:
 *   meta/            the meta member's Raft log and RocksDB state
 *   meta/rpc-addr    its RPC address, chosen on first start and kept (the
 *                    Raft configuration names it; Raft listens on port+1)
 *   osd-N/dev        OSD N's device: a sparse file of --osd-size
 *   osd-N/meta       OSD N's RocksDB index
 *   root-credentials the root access key and secret (0600), unless given
 *                    by IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY
 *   sse.key          SSE-S3's master key (0600), unless --sse-master-key-file
 *   aio.json         what this running aio serves (S3 endpoint, meta's admin
 *                    address, admin API and console URLs, pid): written
 *                    (write + rename) once it is up, removed on a clean
 *                    shutdown; `iolake-admin --data-dir DIR` reads it
 *
 * Threads: every service runs on its own loop_thread (meta, osd.N, and
 * the gateway's --gw-loops threads gw.0 .. gw.N-1, default one per core:
 * aio/aio_gw.h, gateway/gw_loops.h);
 * they talk over the in-process RPC transport ("local:NAME"), or HTTP/2 on
 * 127.0.0.1 with --rpc loopback. Each OSD's loop runs the OSD's own meta
 * link (osd/metaclient.h, as iolake-osd does): it registers the OSD as
 * host aio-N (so 4+2 PGs span all six) and sends its heartbeats. The main
 * thread's loop does what an operator would: it creates the root user and
 * key, announces aio once every OSD is registered, and handles
 * SIGTERM/SIGINT.
 *
 * Each OSD runs its recovery driver (osd/recover.h) with the --recovery-*
 * flags: it rebuilds the shards of the PGs it is the primary of, and
 * deep-scrubs them every --deep-scrub-interval.
 *
 * Shutdown: the gateway closes first (connections, then its meta client
 * and channels), then each OSD stops its recovery driver, drains (calls in flight are answered) and
 * closes its store, then the meta member closes Raft and RocksDB. A
 * watchdog exits 1 if this takes longer than SHUTDOWN_LIMIT_S.
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "aio/aio_files.h"
#include "aio/aio_gw.h"
#include "aio/aio_osd.h"
#include "common/check.h"
#include "common/ec.h"
#include "common/err.h"
#include "common/flags.h"
#include "common/jsonw.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/rpc.h"
#include "common/rpc_fault.h"
#include "common/workpool.h"
#include "gateway/admin_api.h"
#include "gateway/gw_creds.h"
#include "common/rpc_tls.h"
#include "gateway/gw_front.h"
#include "gateway/lc_worker.h"
#include "gateway/s3_ops.h"
#include "gateway/s3_sse.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta/rootkey.h"
#include "meta/secret.h"
#include "osd/metaclient.h"
#include "osd/recover.h"
#include "osd/service.h"
#include "osd/store/store.h"
#include "osd/sweep.h"

#define PROG "iolake-aio"
#define MAX_OSDS 32
#define SHUTDOWN_LIMIT_S 15
#define BEAT_MS 1000
#define RETRY_MS 200

static const char *f_data_dir;
static const char *f_listen = "127.0.0.1:9000";
static int64_t f_osds = 6;
static const char *f_ec = "4+2";
static uint64_t f_osd_size = 64ull << 30;
static uint64_t f_inline_max = 4096;
static uint64_t f_debug_min_part;   /* tests: lower multipart minimum */
static const char *f_rpc = "local";
static const char *f_region = "us-east-1";
static const char *f_log_level = "info";
static uint64_t f_pg_count = 256;
static uint64_t f_range_groups = META_RANGE_GROUPS_DEFAULT_AIO;
static uint64_t f_split_objects = META_RANGE_SPLIT_OBJECTS_DEFAULT, f_split_bytes, f_merge_objects;
static uint64_t f_gc_interval = 10000;
static uint64_t f_lc_interval = 3600000, f_lc_day_s;   /* lifecycle worker, test clock */
static uint64_t f_scrub_rate = 32ull << 20;
static uint64_t f_scrub_interval = 24ull * 3600 * 1000;
static uint64_t f_orphan_grace = OSD_SWEEP_GRACE_DEFAULT_MS;
static uint64_t f_orphan_interval = OSD_SWEEP_INTERVAL_DEFAULT_MS;
static uint64_t f_slow_op_ms = 1000;
static uint64_t f_recovery_rate = 64ull << 20;
static int64_t f_recovery_max_pgs = 2;
static uint64_t f_pg_report_interval = 2000;
static uint64_t f_recovery_rescan = 3600ull * 1000;
static uint64_t f_deep_scrub = 7ull * 24 * 3600 * 1000;
static uint64_t f_meta_cache = 256ull << 20;
static uint64_t f_meta_wbuf = 64ull << 20;
static bool f_sigv2 = true;
static const char *f_sse_key_file;       /* NULL: DIR/sse.key, made on first start */
static bool f_sse_c_http;
static uint64_t f_snap_bytes = 64ull << 20;
static const char *f_admin_listen;       /* NULL: S3 host, port + 1 */
static const char *f_admin_api_listen;   /* NULL: S3 host, port + 2 */
static const char *f_native_listen;      /* NULL: S3 host, port + 3; "off": none (issue 19) */
static const char *f_debug_fault;        /* tests only: common/rpc_fault.h */
static int64_t f_gw_loops;               /* 0: one per core (gateway/gw_loops.h) */
static int64_t f_hash_threads = -1;      /* common/workpool.h; -1: one per core */
static struct workpool *hash_pool;       /* NULL: hashing on the gateway loop */
static struct gw_front front = GW_FRONT_DEFAULTS; /* --tls-*, limits before auth */
static struct rpc_tls_files rpc_tlsf;              /* --rpc-tls-*: the TCP RPC port */

static const struct flag_spec specs[] = {
	{ .name = "data-dir", .type = FLAG_STRING, .dst = &f_data_dir, .required = true,
	  .metavar = "DIR", .help = "where everything is kept (created if missing)" },
	{ .name = "s3-listen", .type = FLAG_STRING, .dst = &f_listen, .metavar = "HOST:PORT",
	  .help = "S3 endpoint address" },
	{ .name = "osds", .type = FLAG_INT64, .dst = &f_osds, .min = 1, .max = MAX_OSDS,
	  .help = "OSDs to run (each a sparse file DIR/osd-N/dev)" },
	{ .name = "ec", .type = FLAG_STRING, .dst = &f_ec, .metavar = "K+M",
	  .help = "erasure code (fixed when the cluster is created)" },
	{ .name = "meta-cache", .type = FLAG_SIZE, .dst = &f_meta_cache, .min = 8 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "meta's RocksDB block cache (data, index and filter blocks)" },
	{ .name = "meta-write-buffer", .type = FLAG_SIZE, .dst = &f_meta_wbuf, .min = 1 << 20,
	  .max = 1ull << 34, .metavar = "BYTES",
	  .help = "meta's RocksDB memtable (at most two in memory)" },
	{ .name = "snapshot-bytes", .type = FLAG_SIZE, .dst = &f_snap_bytes, .min = 1 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "meta snapshots after this many command bytes (or 1024 entries)" },
	{ .name = "osd-size", .type = FLAG_SIZE, .dst = &f_osd_size, .min = 64 << 20,
	  .max = 1ll << 50, .help = "size of each OSD's file, created sparse on first start" },
	{ .name = "inline-max-size", .type = FLAG_SIZE, .dst = &f_inline_max, .min = 0,
	  .max = 65536, .help = "objects up to this size live in their meta record" },
	{ .name = "debug-min-part-size", .type = FLAG_SIZE, .dst = &f_debug_min_part, .min = 0,
	  .max = 5ull << 20, .metavar = "BYTES",
	  .help = "tests only: multipart minimum part size (0: S3's 5 MiB)" },
	{ .name = "rpc", .type = FLAG_STRING, .dst = &f_rpc, .metavar = "local|loopback",
	  .help = "in-process RPC, or HTTP/2 over 127.0.0.1 (for comparison)" },
	{ .name = "region", .type = FLAG_STRING, .dst = &f_region, .help = "S3 region" },
	{ .name = "sigv2", .type = FLAG_BOOL, .dst = &f_sigv2,
	  .help = "accept AWS Signature Version 2 (Debian 12's boto3 presigns with it)" },
	{ .name = "sse-master-key-file", .type = FLAG_STRING, .dst = &f_sse_key_file,
	  .metavar = "FILE", .help = "the SSE-S3 master key (default: DIR/sse.key, made on "
	  "first start, mode 0600)" },
	{ .name = "sse-c-allow-http", .type = FLAG_BOOL, .dst = &f_sse_c_http,
	  .help = "accept SSE-C keys over plain HTTP from other hosts (loopback always is)" },
	{ .name = "pg-count", .type = FLAG_UINT64, .dst = &f_pg_count, .min = 1, .max = 65536,
	  .help = "placement groups of a new cluster (power of two)" },
	{ .name = "range-groups", .type = FLAG_UINT64, .dst = &f_range_groups, .min = 0,
	  .max = META_GROUPS_MAX, .help = "Raft groups kept for key ranges of object records "
	  "(0: object records stay in the root group)" },
	{ .name = "range-split-objects", .type = FLAG_UINT64, .dst = &f_split_objects, .min = 0,
	  .max = UINT64_MAX / 2, .help = "split a key range at its median key once it holds "
	  "this many objects (0: never)" },
	{ .name = "range-split-bytes", .type = FLAG_SIZE, .dst = &f_split_bytes, .metavar = "BYTES",
	  .help = "split a key range once its objects' sizes sum to this (0: never)" },
	{ .name = "range-merge-objects", .type = FLAG_UINT64, .dst = &f_merge_objects, .min = 0,
	  .max = UINT64_MAX / 2, .help = "merge two adjacent key ranges of a bucket holding "
	  "fewer objects than this together (0: never)" },
	{ .name = "gc-interval", .type = FLAG_DURATION, .dst = &f_gc_interval,
	  .max = 86400000, .help = "between rounds of the shard GC worker (0: no worker)" },
	{ .name = "scrub-rate", .type = FLAG_SIZE, .dst = &f_scrub_rate, .metavar = "BYTES",
	  .help = "each OSD's background scrub: bytes re-read and verified per second (0: off)" },
	{ .name = "scrub-interval", .type = FLAG_DURATION, .dst = &f_scrub_interval, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000, .help = "from the end of one scrub pass to the next" },
	{ .name = "recovery-rate", .type = FLAG_SIZE, .dst = &f_recovery_rate, .metavar = "BYTES",
	  .help = "each OSD's recovery driver: shard bytes rebuilt per second (0: unthrottled)" },
	{ .name = "recovery-max-pgs", .type = FLAG_INT64, .dst = &f_recovery_max_pgs, .min = 1,
	  .max = 64, .help = "PGs each OSD scans and rebuilds at once" },
	{ .name = "pg-report-interval", .type = FLAG_DURATION, .dst = &f_pg_report_interval,
	  .min = 100, .max = 3600ll * 1000, .help = "how often each OSD reports its PGs to meta" },
	{ .name = "recovery-rescan-interval", .type = FLAG_DURATION, .dst = &f_recovery_rescan,
	  .min = 1000, .max = 365ll * 24 * 3600 * 1000,
	  .help = "backstop: each OSD rescans every PG it is the primary of this often" },
	{ .name = "deep-scrub-interval", .type = FLAG_DURATION, .dst = &f_deep_scrub,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "each OSD deep-scrubs every PG it is the primary of this often: reads all "
		  "k+m shards of each whole stripe, re-encodes, rewrites the one shard that "
		  "disagrees (0: off)" },
	{ .name = "log-level", .type = FLAG_STRING, .dst = &f_log_level,
	  .help = "debug, info, warn or error" },
	{ .name = "admin-listen", .type = FLAG_STRING, .dst = &f_admin_listen,
	  .metavar = "HOST:PORT", .help = "meta's RPC for iolake-admin (default: the S3 host, "
	  "S3 port + 1; port 0: any free port)" },
	{ .name = "native-listen", .type = FLAG_STRING, .dst = &f_native_listen,
	  .metavar = "HOST:PORT", .help = "the native protocol (libiolake, the iolake CLI; default: "
	  "the S3 host, S3 port + 3; off: none)" },
	{ .name = "admin-api-listen", .type = FLAG_STRING, .dst = &f_admin_api_listen,
	  .metavar = "HOST:PORT", .help = "the admin HTTP API and the console (default: the S3 "
	  "host, S3 port + 2; port 0: any free port)" },
	{ .name = "orphan-grace", .type = FLAG_DURATION, .dst = &f_orphan_grace, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000,
	  .help = "each OSD deletes a shard no live object names once unreferenced this long "
		  "(must exceed the longest PUT)" },
	GW_FRONT_FLAGS(front),
	RPC_TLS_FLAGS(rpc_tlsf),
	LC_FLAGS(f_lc_interval, f_lc_day_s),
	{ .name = "slow-op-ms", .type = FLAG_DURATION, .dst = &f_slow_op_ms, .min = 0,
	  .max = 86400000, .metavar = "MS",
	  .help = "meta and the OSDs log each call slower than this with its request id "
		  "(0: every call)" },
	{ .name = "orphan-scan-interval", .type = FLAG_DURATION, .dst = &f_orphan_interval,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "from the end of one orphan sweep pass to the next (0: no sweep)" },
	RPC_FAULT_FLAG(f_debug_fault),
	GW_LOOPS_FLAG(f_gw_loops),
	WORKPOOL_HASH_FLAG(f_hash_threads),
	{ 0 }
};

/* ------------------------------------------------------------ services */


static struct {
	uv_loop_t *loop;          /* main: control + signals */
	struct metrics_registry *reg;
	bool loopback;
	unsigned k, m;
	char meta_addr[64];       /* RPC host:port */
	char meta_target[64];     /* what clients dial */
	struct loop_thread meta_lt;
	struct meta_node *meta;
	struct osd_slot osds[MAX_OSDS];
	int n_osds;
	struct aio_gw gw;         /* the gateway's loops, admin API, native (aio_gw.h) */
	char native_host[64];     /* issue 19's native protocol */
	int native_port;
	bool native_default, native_off;
	char s3_host[64];
	int s3_port;
	/* meta's admin address and the admin API's: host, port (0: any), and
	 * whether the port is a default that may fall back to any free one */
	char madm_host[64], api_host[64];
	int madm_port, api_port;
	bool madm_default, api_default;
	char ak[129], sk[129];
	/* control */
	struct meta_client *mc;
	uv_timer_t timer;
	uv_signal_t sig_term, sig_int, sig_hup;
	int phase;                /* 0 map, 1 root user, 2 OSDs registered, 3 up */
	unsigned outstanding;
	bool announced, stopping;
	struct meta_secret secret;     /* the cluster key (DIR/secret.key) */
	struct meta_secret sse_master; /* SSE-S3's master key (DIR/sse.key) */
} A;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", PROG);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static int mkdir_p(const char *d)
{
	if (mkdir(d, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Synchronous hand-off: run fn on lt's loop and wait for done(). */
struct sync_call {
	uv_sem_t sem;
	void *arg;
};

static void sync_done(void *ud)
{
	uv_sem_post(&((struct sync_call *)ud)->sem);
}

/* --- meta --- */

static void meta_start_fn(void *arg)
{
	int *rc = arg;
	struct meta_peer peer = { .id = 1, .addr = A.meta_addr };
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/meta", f_data_dir);
	struct meta_node_opts o = { .id = 1, .data_dir = dir, .listen = A.meta_addr,
				    .local_name = "meta", .peers = &peer, .n_peers = 1,
				    .pg_count = (uint32_t)f_pg_count, .ec_k = A.k, .ec_m = A.m,
				    .osd_down_after_ms = 5000, .osd_out_after_ms = 600000,
				    .snapshot_bytes = f_snap_bytes, .cache_bytes = f_meta_cache,
				    .write_buffer_bytes = f_meta_wbuf, .metrics = A.reg,
				    .range_groups = (unsigned)f_range_groups,
				    .secret = &A.secret,
				    .log_calls = true, .slow_op_ms = (uint32_t)f_slow_op_ms,
				    .range_split_objects = f_split_objects,
				    .range_split_bytes = f_split_bytes,
				    .range_merge_objects = f_merge_objects };
	char adm[96];
	snprintf(adm, sizeof(adm), "%s:%d", A.madm_host, A.madm_port);
	o.admin_listen = adm;
	*rc = meta_node_start(&A.meta_lt.loop, &o, &A.meta);
	if (!*rc)
		A.madm_port = meta_node_admin_port(A.meta);
}

static void meta_close_fn(void *arg)
{
	struct sync_call *sc = arg;
	meta_node_close(A.meta, sync_done, sc);
}

/* A default port for meta's admin address that is taken (aio started on
 * a random S3 port, whose + 1 someone holds) is replaced by any free one
 * before meta starts: a failed meta_node_start cannot simply be retried
 * (its metrics are registered by then). A port given by flag is kept and
 * fails loudly. The bind test uses SO_REUSEADDR, as libuv's listen does. */
static void madm_check(void)
{
	if (!A.madm_default || !A.madm_port)
		return;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)A.madm_port) };
	if (inet_pton(AF_INET, A.madm_host, &sa.sin_addr) != 1)
		return;   /* a name or IPv6: meta reports what it finds */
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bool ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	if (!ok) {
		LOG_WARN("the default admin address is taken; meta's admin RPC takes a free port",
			 "addr=%s:%d", A.madm_host, A.madm_port);
		A.madm_port = 0;
	}
}

/* Reuse the address chosen on first start; else pick a free port whose
 * successor (Raft's) is free too. */
static int meta_address(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/meta/rpc-addr", f_data_dir);
	FILE *f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%63s", A.meta_addr) == 1;
		fclose(f);
		if (ok)
			return 0;
	}
	for (int tries = 0; tries < 50; tries++) {
		int s1 = socket(AF_INET, SOCK_STREAM, 0), s2 = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t sl = sizeof(sa);
		int ok = bind(s1, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
			 getsockname(s1, (struct sockaddr *)&sa, &sl) == 0;
		int port = ntohs(sa.sin_port);
		if (ok && port < 65535) {
			sa.sin_port = htons((uint16_t)(port + 1));
			ok = bind(s2, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		} else {
			ok = 0;
		}
		close(s1);
		close(s2);
		if (!ok)
			continue;
		snprintf(A.meta_addr, sizeof(A.meta_addr), "127.0.0.1:%d", port);
		f = fopen(path, "w");
		if (!f)
			return -errno;
		fprintf(f, "%s\n", A.meta_addr);
		fclose(f);
		return 0;
	}
	return -EADDRINUSE;
}

/* --- gateway --- */

/* Set on the control loop once the root key is committed in meta: until
 * then a client that waited for /health/ready would be refused its first
 * request (InvalidAccessKeyId, and then negative-cached for 5 s). */
static atomic_bool root_key_ready;

/* GET /health/ready on the gateway's loop: the gateway's own readiness
 * (map and OSDs) and the root key. */
static bool aio_ready(void *ops)
{
	return atomic_load(&root_key_ready) && s3_ops_ready(ops);
}

/* Run fn on lt and wait until it reported done. */
static void run_and_wait(struct loop_thread *lt, void (*fn)(void *), void *arg)
{
	struct sync_call sc;
	uv_sem_init(&sc.sem, 0);
	sc.arg = arg;
	if (loop_thread_call(lt, fn, &sc) == 0)
		uv_sem_wait(&sc.sem);
	uv_sem_destroy(&sc.sem);
}

/* ------------------------------------------------------------ control */

static void control_next(void);

static void on_timer(uv_timer_t *t)
{
	(void)t;
	control_next();
}

static void retry_later(void)
{
	if (!A.stopping)
		uv_timer_start(&A.timer, on_timer, RETRY_MS, 0);
}


static void announce(void)
{
	if (A.announced)
		return;
	A.announced = true;
	struct aio_json j = { .data_dir = f_data_dir, .region = f_region, .s3_host = A.s3_host,
			      .madm_host = A.madm_host, .api_host = A.api_host,
			      .s3_port = A.s3_port, .madm_port = A.madm_port, .api_port = A.api_port,
			      .native_host = A.native_off ? NULL : A.native_host,
			      .native_port = A.native_port };
	aio_write_json(&j);
	printf("IOLake aio is up: %d OSDs (%u+%u), data in %s\n", A.n_osds, A.k, A.m, f_data_dir);
	printf("  S3 endpoint:  %s://%s:%d\n", gw_front_scheme(&front), A.s3_host, A.s3_port);
	printf("  meta admin:   %s:%d   (iolake-admin --data-dir %s cluster status)\n",
	       A.madm_host, A.madm_port, f_data_dir);
	printf("  admin API:    http://%s:%d/api/v1/\n", A.api_host, A.api_port);
	printf("  console:      http://%s:%d/console/\n", A.api_host, A.api_port);
	if (!A.native_off)
		printf("  native:       %s:%d   (iolake --endpoint %s:%d ls BUCKET)\n", A.native_host,
		       A.native_port, A.native_host, A.native_port);
	printf("  access key:   %s\n", A.ak);
	printf("  secret key:   %s\n", A.sk);
	printf("  region:       %s\n", f_region);
	printf("Try:\n");
	printf("  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=%s\n",
	       A.ak, A.sk, f_region);
	printf("  aws --endpoint-url %s://%s:%d s3 mb s3://demo\n", gw_front_scheme(&front), A.s3_host,
	       A.s3_port);
	fflush(stdout);
}

static void on_map(void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	A.outstanding--;
	if (A.stopping)
		return;
	const Iolake__Meta__GetMapResponse *r = (const void *)resp;
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		retry_later();
		return;
	}
	A.phase = 1;
	control_next();
}

/* The root user and key (meta/rootkey.h), then waiting for the OSDs. */
static void on_root_key(void *ud, int err)
{
	(void)ud;
	A.outstanding--;
	if (A.stopping)
		return;
	if (err) {
		retry_later();
		return;
	}
	A.phase = 2;
	atomic_store(&root_key_ready, true);
	control_next();
}

static void user_step(void)
{
	struct rootkey_creds c;
	snprintf(c.access_key, sizeof(c.access_key), "%s", A.ak);
	snprintf(c.secret_key, sizeof(c.secret_key), "%s", A.sk);
	c.secret = &A.secret;
	A.outstanding++;
	if (rootkey_ensure(A.mc, &c, on_root_key, NULL)) {
		A.outstanding--;
		retry_later();
	}
}

static void control_next(void)
{
	if (A.stopping || A.outstanding)
		return;
	switch (A.phase) {
	case 0: {
		Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
		A.outstanding++;
		if (meta_client_call(A.mc, META_M_GET_MAP, &req.base, on_map, NULL)) {
			A.outstanding--;
			retry_later();
		}
		return;
	}
	case 1:
		user_step();
		return;
	case 2:
		/* Each OSD's metaclient registers it; announce once all are. */
		for (int i = 0; i < A.n_osds; i++)
			if (!atomic_load(&A.osds[i].registered)) {
				retry_later();
				return;
			}
		A.phase = 3;
		announce();
		return;
	default:
		return;
	}
}

/* ------------------------------------------------------------ main */

/* --NAME HOST:PORT, or when not given the S3 host and port + off (0 when
 * the S3 port is 0 or the sum leaves the range). 0, or 2 after saying why. */
static int derive_addr(const char *name, const char *given, int off, char host[64], int *port,
		       bool *is_default)
{
	*is_default = !given;
	if (!given) {
		snprintf(host, 64, "%s", A.s3_host);
		*port = A.s3_port && A.s3_port + off <= 65535 ? A.s3_port + off : 0;
		return 0;
	}
	const char *colon = strrchr(given, ':');
	char *end;
	long p = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == given || (size_t)(colon - given) >= 64 || !colon[1] || *end ||
	    p < 0 || p > 65535) {
		fprintf(stderr, "%s: flag --%s: '%s' is not host:port\n", PROG, name, given);
		return 2;
	}
	memcpy(host, given, (size_t)(colon - given));
	host[colon - given] = 0;
	*port = (int)p;
	return 0;
}

static void shutdown_all(void)
{
	alarm(SHUTDOWN_LIMIT_S); /* SIGALRM's default action ends a stuck shutdown */
	LOG_INFO("shutting down", "");
	aio_gw_stop(&A.gw);
	for (int i = 0; i < A.n_osds; i++) {
		aio_osd_stop(&A.osds[i]);
	}
	if (A.meta)
		run_and_wait(&A.meta_lt, meta_close_fn, NULL);
	loop_thread_stop(&A.meta_lt);
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)s;
	LOG_INFO("stopping", "signal=%d", signum);
	A.stopping = true;
	uv_timer_stop(&A.timer);
	uv_close((uv_handle_t *)&A.timer, NULL);
	uv_close((uv_handle_t *)&A.sig_term, NULL);
	uv_close((uv_handle_t *)&A.sig_int, NULL);
	uv_close((uv_handle_t *)&A.sig_hup, NULL);
	meta_client_close(A.mc);
	A.mc = NULL;
}

/* SIGHUP: reload the S3 certificate (thread-safe; the gateway's loop
 * picks the new one up at its next accept). */
static void on_sighup(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	gw_front_reload(&front);
	rpc_tls_reload_default();
}

int main(int argc, char **argv)
{
	int rc = flags_parse_program(PROG, "", specs, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	int lvl = log_parse_level(f_log_level);
	if (lvl < 0) {
		fprintf(stderr, "%s: flag --log-level: '%s' is not debug, info, warn or error\n", PROG,
			f_log_level);
		return 2;
	}
	if (ec_parse(f_ec, &A.k, &A.m)) {
		fprintf(stderr, "%s: flag --ec: want K+M such as 4+2, not '%s'\n", PROG, f_ec);
		return 2;
	}
	if (A.k + A.m > (unsigned)f_osds) {
		fprintf(stderr, "%s: flag --ec %s needs at least %u OSDs (--osds %lld)\n", PROG, f_ec,
			A.k + A.m, (long long)f_osds);
		return 2;
	}
	if (strcmp(f_rpc, "local") && strcmp(f_rpc, "loopback")) {
		fprintf(stderr, "%s: flag --rpc: '%s' is not local or loopback\n", PROG, f_rpc);
		return 2;
	}
	if (f_pg_count & (f_pg_count - 1)) {
		fprintf(stderr, "%s: flag --pg-count: %llu is not a power of two\n", PROG,
			(unsigned long long)f_pg_count);
		return 2;
	}
	const char *colon = strrchr(f_listen, ':');
	if (!colon || colon == f_listen || (size_t)(colon - f_listen) >= sizeof(A.s3_host) ||
	    !colon[1]) {
		fprintf(stderr, "%s: flag --s3-listen: '%s' is not host:port\n", PROG, f_listen);
		return 2;
	}
	memcpy(A.s3_host, f_listen, (size_t)(colon - f_listen));
	A.s3_port = atoi(colon + 1);
	if (derive_addr("admin-listen", f_admin_listen, 1, A.madm_host, &A.madm_port,
			&A.madm_default) ||
	    derive_addr("admin-api-listen", f_admin_api_listen, 2, A.api_host, &A.api_port,
			&A.api_default))
		return 2;
	A.native_off = f_native_listen && strcmp(f_native_listen, "off") == 0;
	if (!A.native_off && derive_addr("native-listen", f_native_listen, 3, A.native_host,
					 &A.native_port, &A.native_default))
		return 2;
	A.loopback = strcmp(f_rpc, "loopback") == 0;
	A.n_osds = (int)f_osds;
	log_set_level((enum log_level)lvl);
	log_set_thread_context("svc=aio");
	if (rpc_fault_flag_apply(PROG, f_debug_fault))
		return 2;   /* before any service opens a channel */
	signal(SIGPIPE, SIG_IGN);

	char dir[4200];
	if ((rc = mkdir_p(f_data_dir)))
		die("flag --data-dir %s: %s", f_data_dir, strerror(-rc));
	snprintf(dir, sizeof(dir), "%s/meta", f_data_dir);
	if ((rc = mkdir_p(dir)))
		die("%s: %s", dir, strerror(-rc));
	char kerr[512];
	if (aio_credentials(f_data_dir, A.ak, A.sk, kerr, sizeof(kerr)))
		die("%s", kerr);
	if (aio_cluster_key(f_data_dir, dir, &A.secret, kerr, sizeof(kerr)))
		die("cluster key: %s", kerr);
	gw_creds_set_secret(&A.secret);
	if (aio_sse_key(f_data_dir, f_sse_key_file, &A.sse_master, kerr, sizeof(kerr)))
		die("sse master key: %s", kerr);
	s3_sse_configure(&A.sse_master, f_sse_c_http);
	if ((rc = meta_address()))
		die("no free port pair for meta on 127.0.0.1: %s", strerror(-rc));
	madm_check();
	snprintf(A.meta_target, sizeof(A.meta_target), "%s",
		 A.loopback ? A.meta_addr : "local:meta");
	A.reg = metrics_registry_new();
	if (!A.reg || iol_check_register_metrics(A.reg))
		die("out of memory");
	char ferr[512];
	if (gw_front_setup(&front, ferr, sizeof(ferr)) || rpc_tls_setup(&rpc_tlsf, ferr, sizeof(ferr)))
		die("%s", ferr);

	/* meta */
	if (loop_thread_start(&A.meta_lt, "meta"))
		die("cannot start a thread");
	int mrc = 0;
	loop_thread_call(&A.meta_lt, meta_start_fn, &mrc);
	if (mrc == -EADDRINUSE)
		die("meta: cannot start: an address is in use (its RPC %s, or --admin-listen %s:%d)",
		    A.meta_addr, A.madm_host, A.madm_port);
	if (mrc)
		die("meta: cannot start: %s", iol_strerror(mrc));

	/* OSDs (aio/aio_osd.h) */
	static struct aio_osd_opts oo;
	oo = (struct aio_osd_opts){ .reg = A.reg, .meta_target = A.meta_target,
				    .loopback = A.loopback, .osd_size = f_osd_size,
				    .scrub_rate = f_scrub_rate, .scrub_interval_ms = f_scrub_interval,
				    .slow_op_ms = f_slow_op_ms, .orphan_interval_ms = f_orphan_interval,
				    .orphan_grace_ms = f_orphan_grace, .recovery_rate = f_recovery_rate,
				    .recovery_rescan_ms = f_recovery_rescan,
				    .deep_scrub_ms = f_deep_scrub, .pg_report_ms = f_pg_report_interval,
				    .recovery_max_pgs = f_recovery_max_pgs, .beat_ms = BEAT_MS,
				    .retry_ms = RETRY_MS };
	for (int i = 0; i < A.n_osds; i++) {
		struct osd_slot *o = &A.osds[i];
		o->opt = &oo;
		o->id = (uint32_t)i + 1;
		snprintf(o->dir, sizeof(o->dir), "%s/osd-%u", f_data_dir, o->id);
		if ((rc = mkdir_p(o->dir)))
			die("%s: %s", o->dir, strerror(-rc));
		char name[16];
		snprintf(name, sizeof(name), "osd.%u", o->id);
		if (loop_thread_start(&o->lt, name))
			die("cannot start a thread");
		loop_thread_call(&o->lt, aio_osd_start_fn, o);
		if (o->rc) {
			fprintf(stderr, "%s: osd %u: %s\n", PROG, o->id, o->err);
			A.n_osds = i + 1;
			shutdown_all();
			return 1;
		}
	}

	/* gateway: --gw-loops threads (aio/aio_gw.h) */
	hash_pool = workpool_hash_start(f_hash_threads);
	struct aio_gw_cfg gc = { .loops = f_gw_loops ? (unsigned)f_gw_loops : gw_loops_default(),
				 .meta = A.meta_target, .listen = f_listen, .region = f_region,
				 .k = A.k, .m = A.m, .inline_max = (uint32_t)f_inline_max,
				 .debug_min_part = f_debug_min_part, .reg = A.reg,
				 .gc_interval_ms = (uint32_t)f_gc_interval,
				 .lc_interval_ms = (uint32_t)f_lc_interval,
				 .lc_day_ms = f_lc_day_s * 1000, .no_sigv2 = !f_sigv2,
				 .front = &front, .ready = aio_ready, .s3_host = A.s3_host,
				 .s3_port = A.s3_port, .api_host = A.api_host, .api_port = A.api_port,
				 .api_default = A.api_default, .hash_pool = hash_pool,
				 .native_off = A.native_off, .native_host = A.native_host,
				 .native_port = A.native_port, .native_default = A.native_default };
	const char *which;
	int grc = aio_gw_start(&gc, &A.gw, &which);
	if (grc) {
		if (which && !strcmp(which, "native"))
			fprintf(stderr, "%s: flag --native-listen %s:%d: %s\n", PROG, A.native_host,
				A.native_port, iol_strerror(grc));
		else if (which && !strcmp(which, "api"))
			fprintf(stderr, "%s: flag --admin-api-listen %s:%d: %s\n", PROG, A.api_host,
				A.api_port, iol_strerror(grc));
		else if (which)
			fprintf(stderr, "%s: flag --s3-listen %s: %s\n", PROG, f_listen,
				iol_strerror(grc));
		else
			fprintf(stderr, "%s: gateway: cannot start: %s\n", PROG, iol_strerror(grc));
		shutdown_all();
		return 1;
	}
	A.s3_port = A.gw.s3_port;
	A.api_port = A.gw.api_port;
	A.native_port = A.gw.native_port;

	/* control */
	A.loop = uv_default_loop();
	const char *members[1] = { A.meta_target };
	struct meta_client_opts mo = { .members = members, .n_members = 1 };
	if (meta_client_new(A.loop, &mo, &A.mc))
		die("meta client: out of memory");
	uv_timer_init(A.loop, &A.timer);
	uv_signal_init(A.loop, &A.sig_term);
	uv_signal_init(A.loop, &A.sig_int);
	uv_signal_start(&A.sig_term, on_signal, SIGTERM);
	uv_signal_start(&A.sig_int, on_signal, SIGINT);
	uv_signal_init(A.loop, &A.sig_hup);
	uv_signal_start(&A.sig_hup, on_sighup, SIGHUP);
	LOG_INFO("started", "s3=%s:%d meta=%s meta_admin=%s:%d admin_api=%s:%d osds=%d ec=%u+%u rpc=%s",
		 A.s3_host, A.s3_port, A.meta_addr, A.madm_host, A.madm_port, A.api_host, A.api_port,
		 A.n_osds, A.k, A.m, f_rpc);
	control_next();
	uv_run(A.loop, UV_RUN_DEFAULT);

	shutdown_all();
	workpool_free(hash_pool);   /* after the gateway's loops: their ports are closed */
	aio_remove_json(f_data_dir);
	uv_loop_close(A.loop);
	metrics_registry_free(A.reg);
	gw_front_free(&front);
	flags_free(specs);
	LOG_INFO("stopped", "clean=true");
	return 0;
}
