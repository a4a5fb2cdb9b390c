/*
 * main.c — iolake-osd: one OSD process. Parses flags, opens the shard store
 * on the device, serves iolake.osd.Osd on --listen, probes meta, and shuts
 * down cleanly on SIGTERM/SIGINT.
 *
 * Everything runs on one libuv loop (this thread); RocksDB's commit thread
 * and io_uring completions reach it through the store. Refusals (bad
 * flags, missing device, unformatted or foreign device, meta dir of
 * another device) are printed to stderr as one line naming the problem,
 * with exit status 2 (flags) or 1 (device/store), before anything is
 * served.
 *
 * --scrub-rate / --scrub-interval pace the store's background scrubber
 * (osd/store/scrub.h), run by the service until shutdown.
 * --orphan-grace / --orphan-scan-interval drive the orphan sweep
 * (osd/sweep.h; with --meta only), stopped first at shutdown.
 *
 * With --meta, the recovery driver (osd/recover.h) rebuilds the missing
 * shards of the PGs this OSD is the primary of, paced by --recovery-rate
 * (--recovery-max-pgs, --pg-report-interval, --recovery-rescan-interval),
 * and deep-scrubs them every --deep-scrub-interval.
 *
 * With --metrics-listen, GET /metrics over HTTP (common/metrics_http) on
 * the same loop renders the OSD's registry.
 *
 * Shutdown order: stop serving /metrics; stop meta probing; stop the
 * recovery driver (its calls in flight cancelled); drain the service (new calls answer
 * UNAVAILABLE, calls in flight finish and are answered); close the RPC
 * server; close the store (commit thread joined, RocksDB closed); exit 0.
 * A watchdog exits 1 if that takes longer than SHUTDOWN_LIMIT_MS.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/check.h"
#include "common/crash.h"
#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/memstats.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "common/rpc_tls.h"
#include "common/rpc.h"
#include "common/rpc_fault.h"
#include "osd/metaclient.h"
#include "osd/recover.h"
#include "osd/service.h"
#include "osd/store/cache.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "osd/sweep.h"

#define PROG "iolake-osd"
#define SHUTDOWN_LIMIT_MS 10000

static int64_t f_id = -1;
static const char *f_device;
static uint64_t f_size;
static const char *f_meta_dir;
static const char *f_listen;
static const char *f_metrics_listen;
static struct flag_list f_meta;
static bool f_format, f_force;
static const char *f_cluster_id = "";
static uint64_t f_inline_max = 64 << 10;
static const char *f_log_level = "info";
static const char *f_debug_fault;   /* tests only: common/rpc_fault.h */
static const char *f_host;
static int64_t f_max_inflight = 256;
static uint64_t f_osd_cache = STORE_CACHE_DEFAULT_BYTES;
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

static struct rpc_tls_files f_tls;

