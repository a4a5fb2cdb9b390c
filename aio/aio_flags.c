/*
 * aio_flags.c — iolake-aio's flag table and the checks of its values
 * (aio_flags.h). The table's defaults are what --help prints.
 */
#include "aio/aio_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ec.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/rpc_fault.h"
#include "common/workpool.h"
#include "gateway/gw_loops.h"
#include "gateway/lc_worker.h"
#include "meta/node.h"
#include "osd/store/cache.h"
#include "osd/sweep.h"

#define PROG AIO_PROG

/* The flags' values: one per process, as the flag table's destinations
 * must be (flags_parse writes through .dst). */
static struct aio_opts O = {
	.listen = "127.0.0.1:9000",
	.osds = 6,
	.ec = "4+2",
	.osd_size = 64ull << 30,
	.inline_max = 4096,
	.rpc = "local",
	.region = "us-east-1",
	.log_level = "info",
	.pg_count = 256,
	.range_groups = META_RANGE_GROUPS_DEFAULT_AIO,
	.split_objects = META_RANGE_SPLIT_OBJECTS_DEFAULT,
	.split_load = META_RANGE_SPLIT_LOAD_DEFAULT,
	.split_load_secs = META_RANGE_SPLIT_LOAD_SECS_DEFAULT,
	.gc_interval = 10000,
	.lc_interval = 3600000,
	.scrub_rate = 32ull << 20,
	.scrub_interval = 24ull * 3600 * 1000,
	.orphan_grace = OSD_SWEEP_GRACE_DEFAULT_MS,
	.orphan_interval = OSD_SWEEP_INTERVAL_DEFAULT_MS,
	.slow_op_ms = 1000,
	.recovery_rate = 64ull << 20,
	.recovery_max_pgs = 2,
	.pg_report_interval = 2000,
	.recovery_rescan = 3600ull * 1000,
	.deep_scrub = 7ull * 24 * 3600 * 1000,
	.meta_cache = 256ull << 20,
	.osd_cache = STORE_CACHE_DEFAULT_BYTES,
	.meta_wbuf = 64ull << 20,
	.osd_wbuf = 16ull << 20,   /* six OSDs: at most 192 MiB of memtables */
	.sigv2 = true,
	.snap_bytes = 64ull << 20,
	.snap_threshold = 1024,
	.hash_threads = -1,
	.segment_size = 1u << 20,
	.buffer_pool = GW_BUFFER_POOL_DEFAULT,
	.front = GW_FRONT_DEFAULTS,
};

