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
 *
 * This file is main()'s sequence of startup steps, the control steps and
 * shutdown. The rest, by job: flags and their checks (aio_flags.c), the
 * addresses settled before start (aio_ports.c), the data directory's
 * files (aio_files.c), one OSD (aio_osd.c), the gateway (aio_gw.c), the
 * banner (aio_banner.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "aio/aio_banner.h"
#include "aio/aio_files.h"
#include "aio/aio_flags.h"
#include "aio/aio_gw.h"
#include "aio/aio_osd.h"
#include "aio/aio_ports.h"
#include "common/check.h"
#include "common/crash.h"
#include "common/err.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/memstats.h"
#include "common/metrics.h"
#include "common/rpc.h"
#include "common/rpc_fault.h"
#include "common/workpool.h"
#include "gateway/gw_creds.h"
#include "common/rpc_tls.h"
#include "gateway/gw_front.h"
#include "gateway/s3_ops.h"
#include "gateway/s3_sse.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta/rootkey.h"
#include "meta/secret.h"
#include "osd/metaclient.h"
#include "osd/store/cache.h"

#define PROG AIO_PROG
#define SHUTDOWN_LIMIT_S 15
#define BEAT_MS 1000
#define RETRY_MS 200

/* The flags' values (aio_flags.h), set once by main() before any thread
 * starts; the ports of its addresses are updated as they are bound. */
static struct aio_opts *O;

static struct workpool *hash_pool;       /* NULL: hashing on the gateway loop */

/* ------------------------------------------------------------ services */

static struct {
	uv_loop_t *loop;          /* main: control + signals */
	struct metrics_registry *reg;
	char meta_addr[64];       /* RPC host:port */
	char meta_target[64];     /* what clients dial */
	struct loop_thread meta_lt;
	struct meta_node *meta;
	struct osd_slot osds[AIO_MAX_OSDS];
	int n_osds;
	struct store_cache *osd_cache; /* --osd-cache, shared by the OSDs' stores */
	struct aio_gw gw;         /* the gateway's loops, admin API, native (aio_gw.h) */
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
	snprintf(dir, sizeof(dir), "%s/meta", O->data_dir);
	struct meta_node_opts o = { .id = 1, .data_dir = dir, .listen = A.meta_addr,
				    .local_name = "meta", .peers = &peer, .n_peers = 1,
				    .pg_count = (uint32_t)O->pg_count, .ec_k = O->k, .ec_m = O->m,
				    /* its OSDs all register at start: the first table
				     * spreads data slots over all of them */
				    .expect_osds = (uint32_t)O->osds,
				    .osd_down_after_ms = 5000, .osd_out_after_ms = 600000,
				    .snapshot_bytes = O->snap_bytes, .cache_bytes = O->meta_cache,
				    .snapshot_threshold = (unsigned)O->snap_threshold,
				    .write_buffer_bytes = O->meta_wbuf, .metrics = A.reg,
				    .range_groups = (unsigned)O->range_groups,
				    .secret = &A.secret,
				    .log_calls = true, .slow_op_ms = (uint32_t)O->slow_op_ms,
				    .range_split_objects = O->split_objects,
				    .range_split_bytes = O->split_bytes,
				    .range_merge_objects = O->merge_objects,
				    .range_split_load = O->split_load,
				    .range_split_load_secs = (unsigned)O->split_load_secs };
	char adm[96];
	snprintf(adm, sizeof(adm), "%s:%d", O->madm.host, O->madm.port);
	o.admin_listen = adm;
	*rc = meta_node_start(&A.meta_lt.loop, &o, &A.meta);
	if (!*rc)
		O->madm.port = meta_node_admin_port(A.meta);
}

static void meta_close_fn(void *arg)
{
	struct sync_call *sc = arg;
	meta_node_close(A.meta, sync_done, sc);
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
	struct aio_json j = { .data_dir = O->data_dir, .region = O->region, .s3_host = O->s3.host,
			      .madm_host = O->madm.host, .api_host = O->api.host,
			      .s3_port = O->s3.port, .madm_port = O->madm.port, .api_port = O->api.port,
			      .native_host = O->native_off ? NULL : O->native.host,
			      .native_port = O->native.port,
			      .gw_loops = O->gw_loops ? (unsigned)O->gw_loops : gw_loops_default() };
	aio_write_json(&j);
	aio_banner_print(O, A.n_osds, A.ak, A.sk);
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
	gw_front_reload(&O->front);
	rpc_tls_reload_default();
}

/* The data directory and its keys: DIR, DIR/meta, the root credentials,
 * the cluster key, the SSE master key (aio/aio_files.h). */
static void open_data_dir(void)
{
	char dir[4200], kerr[512];
	int rc;
	if ((rc = mkdir_p(O->data_dir)))
		die("flag --data-dir %s: %s", O->data_dir, strerror(-rc));
	snprintf(dir, sizeof(dir), "%s/meta", O->data_dir);
	if ((rc = mkdir_p(dir)))
		die("%s: %s", dir, strerror(-rc));
	if (aio_credentials(O->data_dir, A.ak, A.sk, kerr, sizeof(kerr)))
		die("%s", kerr);
	if (aio_cluster_key(O->data_dir, dir, &A.secret, kerr, sizeof(kerr)))
		die("cluster key: %s", kerr);
	gw_creds_set_secret(&A.secret);
	if (aio_sse_key(O->data_dir, O->sse_key_file, &A.sse_master, kerr, sizeof(kerr)))
		die("sse master key: %s", kerr);
	s3_sse_configure(&A.sse_master, O->sse_c_http);
}

/* Addresses (aio/aio_ports.h), metrics, TLS: what the services share. */
static void prepare_services(void)
{
	int rc;
	if ((rc = aio_ports_meta_address(O->data_dir, A.meta_addr))) {
		if (rc == -EADDRINUSE && A.meta_addr[0])
			die("meta's address %s (kept in %s/meta/rpc-addr) or its Raft port + 1 "
			    "stayed in use for %d s: another socket holds it (ss -tanp shows which)",
			    A.meta_addr, O->data_dir, AIO_PORTS_WAIT_MS / 1000);
		die("no free port pair for meta on 127.0.0.1: %s", strerror(-rc));
	}
	aio_ports_check_madm(&O->madm);
	snprintf(A.meta_target, sizeof(A.meta_target), "%s",
		 O->loopback ? A.meta_addr : "local:meta");
	A.reg = metrics_registry_new();
	if (!A.reg || iol_check_register_metrics(A.reg) || memstats_register_metrics(A.reg))
		die("out of memory");
	char ferr[512];
	if (gw_front_setup(&O->front, ferr, sizeof(ferr)) ||
	    rpc_tls_setup(&O->rpc_tls, ferr, sizeof(ferr)))
		die("%s", ferr);
}

static void start_meta(void)
{
	if (loop_thread_start(&A.meta_lt, "meta"))
		die("cannot start a thread");
	int mrc = 0;
	loop_thread_call(&A.meta_lt, meta_start_fn, &mrc);
	if (mrc == -EADDRINUSE)
		die("meta: cannot start: an address is in use (its RPC %s, or --admin-listen %s:%d)",
		    A.meta_addr, O->madm.host, O->madm.port);
	if (mrc)
		die("meta: cannot start: %s", iol_strerror(mrc));
}

/* Each OSD on its thread (aio/aio_osd.h). 0, or 1 after saying why (the
 * OSDs started so far are left for shutdown_all). */
static int start_osds(void)
{
	static struct aio_osd_opts oo;   /* the OSDs' threads read it until they stop */
	int crc = store_cache_new(O->osd_cache, &A.osd_cache);
	if (!crc)
		crc = store_cache_register_metrics(A.osd_cache, A.reg);
	if (crc)
		die("osd cache: %s", iol_strerror(crc));
	oo = (struct aio_osd_opts){ .reg = A.reg, .meta_target = A.meta_target,
				    .cache = A.osd_cache, .write_buffer_bytes = O->osd_wbuf,
				    .loopback = O->loopback, .osd_size = O->osd_size,
				    .scrub_rate = O->scrub_rate, .scrub_interval_ms = O->scrub_interval,
				    .slow_op_ms = O->slow_op_ms, .orphan_interval_ms = O->orphan_interval,
				    .orphan_grace_ms = O->orphan_grace, .recovery_rate = O->recovery_rate,
				    .recovery_rescan_ms = O->recovery_rescan,
				    .deep_scrub_ms = O->deep_scrub, .pg_report_ms = O->pg_report_interval,
				    .recovery_max_pgs = O->recovery_max_pgs, .beat_ms = BEAT_MS,
				    .retry_ms = RETRY_MS };
	for (int i = 0; i < A.n_osds; i++) {
		struct osd_slot *o = &A.osds[i];
		o->opt = &oo;
		o->id = (uint32_t)i + 1;
		snprintf(o->dir, sizeof(o->dir), "%s/osd-%u", O->data_dir, o->id);
		int rc = mkdir_p(o->dir);
		if (rc)
			die("%s: %s", o->dir, strerror(-rc));
		char name[16];
		snprintf(name, sizeof(name), "osd.%u", o->id);
		if (loop_thread_start(&o->lt, name))
			die("cannot start a thread");
		loop_thread_call(&o->lt, aio_osd_start_fn, o);
		if (o->rc) {
			fprintf(stderr, "%s: osd %u: %s\n", PROG, o->id, o->err);
			A.n_osds = i + 1;
			return 1;
		}
	}
	return 0;
}

/* The gateway on --gw-loops threads (aio/aio_gw.h), then the ports it
 * bound. 0, or 1 after saying which address failed. */
static int start_gateway(void)
{
	hash_pool = workpool_hash_start(O->hash_threads);
	struct aio_gw_cfg gc = { .loops = O->gw_loops ? (unsigned)O->gw_loops : gw_loops_default(),
				 .meta = A.meta_target, .listen = O->listen, .region = O->region,
				 .k = O->k, .m = O->m, .inline_max = (uint32_t)O->inline_max,
				 .debug_min_part = O->debug_min_part, .reg = A.reg,
				 .gc_interval_ms = (uint32_t)O->gc_interval,
				 .lc_interval_ms = (uint32_t)O->lc_interval,
				 .lc_day_ms = O->lc_day_s * 1000, .no_sigv2 = !O->sigv2,
				 .front = &O->front, .ready = aio_ready, .s3_host = O->s3.host,
				 .s3_port = O->s3.port, .api_host = O->api.host, .api_port = O->api.port,
				 .api_default = O->api.is_default, .hash_pool = hash_pool,
				 .segment_bytes = (uint32_t)O->segment_size,
				 .pool_max_bytes = O->buffer_pool ? O->buffer_pool : 1,
				 .native_off = O->native_off, .native_host = O->native.host,
				 .native_port = O->native.port, .native_default = O->native.is_default };
	const char *which;
	int grc = aio_gw_start(&gc, &A.gw, &which);
	if (grc) {
		if (which && !strcmp(which, "native"))
			fprintf(stderr, "%s: flag --native-listen %s:%d: %s\n", PROG, O->native.host,
				O->native.port, iol_strerror(grc));
		else if (which && !strcmp(which, "api"))
			fprintf(stderr, "%s: flag --admin-api-listen %s:%d: %s\n", PROG, O->api.host,
				O->api.port, iol_strerror(grc));
		else if (which)
			fprintf(stderr, "%s: flag --s3-listen %s: %s\n", PROG, O->listen,
				iol_strerror(grc));
		else
			fprintf(stderr, "%s: gateway: cannot start: %s\n", PROG, iol_strerror(grc));
		return 1;
	}
	O->s3.port = A.gw.s3_port;
	O->api.port = A.gw.api_port;
	O->native.port = A.gw.native_port;
	return 0;
}

/* The main loop's part: the meta client the control steps use, the
 * signals. */
static void start_control(void)
{
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
}

int main(int argc, char **argv)
{
	int rc = aio_flags_parse(argc, argv, &O);
	if (rc >= 0)
		return rc;
	A.n_osds = (int)O->osds;
	/* Before any thread: six OSDs, meta and the gateway run ~30 threads
	 * on a host of a few cores, and glibc's 8 arenas per core each kept
	 * what their threads freed (--malloc-arenas, docs/operations.md). */
	if (memstats_limit_arenas((int)O->malloc_arenas) < 0)
		fprintf(stderr, "%s: --malloc-arenas %lld: refused by malloc, its default kept\n", PROG,
			(long long)O->malloc_arenas);
	log_set_level((enum log_level)O->log_lvl);
	log_set_thread_context("svc=aio");
	if (rpc_fault_flag_apply(PROG, O->debug_fault))
		return 2;   /* before any service opens a channel */
	signal(SIGPIPE, SIG_IGN);
	crash_report_install(PROG);   /* a crash leaves its stack in the log */

	open_data_dir();
	prepare_services();
	start_meta();
	if (start_osds() || start_gateway()) {
		shutdown_all();
		return 1;
	}
	start_control();
	LOG_INFO("started", "s3=%s:%d meta=%s meta_admin=%s:%d admin_api=%s:%d osds=%d ec=%u+%u rpc=%s",
		 O->s3.host, O->s3.port, A.meta_addr, O->madm.host, O->madm.port, O->api.host,
		 O->api.port, A.n_osds, O->k, O->m, O->rpc);
	control_next();   /* root user and key, then the banner once every OSD is up */
	uv_run(A.loop, UV_RUN_DEFAULT);

	shutdown_all();
	workpool_free(hash_pool);   /* after the gateway's loops: their ports are closed */
	aio_remove_json(O->data_dir);
	uv_loop_close(A.loop);
	metrics_registry_free(A.reg);
	store_cache_free(A.osd_cache);   /* after the gauges reading it */
	gw_front_free(&O->front);
	aio_flags_free();
	LOG_INFO("stopped", "clean=true");
	return 0;
}
