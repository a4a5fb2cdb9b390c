/*
 * main.c — iolake-gw: the stateless S3 gateway. Serves S3 on --s3-listen
 * (gateway/s3_server + gateway/s3_ops) against the meta group on --meta
 * and the OSDs its cluster map names, until SIGTERM/SIGINT.
 *
 *   iolake-gw --s3-listen 0.0.0.0:9000 --meta 10.0.0.1:7000,10.0.0.2:7000
 *
 * --admin-api-listen HOST:PORT also serves the admin HTTP API
 * (gateway/admin_api.h) there, against the same meta members; off unless
 * given. --native-listen HOST:PORT serves the native protocol (gateway/
 * native_loops.h) on every loop; off unless given.
 *
 * Root credentials: IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY, or
 * --root-credentials FILE, are put in meta as user root's key in the
 * background (meta/rootkey.h), so a cluster deployed with known keys
 * answers them.
 *
 * Threads (issue 19): --gw-loops N loop threads serve S3 (gateway/
 * gw_loops.h: default one per core; each its own meta client, map watch,
 * OSD channels and caches; one listening socket handing connections to
 * the least loaded loop). The admin API, the GC and lifecycle workers and
 * the degraded-PG flagger run on loop 0. The main thread's loop handles
 * the signals (SIGHUP reloads the TLS certificate for every loop: the
 * context is shared) and the root-key runner.
 *
 * Shutdown: stop accepting, close every loop's connections and then its
 * meta clients and OSD channels, join the loops; alarm() ends a shutdown
 * that takes longer than SHUTDOWN_LIMIT_S.
 *
 * Owns the process: flags, signals and the shutdown limit. Serves nothing
 * itself.
 */
#include <errno.h>
#include <unistd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/ec.h"
#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/check.h"
#include "common/crash.h"
#include "common/memstats.h"
#include "common/metrics.h"
#include "common/rpc_fault.h"
#include "common/workpool.h"
#include "gateway/admin_api.h"
#include "gateway/gw_creds.h"
#include "gateway/gw_front.h"
#include "gateway/http_accept.h"
#include "gateway/gw_loops.h"
#include "common/rpc_tls.h"
#include "gateway/lc_worker.h"
#include "gateway/native_loops.h"
#include "gateway/s3_ops.h"
#include "gateway/s3_sse.h"
#include "meta/rootkey.h"
#include "meta/secret.h"

#define PROG "iolake-gw"
#define SHUTDOWN_LIMIT_S 10

static const char *f_listen = "127.0.0.1:9000";
static struct flag_list f_meta, f_domain;
static const char *f_region = "us-east-1";
static const char *f_log_level = "info";
static const char *f_debug_fault;   /* tests only: common/rpc_fault.h */
static const char *f_ec = "4+2";
static uint64_t f_inline_max = 4096;
static uint64_t f_debug_min_part;   /* tests: lower multipart minimum */
static int64_t f_max_conns = 1024;
static int64_t f_gw_loops;          /* 0: one per core (gw_loops_default) */
static int64_t f_hash_threads = -1; /* common/workpool.h; -1: one per core */
static uint64_t f_segment_size = 1u << 20;   /* GW_SEGMENT_FLAG */
static uint64_t f_buffer_pool = GW_BUFFER_POOL_DEFAULT;   /* GW_BUFFER_POOL_FLAG */
static uint64_t f_gc_interval = 10000;
static uint64_t f_lc_interval = 3600000, f_lc_day_s;
static const char *f_secret_file;
static const char *f_sse_key_file;
static bool f_sse_c_http;
static const char *f_root_creds;
static bool f_sigv2 = true;
static const char *f_admin_api_listen;
static const char *f_native_listen;   /* issue 19: the native protocol (off unless given) */
static struct gw_front front = GW_FRONT_DEFAULTS;
static struct rpc_tls_files f_rpc_tls;