static const struct flag_spec specs[] = {
	{ .name = "data-dir", .type = FLAG_STRING, .dst = &O.data_dir, .required = true,
	  .metavar = "DIR", .help = "where everything is kept (created if missing)" },
	{ .name = "s3-listen", .type = FLAG_STRING, .dst = &O.listen, .metavar = "HOST:PORT",
	  .help = "S3 endpoint address" },
	{ .name = "osds", .type = FLAG_INT64, .dst = &O.osds, .min = 1, .max = AIO_MAX_OSDS,
	  .help = "OSDs to run (each a sparse file DIR/osd-N/dev)" },
	{ .name = "ec", .type = FLAG_STRING, .dst = &O.ec, .metavar = "K+M",
	  .help = "erasure code (fixed when the cluster is created)" },
	{ .name = "meta-cache", .type = FLAG_SIZE, .dst = &O.meta_cache, .min = 8 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "meta's RocksDB caches: blocks (data, index, filter) and, an eighth, rows" },
	{ .name = "osd-cache", .type = FLAG_SIZE, .dst = &O.osd_cache, .min = 1 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "one RocksDB block cache shared by every OSD's index (inline shards, index "
		  "blocks)" },
	{ .name = "osd-write-buffer", .type = FLAG_SIZE, .dst = &O.osd_wbuf, .min = 1 << 20,
	  .max = 1ull << 34, .metavar = "BYTES",
	  .help = "each OSD index's RocksDB memtable (at most two per OSD; inline shards wait "
		  "there for a flush)" },
	{ .name = "malloc-arenas", .type = FLAG_INT64, .dst = &O.malloc_arenas, .min = 0,
	  .max = 1024, .metavar = "N",
	  .help = "glibc malloc arenas at most (0: two per core; glibc's own cap is 8 per core, "
		  "each keeping what its threads freed)" },
	{ .name = "meta-write-buffer", .type = FLAG_SIZE, .dst = &O.meta_wbuf, .min = 1 << 20,
	  .max = 1ull << 34, .metavar = "BYTES",
	  .help = "meta's RocksDB memtable (at most two in memory)" },
	{ .name = "snapshot-bytes", .type = FLAG_SIZE, .dst = &O.snap_bytes, .min = 1 << 20,
	  .max = 1ull << 40, .metavar = "BYTES",
	  .help = "meta snapshots after this many command bytes (or --snapshot-threshold "
		  "entries)" },
	{ .name = "snapshot-threshold", .type = FLAG_UINT64, .dst = &O.snap_threshold, .min = 16,
	  .max = 1 << 24, .metavar = "N", .help = "meta snapshots after this many entries (or "
	  "--snapshot-bytes)" },
	{ .name = "osd-size", .type = FLAG_SIZE, .dst = &O.osd_size, .min = 64 << 20,
	  .max = 1ll << 50, .help = "size of each OSD's file, created sparse on first start" },
	{ .name = "inline-max-size", .type = FLAG_SIZE, .dst = &O.inline_max, .min = 0,
	  .max = 65536, .help = "objects up to this size live in their meta record" },
	{ .name = "debug-min-part-size", .type = FLAG_SIZE, .dst = &O.debug_min_part, .min = 0,
	  .max = 5ull << 20, .metavar = "BYTES",
	  .help = "tests only: multipart minimum part size (0: S3's 5 MiB)" },
	{ .name = "rpc", .type = FLAG_STRING, .dst = &O.rpc, .metavar = "local|loopback",
	  .help = "in-process RPC, or HTTP/2 over 127.0.0.1 (for comparison)" },
	{ .name = "region", .type = FLAG_STRING, .dst = &O.region, .help = "S3 region" },
	{ .name = "sigv2", .type = FLAG_BOOL, .dst = &O.sigv2,
	  .help = "accept AWS Signature Version 2 (Debian 12's boto3 presigns with it)" },
	{ .name = "sse-master-key-file", .type = FLAG_STRING, .dst = &O.sse_key_file,
	  .metavar = "FILE", .help = "the SSE-S3 master key (default: DIR/sse.key, made on "
	  "first start, mode 0600)" },
	{ .name = "sse-c-allow-http", .type = FLAG_BOOL, .dst = &O.sse_c_http,
	  .help = "accept SSE-C keys over plain HTTP from other hosts (loopback always is)" },
	{ .name = "pg-count", .type = FLAG_UINT64, .dst = &O.pg_count, .min = 1, .max = 65536,
	  .help = "placement groups of a new cluster (power of two)" },
	{ .name = "range-groups", .type = FLAG_UINT64, .dst = &O.range_groups, .min = 0,
	  .max = META_GROUPS_MAX, .help = "Raft groups kept for key ranges of object records "
	  "(0: object records stay in the root group)" },
	{ .name = "range-split-objects", .type = FLAG_UINT64, .dst = &O.split_objects, .min = 0,
	  .max = UINT64_MAX / 2, .help = "split a key range at its median key once it holds "
	  "this many objects (0: never)" },
	{ .name = "range-split-bytes", .type = FLAG_SIZE, .dst = &O.split_bytes, .metavar = "BYTES",
	  .help = "split a key range once its objects' sizes sum to this (0: never)" },
	{ .name = "range-merge-objects", .type = FLAG_UINT64, .dst = &O.merge_objects, .min = 0,
	  .max = UINT64_MAX / 2, .help = "merge two adjacent key ranges of a bucket holding "
	  "fewer objects than this together (0: never)" },
	{ .name = "range-split-load", .type = FLAG_UINT64, .dst = &O.split_load, .min = 0,
	  .max = 100000000, .metavar = "REQ/S", .help = "split a key range at the key dividing "
	  "its load once its leader serves more than this many requests per second for it "
	  "(object writes, heads, listing pages) for --range-split-load-secs in a row (0: never)" },
	{ .name = "range-split-load-secs", .type = FLAG_UINT64, .dst = &O.split_load_secs,
	  .min = 1, .max = 3600, .metavar = "S", .help = "seconds a range's load must stay above "
	  "--range-split-load before it is split (and stay under half of it before the range "
	  "may be merged)" },
	{ .name = "gc-interval", .type = FLAG_DURATION, .dst = &O.gc_interval,
	  .max = 86400000, .help = "between rounds of the shard GC worker (0: no worker)" },
	{ .name = "scrub-rate", .type = FLAG_SIZE, .dst = &O.scrub_rate, .metavar = "BYTES",
	  .help = "each OSD's background scrub: bytes re-read and verified per second (0: off)" },
	{ .name = "scrub-interval", .type = FLAG_DURATION, .dst = &O.scrub_interval, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000, .help = "from the end of one scrub pass to the next" },
	{ .name = "recovery-rate", .type = FLAG_SIZE, .dst = &O.recovery_rate, .metavar = "BYTES",
	  .help = "each OSD's recovery driver: shard bytes rebuilt per second (0: unthrottled)" },
	{ .name = "recovery-max-pgs", .type = FLAG_INT64, .dst = &O.recovery_max_pgs, .min = 1,
	  .max = 64, .help = "PGs each OSD scans and rebuilds at once" },
	{ .name = "pg-report-interval", .type = FLAG_DURATION, .dst = &O.pg_report_interval,
	  .min = 100, .max = 3600ll * 1000, .help = "how often each OSD reports its PGs to meta" },
	{ .name = "recovery-rescan-interval", .type = FLAG_DURATION, .dst = &O.recovery_rescan,
	  .min = 1000, .max = 365ll * 24 * 3600 * 1000,
	  .help = "backstop: each OSD rescans every PG it is the primary of this often" },
	{ .name = "deep-scrub-interval", .type = FLAG_DURATION, .dst = &O.deep_scrub,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "each OSD deep-scrubs every PG it is the primary of this often: reads all "
		  "k+m shards of each whole stripe, re-encodes, rewrites the one shard that "
		  "disagrees (0: off)" },
	{ .name = "log-level", .type = FLAG_STRING, .dst = &O.log_level,
	  .help = "debug, info, warn or error" },
	{ .name = "admin-listen", .type = FLAG_STRING, .dst = &O.admin_listen,
	  .metavar = "HOST:PORT", .help = "meta's RPC for iolake-admin (default: the S3 host, "
	  "S3 port + 1; port 0: any free port)" },
	{ .name = "native-listen", .type = FLAG_STRING, .dst = &O.native_listen,
	  .metavar = "HOST:PORT", .help = "the native protocol (libiolake, the iolake CLI; default: "
	  "the S3 host, S3 port + 3; off: none)" },
	{ .name = "admin-api-listen", .type = FLAG_STRING, .dst = &O.admin_api_listen,
	  .metavar = "HOST:PORT", .help = "the admin HTTP API and the console (default: the S3 "
	  "host, S3 port + 2; port 0: any free port)" },
	{ .name = "orphan-grace", .type = FLAG_DURATION, .dst = &O.orphan_grace, .min = 1000,
	  .max = 365ll * 24 * 3600 * 1000,
	  .help = "each OSD deletes a shard no live object names once unreferenced this long "
		  "(must exceed the longest PUT)" },
	GW_FRONT_FLAGS(O.front),
	RPC_TLS_FLAGS(O.rpc_tls),
	LC_FLAGS(O.lc_interval, O.lc_day_s),
	{ .name = "slow-op-ms", .type = FLAG_DURATION, .dst = &O.slow_op_ms, .min = 0,
	  .max = 86400000, .metavar = "MS",
	  .help = "meta and the OSDs log each call slower than this with its request id "
		  "(0: every call)" },
	{ .name = "orphan-scan-interval", .type = FLAG_DURATION, .dst = &O.orphan_interval,
	  .min = 0, .max = 365ll * 24 * 3600 * 1000,
	  .help = "from the end of one orphan sweep pass to the next (0: no sweep)" },
	RPC_FAULT_FLAG(O.debug_fault),
	GW_LOOPS_FLAG(O.gw_loops),
	WORKPOOL_HASH_FLAG(O.hash_threads),
	GW_SEGMENT_FLAG(O.segment_size),
	GW_BUFFER_POOL_FLAG(O.buffer_pool),
	{ 0 }
};