static const struct flag_spec specs[] = {
	RPC_TLS_FLAGS(f_tls),
	{ .name = "id", .type = FLAG_INT64, .dst = &f_id, .required = true, .min = 0,
	  .max = UINT32_MAX, .help = "this OSD's id in the cluster (recorded in the superblock)" },
	{ .name = "device", .type = FLAG_STRING, .dst = &f_device, .required = true,
	  .metavar = "PATH", .help = "block device or preallocated file holding the shards" },
	{ .name = "size", .type = FLAG_SIZE, .dst = &f_size,
	  .help = "create --device as a regular file of this size if it is missing "
		  "(and format it); never under /dev" },
	{ .name = "meta-dir", .type = FLAG_STRING, .dst = &f_meta_dir, .required = true,
	  .metavar = "DIR", .help = "RocksDB directory of the shard index (created if missing)" },
	{ .name = "listen", .type = FLAG_STRING, .dst = &f_listen, .required = true,
	  .metavar = "ADDR", .help = "RPC address, host:port (port 0 picks one; it is logged)" },
	{ .name = "metrics-listen", .type = FLAG_STRING, .dst = &f_metrics_listen,
	  .metavar = "ADDR", .help = "serve Prometheus /metrics over HTTP on host:port "
		  "(default: not served; port 0 picks one, it is logged)" },
	{ .name = "meta", .type = FLAG_LIST, .dst = &f_meta, .metavar = "ADDR,...",
	  .help = "meta service addresses (host:port,...)" },
	{ .name = "host", .type = FLAG_STRING, .dst = &f_host, .metavar = "NAME",
	  .help = "failure domain announced to meta (default: this machine's hostname)" },
	{ .name = "format", .type = FLAG_BOOL, .dst = &f_format,
	  .help = "format a device that has no superblock" },
	{ .name = "force", .type = FLAG_BOOL, .dst = &f_force,
	  .help = "with --format: overwrite another OSD's superblock (destroys its data)" },
	{ .name = "cluster-id", .type = FLAG_STRING, .dst = &f_cluster_id, .metavar = "HEX|UUID",
	  .help = "cluster id, 32 hex digits or a UUID (default all zero)" },
	{ .name = "inline-max-size", .type = FLAG_SIZE, .dst = &f_inline_max, .min = 1,
	  .max = 1 << 20, .help = "shards up to this size are stored inline in the index" },
	{ .name = "log-level", .type = FLAG_STRING, .dst = &f_log_level,
	  .metavar = "LEVEL", .help = "debug, info, warn or error" },
	{ .name = "slow-op-ms", .type = FLAG_DURATION, .dst = &f_slow_op_ms, .min = 1,
	  .max = 86400000, .metavar = "MS",
	  .help = "log each shard call slower than this (request id, PG, shard, time queued vs "
		  "in the store)" },
	{ .name = "osd-cache", .type = FLAG_SIZE, .dst = &f_osd_cache, .min = 1 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "RocksDB block cache of the index (inline shards, index blocks)" },
	{ .name = "max-inflight", .type = FLAG_INT64, .dst = &f_max_inflight, .min = 1,
	  .max = 65536, .help = "shard calls served at once; more answer RESOURCE_EXHAUSTED" },
	{ .name = "scrub-rate", .type = FLAG_SIZE, .dst = &f_scrub_rate, .metavar = "BYTES",
	  .help = "background scrub: shard bytes re-read and verified per second (0: off)" },
	{ .name = "scrub-interval", .type = FLAG_DURATION, .dst = &f_scrub_interval, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000, .help = "from the end of one scrub pass to the next" },
	{ .name = "orphan-grace", .type = FLAG_DURATION, .dst = &f_orphan_grace, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000,
	  .help = "a shard no live object names is deleted once unreferenced this long "
		  "(must exceed the longest PUT)" },
	{ .name = "orphan-scan-interval", .type = FLAG_DURATION, .dst = &f_orphan_interval,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "from the end of one orphan sweep pass to the next (0: no sweep; needs --meta)" },
	{ .name = "recovery-rate", .type = FLAG_SIZE, .dst = &f_recovery_rate, .metavar = "BYTES",
	  .help = "shard bytes per second this OSD's recovery driver may write when rebuilding "
		  "the PGs it is the primary of (0: unthrottled)" },
	{ .name = "recovery-max-pgs", .type = FLAG_INT64, .dst = &f_recovery_max_pgs, .min = 1,
	  .max = 64, .help = "PGs this OSD scans and rebuilds at once" },
	{ .name = "pg-report-interval", .type = FLAG_DURATION, .dst = &f_pg_report_interval,
	  .min = 100, .max = 3600ll * 1000, .help = "how often the PG states are reported to meta" },
	{ .name = "recovery-rescan-interval", .type = FLAG_DURATION, .dst = &f_recovery_rescan,
	  .min = 1000, .max = 365ll * 24 * 3600 * 1000,
	  .help = "backstop: rescan every PG this OSD is the primary of this often" },
	{ .name = "deep-scrub-interval", .type = FLAG_DURATION, .dst = &f_deep_scrub,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "deep-scrub every PG this OSD is the primary of this often: read all k+m "
		  "shards of each whole stripe, re-encode, rewrite the one shard that "
		  "disagrees (0: off; needs --meta)" },
	RPC_FAULT_FLAG(f_debug_fault),
	{ 0 }
};

