/*
 * main.c — iolake-meta: one member of the meta service (meta/node.h): the
 * root Raft group and the groups the root gives it, on the main thread's
 * loop, until SIGTERM or SIGINT (clean close: every group's Raft and
 * RocksDB, and the sockets, are closed before exit).
 *
 *   iolake-meta --id N --data-dir DIR --listen HOST:PORT --peers ID@HOST:PORT,... [--join]
 *
 * --join: a new member for a running group. It does not bootstrap; it
 * starts empty and waits until the leader adds it (`iolake-admin member
 * add ID@HOST:PORT`), then catches up from the leader. --peers must hold
 * this member (and may hold only it).
 *
 * The Raft transport (one port for every group) listens on HOST:PORT+1
 * (docs/architecture.md); HOST must be an IPv4 address.
 *
 * Root credentials: with IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY
 * in the environment, or --root-credentials FILE, the member makes sure
 * meta holds user root with that key once a leader is there
 * (meta/rootkey.h); every member may do it, it is idempotent.
 *
 * --rpc-tls-ca/--rpc-tls-cert/--rpc-tls-key: mutual TLS on the RPC port
 * (common/rpc_tls.h), SIGHUP reloads the certificate. Raft's port stays
 * plain TCP.
 *
 * --metrics-listen HOST:PORT: GET /metrics over HTTP (common/metrics_http)
 * on the same loop, rendering the member's registry (the one the Metrics
 * RPC renders). Off unless given.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "common/check.h"
#include "common/crash.h"
#include "common/ec.h"
#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/memstats.h"
#include "common/metrics.h"
#include "common/metrics_http.h"
#include "common/place.h"
#include "common/rpc_fault.h"
#include "common/rpc_tls.h"
#include "meta/node.h"
#include "meta/rootkey.h"
#include "meta/secret.h"

static struct meta_node *node;
static struct metrics_http *mhttp;
static struct rootkey_runner *rootkey;
static uv_signal_t sig_term, sig_int, sig_hup;

static void on_closed(void *ud)
{
	(void)ud;
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
	uv_close((uv_handle_t *)&sig_hup, NULL);
}

/* SIGHUP: reload the RPC certificate (--rpc-tls-*). */
static void on_sighup(uv_signal_t *s, int signum)
{
	(void)s;
	(void)signum;
	rpc_tls_reload_default();
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)s;
	LOG_INFO("stopping", "signal=%d", signum);
	uv_signal_stop(&sig_term);
	uv_signal_stop(&sig_int);
	rootkey_runner_stop(rootkey);
	rootkey = NULL;
	if (mhttp) {
		metrics_http_close(mhttp, NULL, NULL);
		mhttp = NULL;
	}
	if (node) {
		meta_node_close(node, on_closed, NULL);
		node = NULL;
	}
}