/* --NAME HOST:PORT into a, or when not given the S3 host and port + off
 * (0 when the S3 port is 0 or the sum leaves the range). 0, or 2 after
 * saying why. */
static int derive_addr(const char *name, const char *given, int off, struct aio_addr *a)
{
	a->is_default = !given;
	if (!given) {
		snprintf(a->host, sizeof(a->host), "%s", O.s3.host);
		a->port = O.s3.port && O.s3.port + off <= 65535 ? O.s3.port + off : 0;
		return 0;
	}
	const char *colon = strrchr(given, ':');
	char *end;
	long p = colon ? strtol(colon + 1, &end, 10) : -1;
	if (!colon || colon == given || (size_t)(colon - given) >= sizeof(a->host) || !colon[1] ||
	    *end || p < 0 || p > 65535) {
		fprintf(stderr, "%s: flag --%s: '%s' is not host:port\n", PROG, name, given);
		return 2;
	}
	memcpy(a->host, given, (size_t)(colon - given));
	a->host[colon - given] = 0;
	a->port = (int)p;
	return 0;
}

/* --log-level, --ec against --osds, --rpc, --pg-count. 0, or 2 after
 * saying why. */
static int check_values(void)
{
	O.log_lvl = log_parse_level(O.log_level);
	if (O.log_lvl < 0) {
		fprintf(stderr, "%s: flag --log-level: '%s' is not debug, info, warn or error\n", PROG,
			O.log_level);
		return 2;
	}
	if (ec_parse(O.ec, &O.k, &O.m)) {
		fprintf(stderr, "%s: flag --ec: want K+M such as 4+2, not '%s'\n", PROG, O.ec);
		return 2;
	}
	if (O.k + O.m > (unsigned)O.osds) {
		fprintf(stderr, "%s: flag --ec %s needs at least %u OSDs (--osds %lld)\n", PROG, O.ec,
			O.k + O.m, (long long)O.osds);
		return 2;
	}
	if (strcmp(O.rpc, "local") && strcmp(O.rpc, "loopback")) {
		fprintf(stderr, "%s: flag --rpc: '%s' is not local or loopback\n", PROG, O.rpc);
		return 2;
	}
	O.loopback = strcmp(O.rpc, "loopback") == 0;
	if (O.pg_count & (O.pg_count - 1)) {
		fprintf(stderr, "%s: flag --pg-count: %llu is not a power of two\n", PROG,
			(unsigned long long)O.pg_count);
		return 2;
	}
	return 0;
}