struct osd {
	uv_loop_t *loop;
	struct metrics_registry *reg;
	struct store_cache *cache;     /* --osd-cache */
	struct store *st;
	struct osd_service *svc;
	struct rpc_server *rpc;
	struct metrics_http *mhttp;   /* NULL without --metrics-listen */
	struct osd_metaclient *mc;
	struct osd_sweep *sweep;      /* NULL: off */
	struct osd_recover *rec;      /* NULL without --meta */
	uv_signal_t sigterm, sigint, sighup;
	uv_timer_t watchdog;
	bool stopping;
	int exit_code;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 32 hex digits, or a UUID (8-4-4-4-12); "" is all zero. */
static int parse_cluster_id(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (!*s)
		return 0;
	size_t len = strlen(s);
	bool uuid = len == 36;
	if (len != 32 && !uuid)
		return -EINVAL;
	int n = 0;
	for (size_t i = 0; i < len; i++) {
		if (uuid && (i == 8 || i == 13 || i == 18 || i == 23)) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		int v = hexval(s[i]);
		if (v < 0)
			return -EINVAL;
		out[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -EINVAL;
}

/* ------------------------------------------------------------ shutdown */

/* SIGHUP: reload the RPC certificate (--rpc-tls-*). */
static void on_sighup(uv_signal_t *h, int signum)
{
	(void)h;
	(void)signum;
	rpc_tls_reload_default();
}

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_store_closed(void *arg)
{
	struct osd *o = arg;
	osd_service_free(o->svc);
	o->svc = NULL;
	o->st = NULL;
	uv_close((uv_handle_t *)&o->sigterm, on_handle_closed);
	uv_close((uv_handle_t *)&o->sigint, on_handle_closed);
	uv_close((uv_handle_t *)&o->sighup, on_handle_closed);
	uv_close((uv_handle_t *)&o->watchdog, on_handle_closed);
	LOG_INFO("stopped", "clean=true");
}

static void on_drained(void *arg)
{
	struct osd *o = arg;
	LOG_INFO("drained; closing store", "");
	if (o->rpc)
		rpc_server_close(o->rpc);
	o->rpc = NULL;
	store_close(o->st, on_store_closed, o);
}

static void on_meta_stopped(void *arg)
{
	struct osd *o = arg;
	o->mc = NULL;
}

static void on_sweep_stopped(void *arg)
{
	struct osd *o = arg;
	osd_service_drain(o->svc, on_drained, o);
}

static void on_recover_stopped(void *arg)
{
	struct osd *o = arg;
	o->rec = NULL;
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	LOG_ERROR("shutdown took too long; exiting without a clean close",
		  "limit_ms=%d", SHUTDOWN_LIMIT_MS);
	_exit(1);
}

static void shutdown_begin(struct osd *o, const char *why)
{
	if (o->stopping)
		return;
	o->stopping = true;
	LOG_INFO("shutting down", "reason=%s inflight=%u", why, osd_service_inflight(o->svc));
	uv_timer_start(&o->watchdog, on_watchdog, SHUTDOWN_LIMIT_MS, 0);
	if (o->mhttp)
		metrics_http_close(o->mhttp, NULL, NULL);
	o->mhttp = NULL;
	if (o->mc)
		osd_metaclient_stop(o->mc, on_meta_stopped, o);
	/* The recovery driver stops beside the drain: its calls are
	 * cancelled, it touches no store directly. */
	if (o->rec) {
		osd_service_set_hooks(o->svc, NULL);
		osd_recover_stop(o->rec, on_recover_stopped, o);
	}
	if (o->sweep) {
		/* Its store deletes land before the store closes. */
		osd_service_set_sweep(o->svc, NULL);
		osd_sweep_stop(o->sweep, on_sweep_stopped, o);
		o->sweep = NULL;
		return;
	}
	osd_service_drain(o->svc, on_drained, o);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct osd *o = h->data;
	if (o->stopping) {
		LOG_WARN("second signal during shutdown; exiting now", "signal=%d", signum);
		_exit(1);
	}
	shutdown_begin(o, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	char err[1024];
	int rc = flags_parse_program(PROG, "", specs, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	int lvl = log_parse_level(f_log_level);
	if (lvl < 0) {
		fprintf(stderr, "%s: flag --log-level: '%s' is not debug, info, warn or error\n",
			PROG, f_log_level);
		flags_free(specs);
		return 2;
	}
	uint8_t cluster_id[16];
	if (parse_cluster_id(f_cluster_id, cluster_id)) {
		fprintf(stderr, "%s: flag --cluster-id: '%s' is not 32 hex digits or a UUID\n",
			PROG, f_cluster_id);
		flags_free(specs);
		return 2;
	}
	for (size_t i = 0; i < f_meta.n; i++) {
		if (!osd_metaclient_addr_valid(f_meta.items[i])) {
			fprintf(stderr, "%s: flag --meta: '%s' is not host:port\n", PROG,
				f_meta.items[i]);
			flags_free(specs);
			return 2;
		}
	}
	if (f_metrics_listen && !metrics_http_addr_valid(f_metrics_listen)) {
		fprintf(stderr, "%s: flag --metrics-listen: '%s' is not host:port "
			"(IPv4, [IPv6] or localhost)\n", PROG, f_metrics_listen);
		flags_free(specs);
		return 2;
	}
	if (f_force && !f_format) {
		fprintf(stderr, "%s: flag --force only makes sense with --format\n", PROG);
		flags_free(specs);
		return 2;
	}
	log_set_level((enum log_level)lvl);
	char ctx[48];
	snprintf(ctx, sizeof(ctx), "svc=osd.%lld", (long long)f_id);
	log_set_thread_context(ctx);
	if (rpc_fault_flag_apply(PROG, f_debug_fault)) {
		flags_free(specs);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	crash_report_install(PROG);   /* a crash leaves its stack in the log */
	char tls_err[512];
	if (rpc_tls_setup(&f_tls, tls_err, sizeof(tls_err))) {
		fprintf(stderr, "%s: %s\n", PROG, tls_err);
		flags_free(specs);
		return 2;
	}

	struct osd o = { .loop = uv_default_loop(), .exit_code = 0 };
	o.reg = metrics_registry_new();
	if (!o.reg || iol_check_register_metrics(o.reg) || memstats_register_metrics(o.reg) ||
	    rpc_tls_register_metrics(o.reg) ||
	    store_cache_new(f_osd_cache, &o.cache) ||
	    store_cache_register_metrics(o.cache, o.reg)) {
		fprintf(stderr, "%s: out of memory\n", PROG);
		return 1;
	}
	struct osd_service_opts so = { .osd_id = (uint32_t)f_id,
				       .max_inflight = (uint32_t)f_max_inflight,
				       .metrics = o.reg, .scrub_rate_bytes = f_scrub_rate,
				       .scrub_interval_ms = f_scrub_interval,
				       .slow_log = true, .slow_op_ms = (uint32_t)f_slow_op_ms };
	memcpy(so.cluster_id, cluster_id, 16);
	rc = osd_service_new(o.loop, &so, &o.svc);
	if (rc) {
		fprintf(stderr, "%s: service: %s\n", PROG, iol_strerror(rc));
		return 1;
	}
	struct store_opts sto = {
		.device_path = f_device,
		.create_size = f_size,
		.meta_dir = f_meta_dir,
		.osd_id = (uint32_t)f_id,
		.format = f_format,
		.force = f_force,
		.inline_max_bytes = (uint32_t)f_inline_max,
		.observer = osd_service_observer(o.svc),
		.cache = o.cache,
	};
	memcpy(sto.cluster_id, cluster_id, 16);
	rc = store_open(o.loop, &sto, &o.st, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: cannot start: %s\n", PROG, err);
		/* Release the service's timer (and whatever store_open left
		 * closing) before leaving. */
		osd_service_drain(o.svc, NULL, NULL);
		uv_run(o.loop, UV_RUN_DEFAULT);
		uv_loop_close(o.loop);
		osd_service_free(o.svc);
		metrics_registry_free(o.reg);
		store_cache_free(o.cache);
		flags_free(specs);
		return 1;
	}
	osd_service_attach(o.svc, o.st);

	uv_signal_init(o.loop, &o.sigterm);
	uv_signal_init(o.loop, &o.sigint);
	uv_timer_init(o.loop, &o.watchdog);
	o.sigterm.data = o.sigint.data = &o;
	uv_signal_start(&o.sigterm, on_signal, SIGTERM);
	uv_signal_start(&o.sigint, on_signal, SIGINT);
	uv_signal_init(o.loop, &o.sighup);
	uv_signal_start(&o.sighup, on_sighup, SIGHUP);

	o.rpc = rpc_server_new(o.loop, NULL);
	rc = o.rpc ? osd_service_register(o.svc, o.rpc) : -ENOMEM;
	if (rc == 0)
		rc = rpc_server_listen(o.rpc, f_listen);
	if (rc) {
		fprintf(stderr, "%s: flag --listen %s: %s\n", PROG, f_listen, iol_strerror(rc));
		/* The store is open: close it the normal way, then leave. */
		o.exit_code = 1;
		shutdown_begin(&o, "listen failed");
		uv_run(o.loop, UV_RUN_DEFAULT);
		goto out;
	}
	if (f_metrics_listen) {
		rc = metrics_http_start(o.loop, f_metrics_listen, o.reg, NULL, &o.mhttp);
		if (rc) {
			fprintf(stderr, "%s: flag --metrics-listen %s: %s\n", PROG,
				f_metrics_listen, iol_strerror(rc));
			o.exit_code = 1;
			shutdown_begin(&o, "metrics listen failed");
			uv_run(o.loop, UV_RUN_DEFAULT);
			goto out;
		}
		LOG_INFO("metrics listening", "addr=%s port=%d", LOG_Q(f_metrics_listen),
			 metrics_http_port(o.mhttp));
	}

	struct store_space sp;
	store_space(o.st, &sp);
	char cid[33];
	store_super_hex_id(cluster_id, cid);
	LOG_INFO("listening", "addr=%s port=%d", LOG_Q(f_listen), rpc_server_port(o.rpc));
	LOG_INFO("osd started", "id=%lld cluster=%s device=%s meta_dir=%s total_bytes=%llu "
		 "used_bytes=%llu free_bytes=%llu inline_max=%llu scrub_rate=%llu scrub_interval_ms=%llu",
		 (long long)f_id, cid, LOG_Q(f_device), LOG_Q(f_meta_dir),
		 (unsigned long long)sp.total_bytes, (unsigned long long)sp.used_bytes,
		 (unsigned long long)sp.free_bytes, (unsigned long long)f_inline_max,
		 (unsigned long long)f_scrub_rate, (unsigned long long)f_scrub_interval);

	if (f_meta.n) {
		/* Announce the port really bound (--listen may say :0). */
		char announce[160];
		const char *colon = strrchr(f_listen, ':');
		snprintf(announce, sizeof(announce), "%.*s:%d",
			 (int)(colon ? colon - f_listen : (ptrdiff_t)strlen(f_listen)), f_listen,
			 rpc_server_port(o.rpc));
		struct osd_metaclient_opts mo = { .addrs = f_meta.items, .naddrs = f_meta.n,
						  .osd_id = (uint32_t)f_id, .listen_addr = announce,
						  .host = f_host, .capacity_bytes = sp.total_bytes };
		rc = osd_metaclient_start(o.loop, &mo, &o.mc);
		if (rc)
			LOG_ERROR("meta client did not start; serving without meta", "err=%s",
				  LOG_Q(iol_strerror(rc)));
		if (f_orphan_interval) {
			struct osd_sweep_opts wo = { .osd_id = (uint32_t)f_id,
						     .meta = (const char *const *)f_meta.items,
						     .n_meta = f_meta.n, .grace_ms = f_orphan_grace,
						     .interval_ms = f_orphan_interval,
						     .metrics = o.reg };
			rc = osd_sweep_start(o.loop, o.st, &wo, &o.sweep);
			if (rc)
				LOG_ERROR("orphan sweep did not start", "err=%s",
					  LOG_Q(iol_strerror(rc)));
			else
				osd_service_set_sweep(o.svc, o.sweep);
		}
		/* Until meta marks this OSD up, the map makes it the primary
		 * of nothing: the driver can start at once. */
		struct osd_recover_opts ro = { .osd_id = (uint32_t)f_id, .meta = f_meta.items,
					       .n_meta = f_meta.n, .rate_bytes = f_recovery_rate,
					       .max_pgs = (uint32_t)f_recovery_max_pgs,
					       .report_ms = (uint32_t)f_pg_report_interval,
					       .rescan_ms = f_recovery_rescan,
					       .deep_scrub_ms = f_deep_scrub, .metrics = o.reg };
		rc = osd_recover_start(o.loop, &ro, &o.rec);
		if (rc) {
			LOG_ERROR("recovery driver did not start; serving without it", "err=%s",
				  LOG_Q(iol_strerror(rc)));
			o.rec = NULL;
		} else {
			struct osd_service_hooks h;
			osd_recover_hooks(o.rec, &h);
			osd_service_set_hooks(o.svc, &h);
		}
	} else {
		LOG_WARN("no --meta given: not registering with a cluster", "");
	}

	uv_run(o.loop, UV_RUN_DEFAULT);
out:
	if (uv_loop_close(o.loop) != 0)
		LOG_WARN("loop closed with handles still open", "");
	if (o.svc)
		osd_service_free(o.svc);
	metrics_registry_free(o.reg);
	store_cache_free(o.cache);   /* after the gauges reading it */
	flags_free(specs);
	return o.exit_code;
}