static const struct flag_spec specs[] = {
	RPC_TLS_FLAGS(f_rpc_tls),
	{ .name = "s3-listen", .type = FLAG_STRING, .dst = &f_listen, .metavar = "HOST:PORT",
	  .help = "S3 HTTP address (port 0 picks one; it is logged)" },
	{ .name = "meta", .type = FLAG_LIST, .dst = &f_meta, .required = true,
	  .metavar = "ADDR,...", .help = "meta members, host:port,..." },
	{ .name = "region", .type = FLAG_STRING, .dst = &f_region,
	  .help = "region clients sign for and GetBucketLocation reports" },
	{ .name = "domain", .type = FLAG_LIST, .dst = &f_domain, .metavar = "NAME,...",
	  .help = "domains for virtual-host style addressing (bucket.NAME)" },
	{ .name = "ec", .type = FLAG_STRING, .dst = &f_ec, .metavar = "K+M",
	  .help = "erasure code of new objects (the cluster map's)" },
	{ .name = "inline-max-size", .type = FLAG_SIZE, .dst = &f_inline_max, .min = 0,
	  .max = 65536, .help = "objects up to this size live in their meta record" },
	{ .name = "debug-min-part-size", .type = FLAG_SIZE, .dst = &f_debug_min_part, .min = 0,
	  .max = 5ull << 20, .metavar = "BYTES",
	  .help = "tests only: multipart minimum part size (0: S3's 5 MiB)" },
	{ .name = "max-conns", .type = FLAG_INT64, .dst = &f_max_conns, .min = 1,
	  .max = 65536, .help = "client connections served at once" },
	GW_LOOPS_FLAG(f_gw_loops),
	{ .name = "gc-interval", .type = FLAG_DURATION, .dst = &f_gc_interval,
	  .max = 86400000, .help = "between rounds of the shard GC worker (0: no worker)" },
	{ .name = "sigv2", .type = FLAG_BOOL, .dst = &f_sigv2,
	  .help = "accept AWS Signature Version 2 (Debian 12's boto3 presigns with it)" },
	{ .name = "log-level", .type = FLAG_STRING, .dst = &f_log_level,
	  .help = "debug, info, warn or error" },
	{ .name = "root-credentials", .type = FLAG_STRING, .dst = &f_root_creds,
	  .metavar = "FILE", .help = "access_key= and secret_key= lines: user root gets that "
		  "key (IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY win over it)" },
	{ .name = "admin-api-listen", .type = FLAG_STRING, .dst = &f_admin_api_listen,
	  .metavar = "HOST:PORT", .help = "also serve the admin HTTP API here (off unless given)" },
	{ .name = "native-listen", .type = FLAG_STRING, .dst = &f_native_listen,
	  .metavar = "HOST:PORT", .help = "also serve the native protocol (RPC: libiolake, the "
		  "iolake CLI) here (off unless given)" },
	{ .name = "secret-key-file", .type = FLAG_STRING, .dst = &f_secret_file, .metavar = "FILE",
	  .help = "the cluster key (mode 0600) that opens the access key secrets meta stores "
		  "sealed (meta's --secret-key-file)" },
	{ .name = "sse-master-key-file", .type = FLAG_STRING, .dst = &f_sse_key_file,
	  .metavar = "FILE", .help = "the SSE-S3 master key (64 hex digits, mode 0600; "
		  "`iolake-admin cluster init-key` makes one): without it SSE-S3 is refused" },
	{ .name = "sse-c-allow-http", .type = FLAG_BOOL, .dst = &f_sse_c_http,
	  .help = "accept SSE-C keys over plain HTTP from other hosts (loopback always is)" },
	GW_FRONT_FLAGS(front),
	LC_FLAGS(f_lc_interval, f_lc_day_s),
	RPC_FAULT_FLAG(f_debug_fault),
	WORKPOOL_HASH_FLAG(f_hash_threads),
	GW_SEGMENT_FLAG(f_segment_size),
	GW_BUFFER_POOL_FLAG(f_buffer_pool),
	{ 0 }
};

static struct gw_loops *loops;
static struct admin_api *api;
static struct native_loops *native;   /* on every loop */
static struct rootkey_runner *rootkey;
static uv_signal_t sig_term, sig_int, sig_hup;

static void on_signal(uv_signal_t *s, int signum)
{
	(void)s;
	LOG_INFO("stopping", "signal=%d", signum);
	alarm(SHUTDOWN_LIMIT_S); /* SIGALRM's default action ends a stuck shutdown */
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
	uv_close((uv_handle_t *)&sig_hup, NULL);
	rootkey_runner_stop(rootkey);
	rootkey = NULL;
	/* the main loop ends now; main() takes the loops down */
}

/* SIGHUP: the TLS context is one for every loop (swapped under its
 * mutex; each loop's next handshake takes the new one). */