/* --s3-listen, then the addresses that default to its port + N. 0, or 2
 * after saying why. */
static int derive_addrs(void)
{
	const char *colon = strrchr(O.listen, ':');
	if (!colon || colon == O.listen || (size_t)(colon - O.listen) >= sizeof(O.s3.host) ||
	    !colon[1]) {
		fprintf(stderr, "%s: flag --s3-listen: '%s' is not host:port\n", PROG, O.listen);
		return 2;
	}
	memcpy(O.s3.host, O.listen, (size_t)(colon - O.listen));
	O.s3.port = atoi(colon + 1);
	if (derive_addr("admin-listen", O.admin_listen, 1, &O.madm) ||
	    derive_addr("admin-api-listen", O.admin_api_listen, 2, &O.api))
		return 2;
	O.native_off = O.native_listen && strcmp(O.native_listen, "off") == 0;
	if (!O.native_off && derive_addr("native-listen", O.native_listen, 3, &O.native))
		return 2;
	return 0;
}

int aio_flags_parse(int argc, char **argv, struct aio_opts **out)
{
	int rc = flags_parse_program(PROG, "", specs, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	if (check_values() || derive_addrs()) {
		flags_free(specs);
		return 2;
	}
	*out = &O;
	return -1;
}

void aio_flags_free(void)
{
	flags_free(specs);
}
