/*
 * aio_flags.h — iolake-aio's flags: the table (--help prints it), their
 * values, and what main() needs out of them checked and derived (K+M,
 * the log level, the S3 address split, the default addresses of meta's
 * admin RPC, the admin API and the native protocol). Split out of
 * aio/main.c (issue 14).
 *
 * Owns parsing and checking argv. Not what the values start (aio/main.c
 * and the services it starts).
 *
 * Thread: aio's main thread, before any service starts.
 */
#ifndef AIO_AIO_FLAGS_H
#define AIO_AIO_FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rpc_tls.h"
#include "gateway/gw_front.h"

#define AIO_PROG "iolake-aio"
#define AIO_MAX_OSDS 32

/* An address of aio: HOST:PORT as given, or the S3 host and port + N. */
struct aio_addr {
	char host[64];
	int port;          /* 0: any free port; set to the bound one once up */
	bool is_default;   /* not given: a taken port falls back to a free one */
};

/* The flags' values (names as the flags', e.g. --osd-size is osd_size),
 * then what aio_flags_parse derived from them. */
struct aio_opts {
	const char *data_dir, *listen, *ec, *rpc, *region, *log_level;
	int64_t osds;
	uint64_t osd_size, inline_max;
	uint64_t debug_min_part;            /* tests: lower multipart minimum */
	uint64_t pg_count, range_groups, split_objects, split_bytes, merge_objects;
	uint64_t split_load, split_load_secs;
	uint64_t gc_interval, lc_interval, lc_day_s;   /* lifecycle worker, test clock */
	uint64_t scrub_rate, scrub_interval, orphan_grace, orphan_interval, slow_op_ms;
	uint64_t recovery_rate, pg_report_interval, recovery_rescan, deep_scrub;
	int64_t recovery_max_pgs;
	uint64_t meta_cache, meta_wbuf, snap_bytes, snap_threshold;
	uint64_t osd_cache;
	uint64_t osd_wbuf;           /* --osd-write-buffer: each OSD index memtable */
	bool sigv2;
	const char *sse_key_file;           /* NULL: DIR/sse.key, made on first start */
	bool sse_c_http;
	const char *admin_listen;           /* NULL: S3 host, port + 1 */
	const char *admin_api_listen;       /* NULL: S3 host, port + 2 */
	const char *native_listen;          /* NULL: S3 host, port + 3; "off": none (issue 19) */
	const char *debug_fault;            /* tests only: common/rpc_fault.h */
	int64_t malloc_arenas;              /* 0: two per core (common/memstats.h) */
	int64_t gw_loops;                   /* 0: one per core (gateway/gw_loops.h) */
	int64_t hash_threads;               /* common/workpool.h; -1: one per core */
	uint64_t segment_size;              /* GW_SEGMENT_FLAG */
	uint64_t buffer_pool;               /* GW_BUFFER_POOL_FLAG */
	struct gw_front front;              /* --tls-*, limits before auth */
	struct rpc_tls_files rpc_tls;       /* --rpc-tls-*: the TCP RPC port */
	/* derived */
	unsigned k, m;                      /* --ec */
	int log_lvl;                        /* enum log_level of --log-level */
	bool loopback;                      /* --rpc loopback */
	struct aio_addr s3, madm, api, native;   /* madm: meta's admin RPC */
	bool native_off;
};

/* Parse and check argv. -1 and *out (the one aio_opts of the process;
 * main() may update its addresses' ports once bound), or the exit status
 * to return at once: 0 after --help, 2 after a bad flag (said on
 * stderr). */
int aio_flags_parse(int argc, char **argv, struct aio_opts **out);

/* Release what parsing allocated (at exit). */
void aio_flags_free(void);

#endif