static void on_sighup(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	gw_front_reload(&front);
	rpc_tls_reload_default();
}

/* On loop 0. */
struct api_start {
	struct admin_api_cfg *ac;
	int rc;
};

static void api_start_fn(void *arg)
{
	struct api_start *as = arg;
	as->rc = admin_api_start(&gw_loops_thread(loops, 0)->loop, as->ac, &api);
}

static void on_api_closed(void *arg)
{
	uv_sem_post(arg);
}

static void api_close_fn(void *arg)
{
	admin_api_close(api, on_api_closed, arg);
	api = NULL;
}

static void stop_api(void)
{
	native_loops_close(native);   /* freed after gw_loops_stop */
	if (!api)
		return;
	uv_sem_t sem;
	uv_sem_init(&sem, 0);
	if (loop_thread_call(gw_loops_thread(loops, 0), api_close_fn, &sem) == 0)
		uv_sem_wait(&sem);
	uv_sem_destroy(&sem);
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
	char host[256];
	int port;
	if (http_accept_split(f_listen, host, sizeof(host), &port)) {
		fprintf(stderr, "%s: flag --s3-listen: '%s' is not host:port\n", PROG, f_listen);
		return 2;
	}
	unsigned k, m;
	if (ec_parse(f_ec, &k, &m)) {
		fprintf(stderr, "%s: flag --ec: want K+M such as 4+2, not '%s'\n", PROG, f_ec);
		return 2;
	}
	struct rootkey_creds creds;
	char cerr[512];
	int have_creds = rootkey_load(f_root_creds, &creds, cerr, sizeof(cerr));
	if (have_creds < 0) {
		fprintf(stderr, "%s: root credentials: %s\n", PROG, cerr);
		return 2;
	}
	static struct meta_secret secret;   /* lookups use it until exit */
	if (f_secret_file) {
		if (meta_secret_load(f_secret_file, &secret, cerr, sizeof(cerr))) {
			fprintf(stderr, "%s: flag --secret-key-file: %s\n", PROG, cerr);
			return 2;
		}
		gw_creds_set_secret(&secret);
		creds.secret = &secret;
	}
	static struct meta_secret sse_master;   /* SSE-S3's master key, until exit */
	if (f_sse_key_file && meta_secret_load(f_sse_key_file, &sse_master, cerr, sizeof(cerr))) {
		fprintf(stderr, "%s: flag --sse-master-key-file: %s\n", PROG, cerr);
		return 2;
	}
	s3_sse_configure(f_sse_key_file ? &sse_master : NULL, f_sse_c_http);
	log_set_level((enum log_level)lvl);
	log_set_thread_context("svc=gw");
	if (rpc_fault_flag_apply(PROG, f_debug_fault))
		return 2;
	if (gw_front_setup(&front, cerr, sizeof(cerr)) ||
	    rpc_tls_setup(&f_rpc_tls, cerr, sizeof(cerr))) {
		fprintf(stderr, "%s: %s\n", PROG, cerr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	crash_report_install(PROG);   /* a crash leaves its stack in the log */

	uv_loop_t *loop = uv_default_loop();
	char lc_holder[128];
	lc_worker_holder_name(lc_holder, sizeof(lc_holder), f_listen);
	struct metrics_registry *reg = metrics_registry_new();
	if (!reg || iol_check_register_metrics(reg) || memstats_register_metrics(reg)) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return 1;
	}
	static struct gw_loops_cfg gc;   /* large (the ops table) */
	gc.n = f_gw_loops ? (unsigned)f_gw_loops : gw_loops_default();
	gc.ops = (struct s3_ops_cfg){ .meta = f_meta.items, .n_meta = f_meta.n,
				      .region = f_region,
				      .data = { .k = k, .m = m,
						.segment_bytes = (uint32_t)f_segment_size,
						.pool_max_bytes = f_buffer_pool ? f_buffer_pool : 1,
						.hash_pool = workpool_hash_start(f_hash_threads) },
				      .inline_max_bytes = (uint32_t)(f_inline_max ? f_inline_max : 1),
				      .debug_min_part_bytes = f_debug_min_part, .metrics = reg,
				      .gc_interval_ms = (uint32_t)f_gc_interval,
				      .lc_interval_ms = (uint32_t)f_lc_interval,
				      .lc_day_ms = f_lc_day_s * 1000, .lc_holder = lc_holder };
	struct s3_server_cfg *sc = &gc.srv;
	sc->http = (struct http_server_cfg){ .addr = host, .port = port,
					     .max_conns = (uint32_t)f_max_conns };
	sc->domains = f_domain.items;
	sc->n_domains = f_domain.n;
	sc->region = f_region;
	sc->no_sigv2 = !f_sigv2;
	gw_front_apply(&front, &sc->http);
	gw_front_apply_users(&front, &sc->user_limit);
	sc->slow_log = true;
	sc->hash_pool = gc.ops.data.hash_pool;   /* one pool; a completion port per loop */
	sc->slow_request_ms = front.slow_request_ms;
	bool bind_failed;
	rc = gw_loops_start(&gc, &loops, &bind_failed);
	if (rc) {
		if (bind_failed)
			fprintf(stderr, "%s: flag --s3-listen %s: %s\n", PROG, f_listen,
				iol_strerror(rc));
		else
			fprintf(stderr, "%s: cannot start: %s\n", PROG, iol_strerror(rc));
		metrics_registry_free(reg);
		workpool_free(gc.ops.data.hash_pool);
		return 1;
	}
	if (f_admin_api_listen) {
		char ahost[256];
		int aport;
		struct admin_api_cfg ac = { .addr = ahost, .meta = (const char *const *)f_meta.items,
					    .n_meta = f_meta.n, .region = f_region,
					    .stats = s3_ops_stats(gw_loops_ops(loops, 0)),
					    .gc = s3_ops_gc(gw_loops_ops(loops, 0)),
					    .map = s3_ops_map(gw_loops_ops(loops, 0)) };
		rc = http_accept_split(f_admin_api_listen, ahost, sizeof(ahost), &aport);
		ac.port = aport;
		struct api_start as = { .ac = &ac };
		if (!rc) {
			loop_thread_call(gw_loops_thread(loops, 0), api_start_fn, &as);
			rc = as.rc;
		}
		if (rc) {
			fprintf(stderr, "%s: flag --admin-api-listen %s: %s\n", PROG,
				f_admin_api_listen, rc == -EINVAL ? "not host:port" : iol_strerror(rc));
			api = NULL;
			gw_loops_stop(loops);
			metrics_registry_free(reg);
			workpool_free(gc.ops.data.hash_pool);
			return rc == -EINVAL ? 2 : 1;
		}
		LOG_INFO("admin API listening", "addr=%s:%d", ahost, admin_api_port(api));
	}
	if (f_native_listen) {
		/* Served on every loop, as S3 (gateway/native_loops.h). */
		struct native_cfg nc = { .listen = f_native_listen, .limit = sc->http.limit };
		int native_rc = native_loops_start(loops, &nc, &native);
		if (native_rc) {
			fprintf(stderr, "%s: flag --native-listen %s: %s\n", PROG, f_native_listen,
				iol_strerror(native_rc));
			native = NULL;
			stop_api();
			gw_loops_stop(loops);
			metrics_registry_free(reg);
			workpool_free(gc.ops.data.hash_pool);
			return 1;
		}
		LOG_INFO("native protocol listening", "addr=%s port=%d", f_native_listen,
			 native_loops_port(native));
	}
	if (have_creds) {
		rc = rootkey_runner_start(loop, (const char *const *)f_meta.items, f_meta.n, &creds,
					  &rootkey);
		if (rc)
			LOG_ERROR("cannot ensure the root credentials", "err=%s",
				  LOG_Q(iol_strerror(rc)));
	}
	uv_signal_init(loop, &sig_term);
	uv_signal_init(loop, &sig_int);
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_init(loop, &sig_hup);
	uv_signal_start(&sig_hup, on_sighup, SIGHUP);
	LOG_INFO("listening", "s3=%s://%s:%d meta=%zu region=%s ec=%u+%u loops=%u",
		 gw_front_scheme(&front), host, gw_loops_port(loops), f_meta.n, f_region, k, m,
		 gw_loops_n(loops));
	uv_run(loop, UV_RUN_DEFAULT);
	stop_api();
	gw_loops_stop(loops);
	loops = NULL;
	native_loops_free(native);
	native = NULL;
	metrics_registry_free(reg);
	workpool_free(gc.ops.data.hash_pool);
	LOG_INFO("stopped", "clean=true");
	uv_loop_close(loop);
	gw_front_free(&front);
	flags_free(specs);
	return 0;
}