int main(int argc, char **argv)
{
	int64_t id = 0;
	const char *data_dir = NULL, *listen = NULL, *log_level = "info", *ec = "4+2";
	const char *metrics_listen = NULL, *root_creds = NULL, *secret_file = NULL;
	struct flag_list peers = { 0 };
	bool join = false;
	struct rpc_tls_files tlsf = { 0 };
	uint64_t snap_threshold = 1024, snap_trailing = 128, pg_count = 256, expect_osds = 0;
	uint64_t debug_op_level = 0;
	uint64_t range_groups = META_RANGE_GROUPS_DEFAULT;
	uint64_t split_objects = META_RANGE_SPLIT_OBJECTS_DEFAULT, split_bytes = 0, merge_objects = 0;
	uint64_t split_load = META_RANGE_SPLIT_LOAD_DEFAULT;
	uint64_t split_load_secs = META_RANGE_SPLIT_LOAD_SECS_DEFAULT;
	uint64_t snap_bytes = 64ull << 20, cache_bytes = 256ull << 20, wbuf_bytes = 64ull << 20;
	uint64_t segment_bytes = META_NODE_SEGMENT_BYTES, range_segment_bytes = META_RANGE_SEGMENT_BYTES;
	uint64_t election_ms = 500, heartbeat_ms = 100;   /* meta/node.c says why */
	uint64_t down_after_ms = 10000, out_after_ms = 60000, slow_op_ms = 1000;
	const char *debug_fault = NULL;
	const struct flag_spec specs[] = {
		RPC_TLS_FLAGS(tlsf),
		{ .name = "id", .type = FLAG_INT64, .dst = &id, .required = true, .min = 1,
		  .max = 1000000, .help = "this member's Raft id (one of --peers)" },
		{ .name = "data-dir", .type = FLAG_STRING, .dst = &data_dir, .required = true,
		  .help = "directory for the Raft log and the state (created if missing)" },
		{ .name = "listen", .type = FLAG_STRING, .dst = &listen, .required = true,
		  .metavar = "HOST:PORT", .help = "RPC address; Raft uses HOST:PORT+1" },
		{ .name = "metrics-listen", .type = FLAG_STRING, .dst = &metrics_listen,
		  .metavar = "HOST:PORT", .help = "serve Prometheus /metrics over HTTP here "
			  "(default: not served; port 0 picks one, it is logged)" },
		{ .name = "peers", .type = FLAG_LIST, .dst = &peers, .required = true,
		  .metavar = "ID@HOST:PORT,...", .help = "initial voters (RPC addresses), this one included" },
		{ .name = "join", .type = FLAG_BOOL, .dst = &join,
		  .help = "join a running group: no bootstrap, wait for `iolake-admin member add`" },
		{ .name = "log-level", .type = FLAG_STRING, .dst = &log_level,
		  .help = "debug, info, warn, error" },
		{ .name = "snapshot-threshold", .type = FLAG_UINT64, .dst = &snap_threshold, .min = 16,
		  .max = 1 << 24, .help = "entries between snapshots" },
		{ .name = "snapshot-bytes", .type = FLAG_SIZE, .dst = &snap_bytes, .min = 1 << 20,
		  .max = 1ull << 40, .metavar = "BYTES",
		  .help = "or command bytes applied between snapshots, whichever comes first" },
		{ .name = "meta-cache", .type = FLAG_SIZE, .dst = &cache_bytes, .min = 8 << 20,
		  .max = 1ull << 40, .metavar = "BYTES",
		  .help = "RocksDB caches, shared by every group's state: blocks (data, index, "
			  "filter) and, an eighth of it, rows (point reads' results)" },
		{ .name = "meta-write-buffer", .type = FLAG_SIZE, .dst = &wbuf_bytes, .min = 1 << 20,
		  .max = 1ull << 34, .metavar = "BYTES",
		  .help = "RocksDB memtable of the root's state (at most two in memory; "
			  "other groups an eighth, at least 4 MiB)" },
		{ .name = "raft-segment-size", .type = FLAG_SIZE, .dst = &segment_bytes,
		  .min = 1 << 20, .max = 1ull << 30, .metavar = "BYTES",
		  .help = "the root group's Raft log segment (a full one's close stalls the loop "
			  "tens of ms; raft_uv preallocates three)" },
		{ .name = "range-raft-segment-size", .type = FLAG_SIZE, .dst = &range_segment_bytes,
		  .min = 1 << 20, .max = 1ull << 30, .metavar = "BYTES",
		  .help = "each range group's Raft log segment (as --raft-segment-size: three "
			  "preallocated per range group on every member)" },
		{ .name = "snapshot-trailing", .type = FLAG_UINT64, .dst = &snap_trailing, .min = 0,
		  .max = 1 << 24, .help = "entries kept in the log after a snapshot" },
		{ .name = "election-timeout", .type = FLAG_DURATION, .dst = &election_ms, .min = 50,
		  .max = 60000, .help = "Raft election timeout" },
		{ .name = "debug-op-level", .type = FLAG_UINT64, .dst = &debug_op_level, .min = 1,
		  .max = 1000, .metavar = "N",
		  .help = "tests only: act as a build of op level N (apply entries up to N, "
			  "write every entry at N)" },
		{ .name = "heartbeat-timeout", .type = FLAG_DURATION, .dst = &heartbeat_ms, .min = 10,
		  .max = 10000, .help = "Raft heartbeat interval" },
		{ .name = "osd-down-after", .type = FLAG_DURATION, .dst = &down_after_ms, .min = 100,
		  .max = 86400000, .help = "mark an OSD down after this long without a heartbeat" },
		{ .name = "osd-out-after", .type = FLAG_DURATION, .dst = &out_after_ms, .min = 100,
		  .max = 86400000 * 30LL, .help = "mark it out (PGs move) after this long" },
		{ .name = "slow-op-ms", .type = FLAG_DURATION, .dst = &slow_op_ms, .min = 1,
		  .max = 86400000, .metavar = "MS",
		  .help = "log each call answered slower than this, with its request id" },
		{ .name = "pg-count", .type = FLAG_UINT64, .dst = &pg_count, .min = 1, .max = 1 << 20,
		  .help = "PGs of a new cluster map (power of two)" },
		{ .name = "expect-osds", .type = FLAG_UINT64, .dst = &expect_osds, .min = 0,
		  .max = PLACE_MAX_OSDS, .metavar = "N", .help = "a new cluster map places its "
		  "PGs once N OSDs are in, in rank order, not in the order they join (0: at "
		  "once, each OSD taking slots as it joins; iolake-admin osd expect changes it "
		  "while it waits)" },
		{ .name = "range-groups", .type = FLAG_UINT64, .dst = &range_groups, .min = 0,
		  .max = META_GROUPS_MAX, .help = "Raft groups kept for key ranges of object "
		  "records (0: object records stay in the root group)" },
		{ .name = "range-split-objects", .type = FLAG_UINT64, .dst = &split_objects,
		  .min = 0, .max = UINT64_MAX / 2, .help = "split a key range at its median key "
		  "once it holds this many objects (0: never)" },
		{ .name = "range-split-bytes", .type = FLAG_SIZE, .dst = &split_bytes,
		  .metavar = "BYTES", .help = "split a key range once its objects' sizes sum to "
		  "this (0: never)" },
		{ .name = "range-merge-objects", .type = FLAG_UINT64, .dst = &merge_objects,
		  .min = 0, .max = UINT64_MAX / 2, .help = "merge two adjacent key ranges of a "
		  "bucket holding fewer objects than this together (0: never)" },
		{ .name = "range-split-load", .type = FLAG_UINT64, .dst = &split_load,
		  .min = 0, .max = 100000000, .metavar = "REQ/S", .help = "split a key range at "
		  "the key dividing its load once its leader serves more than this many requests "
		  "per second for it (object writes, heads, listing pages) for "
		  "--range-split-load-secs in a row (0: never)" },
		{ .name = "range-split-load-secs", .type = FLAG_UINT64, .dst = &split_load_secs,
		  .min = 1, .max = 3600, .metavar = "S", .help = "seconds a range's load must stay "
		  "above --range-split-load before it is split (and stay under half of it before "
		  "the range may be merged)" },
		{ .name = "ec", .type = FLAG_STRING, .dst = &ec, .metavar = "K+M",
		  .help = "erasure code of a new cluster map" },
		{ .name = "root-credentials", .type = FLAG_STRING, .dst = &root_creds,
		  .metavar = "FILE", .help = "access_key= and secret_key= lines: user root gets "
			  "that key (IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY win over it)" },
		{ .name = "secret-key-file", .type = FLAG_STRING, .dst = &secret_file,
		  .metavar = "FILE", .help = "the cluster key (mode 0600; iolake-admin cluster "
			  "init-key makes one): access key secrets are stored sealed under it "
			  "(without it: in clear, refused once the data dir holds sealed ones)" },
		RPC_FAULT_FLAG(debug_fault),
		{ 0 }
	};
	int rc = flags_parse_program(argv[0], "", specs, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	int lvl = log_parse_level(log_level);
	unsigned k, m;
	if (lvl < 0) {
		fprintf(stderr, "%s: flag --log-level: unknown level %s\n", argv[0], log_level);
		goto bad_flag;
	}
	if (ec_parse(ec, &k, &m)) {
		fprintf(stderr, "%s: flag --ec: want K+M, e.g. 4+2, not %s\n", argv[0], ec);
		goto bad_flag;
	}
	if (metrics_listen && !metrics_http_addr_valid(metrics_listen)) {
		fprintf(stderr, "%s: flag --metrics-listen: '%s' is not HOST:PORT "
			"(IPv4, [IPv6] or localhost)\n", argv[0], metrics_listen);
		goto bad_flag;
	}
	if (down_after_ms >= out_after_ms) {
		fprintf(stderr, "%s: flag --osd-out-after must be above --osd-down-after\n", argv[0]);
		goto bad_flag;
	}
	struct rootkey_creds creds;
	char cerr[512];
	int have_creds = rootkey_load(root_creds, &creds, cerr, sizeof(cerr));
	if (have_creds < 0) {
		fprintf(stderr, "%s: root credentials: %s\n", argv[0], cerr);
		goto bad_flag;
	}
	static struct meta_secret secret;   /* outlives the node */
	if (secret_file && meta_secret_load(secret_file, &secret, cerr, sizeof(cerr))) {
		fprintf(stderr, "%s: flag --secret-key-file: %s\n", argv[0], cerr);
		goto bad_flag;
	}
	creds.secret = secret_file ? &secret : NULL;
	log_set_level(lvl);
	if (rpc_tls_setup(&tlsf, cerr, sizeof(cerr))) {
		fprintf(stderr, "%s: %s\n", argv[0], cerr);
		goto bad_flag;
	}
	char ctx[64];
	snprintf(ctx, sizeof(ctx), "svc=meta.%lld", (long long)id);
	log_set_thread_context(ctx);
	if (rpc_fault_flag_apply(argv[0], debug_fault))
		goto bad_flag;

	struct meta_peer pv[META_NODE_MAX_PEERS];
	if (peers.n == 0 || peers.n > META_NODE_MAX_PEERS) {
		fprintf(stderr, "%s: flag --peers: 1..%d members\n", argv[0], META_NODE_MAX_PEERS);
		goto bad_flag;
	}
	for (size_t i = 0; i < peers.n; i++)
		if (meta_node_parse_peer(peers.items[i], &pv[i])) {
			fprintf(stderr, "%s: flag --peers: %s is not ID@HOST:PORT\n", argv[0], peers.items[i]);
			goto bad_flag;
		}
	if (mkdir(data_dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "%s: flag --data-dir: %s: %s\n", argv[0], data_dir, strerror(errno));
		goto fail_early;
	}
	if (meta_secret_check_dir(data_dir, secret_file ? &secret : NULL, cerr, sizeof(cerr))) {
		fprintf(stderr, "%s: %s\n", argv[0], cerr);
		goto fail_early;
	}
	if (!secret_file)
		LOG_WARN("no --secret-key-file: access key secrets are stored in clear",
			 "data_dir=%s", LOG_Q(data_dir));
	signal(SIGPIPE, SIG_IGN);
	crash_report_install("iolake-meta");   /* a crash leaves its stack in the log */

	/* Ours, not the member's, so that it outlives the node for the
	 * /metrics listener's last scrape. */
	struct metrics_registry *reg = metrics_registry_new();
	if (!reg || iol_check_register_metrics(reg) || memstats_register_metrics(reg) ||
	    rpc_tls_register_metrics(reg)) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		goto fail_early;
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_node_opts o = {
		.id = (uint64_t)id,
		.data_dir = data_dir,
		.listen = listen,
		.peers = pv,
		.n_peers = peers.n,
		.join = join,
		.snapshot_threshold = (unsigned)snap_threshold,
		.snapshot_trailing = (unsigned)snap_trailing,
		.snapshot_trailing_given = true,   /* 0 keeps none (libraft allows it) */
		.raft_segment_bytes = segment_bytes,
		.range_segment_bytes = range_segment_bytes,
		.snapshot_bytes = snap_bytes,
		.cache_bytes = cache_bytes,
		.write_buffer_bytes = wbuf_bytes,
		.election_timeout_ms = (unsigned)election_ms,
		.debug_op_level = (uint32_t)debug_op_level,
		.heartbeat_timeout_ms = (unsigned)heartbeat_ms,
		.osd_down_after_ms = down_after_ms,
		.osd_out_after_ms = out_after_ms,
		.pg_count = (uint32_t)pg_count,
		.expect_osds = (uint32_t)expect_osds,
		.range_groups = (unsigned)range_groups,
		.range_split_objects = split_objects,
		.range_split_bytes = split_bytes,
		.range_merge_objects = merge_objects,
		.range_split_load = split_load,
		.range_split_load_secs = (unsigned)split_load_secs,
		.ec_k = k,
		.ec_m = m,
		.metrics = reg,
		.secret = secret_file ? &secret : NULL,
		.log_calls = true,
		.slow_op_ms = (uint32_t)slow_op_ms,
	};
	rc = meta_node_start(&loop, &o, &node);
	if (rc) {
		fprintf(stderr, "%s: cannot start member %lld: %s\n", argv[0], (long long)id,
			iol_strerror(rc));
		uv_run(&loop, UV_RUN_DEFAULT);   /* let a half-started member close */
		uv_loop_close(&loop);
		metrics_registry_free(reg);
		flags_free(specs);
		return 1;
	}
	if (metrics_listen) {
		rc = metrics_http_start(&loop, metrics_listen, reg, NULL, &mhttp);
		if (rc) {
			fprintf(stderr, "%s: flag --metrics-listen %s: %s\n", argv[0],
				metrics_listen, iol_strerror(rc));
			meta_node_close(node, NULL, NULL);
			node = NULL;
			uv_run(&loop, UV_RUN_DEFAULT);
			uv_loop_close(&loop);
			metrics_registry_free(reg);
			flags_free(specs);
			return 1;
		}
		LOG_INFO("metrics listening", "addr=%s port=%d", LOG_Q(metrics_listen),
			 metrics_http_port(mhttp));
	}
	if (have_creds) {
		const char *members[META_NODE_MAX_PEERS];
		for (size_t i = 0; i < peers.n; i++)
			members[i] = pv[i].addr;
		rc = rootkey_runner_start(&loop, members, peers.n, &creds, &rootkey);
		if (rc)
			LOG_ERROR("cannot ensure the root credentials", "err=%s",
				  LOG_Q(iol_strerror(rc)));
	}
	uv_signal_init(&loop, &sig_term);
	uv_signal_init(&loop, &sig_int);
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_init(&loop, &sig_hup);
	uv_signal_start(&sig_hup, on_sighup, SIGHUP);
	uv_run(&loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&loop);
	if (rc)
		LOG_WARN("loop closed with handles open", "err=%s", uv_strerror(rc));
	metrics_registry_free(reg);
	flags_free(specs);
	LOG_INFO("stopped", "id=%lld", (long long)id);
	return 0;

bad_flag:
	flags_free(specs);
	return 2;
fail_early:
	flags_free(specs);
	return 1;
}
