/*
 * s3b_config.h — what one iolake-s3-bench run does: the flag table,
 * defaults, and the checks between flags (through common/flags, so sizes
 * read "64KiB", durations "30s", and every error names its flag).
 *
 * Pure: parses argv into a struct; strings point into argv.
 */
#ifndef BENCH_S3B_CONFIG_H
#define BENCH_S3B_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define S3B_MAX_CONCURRENCY 4096
#define S3B_MAX_SIZE (1ULL << 30)          /* one object; the body buffer is this big */
#define S3B_DEFAULT_OBJECTS 1000

struct s3b_config {
	const char *endpoint;     /* http://host:port[/path] */
	const char *access_key;
	const char *secret_key;
	const char *region;       /* of the credential scope */
	const char *bucket;
	const char *prefix;       /* of every key the bench writes */
	bool create_bucket;       /* PUT the bucket first (409 owned-by-you accepted) */
	bool virtual_host;        /* bucket.host addressing instead of path-style */
	uint64_t size_bytes;      /* of each object */
	uint64_t objects;         /* PUT phase op count (0: use duration_ms) */
	uint64_t duration_ms;     /* PUT phase length (0: use objects) */
	uint64_t max_objects;     /* bound of a duration-mode PUT phase */
	int64_t concurrency;      /* requests in flight, all phases but LIST */
	uint64_t gets;            /* reads of each object (0: no GET phase) */
	const char *get_order;    /* "random" or "sequential" */
	bool get_random;          /* derived from get_order */
	uint64_t warmup_ms;       /* unmeasured warm-up length ... */
	uint64_t warmup_ops;      /* ... or op count, when > 0 */
	bool do_list;             /* LIST phase (ListObjectsV2 over the prefix) */
	bool do_delete;           /* DELETE phase (every object written) */
	bool skip_put;            /* the --objects exist (an earlier run, same prefix): no PUT */
	bool verify;              /* compare GET bodies with what was PUT */
	bool sign_payload;        /* x-amz-content-sha256 = body hash, not UNSIGNED-PAYLOAD */
	uint64_t timeout_ms;      /* per request */
	const char *json_path;    /* --json FILE, or NULL */
	const char *latency_log;  /* --latency-log FILE, or NULL */
	bool allow_errors;        /* exit 0 even when requests failed */
	const char *protocol;     /* "s3" or "native" (issue 19) */
	bool native;              /* derived from protocol */
	bool skip_md5;            /* native PUTs store no MD5 */
	int64_t native_conns;     /* native: HTTP/2 connections */
	bool native_sign_each;    /* native: every call signed, no login */
	uint64_t seed;            /* bodies and GET order */
	bool seed_given;
};

/* Fill c with defaults and parse argv. Returns 0; FLAGS_HELP (usage was
 * asked for: print it with s3b_config_usage); or -EINVAL with one line in
 * err naming the flag. */
int s3b_config_parse(struct s3b_config *c, int argc, char **argv, char *err, size_t errlen);

/* Usage text with defaults. */
void s3b_config_usage(FILE *out, const char *prog);

#endif
