/*
 * s3b_run.h — one benchmark run: its phases in order (create bucket,
 * warm-up, PUT, GET, LIST, DELETE), each driven through the engine and
 * summed into a s3b_phase_result, plus the live progress line.
 *
 * Owns the loop, the engine, the signer, the bodies, the record of which
 * objects were written and the --latency-log file. Single-threaded.
 */
#ifndef BENCH_S3B_RUN_H
#define BENCH_S3B_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "bench/s3bench/s3b_body.h"
#include "bench/s3bench/s3b_config.h"
#include "bench/s3bench/s3b_engine.h"
#include "bench/s3bench/s3b_hist.h"
#include "bench/s3bench/s3b_native.h"
#include "bench/s3bench/s3b_req.h"

#define S3B_MAX_PHASES 8
#define S3B_FIRST_ERROR_MAX 512

struct s3b_phase_result {
	char name[16];          /* "bucket", "warmup", "put", "get", "list", "delete" */
	bool measured;          /* false for bucket and warmup */
	uint64_t ops;           /* requests completed, failed ones included */
	uint64_t errors;        /* of those, failed */
	uint64_t errors_by_kind[S3B_ERR__COUNT];
	uint64_t bytes;         /* object bytes moved by successful requests */
	uint64_t items;         /* list: keys listed */
	uint64_t elapsed_ns;    /* first request sent to last response */
	uint64_t started_ms;    /* wall clock, ms since the epoch */
	uint64_t finished_ms;
	struct s3b_hist hist;   /* latency (ns) of successful requests */
	char first_error[S3B_FIRST_ERROR_MAX]; /* "" when none */
};

struct s3b_run {
	const struct s3b_config *cfg;
	uv_loop_t loop;
	struct s3b_endpoint endpoint;
	struct s3b_target target;
	struct s3b_signer signer;
	struct s3b_body body;
	struct s3b_engine *engine;
	struct s3b_native *native;   /* --protocol native: used instead of engine */
	struct s3b_engine_stats engine_stats; /* copied at the end */
	uint64_t seed;
	uint64_t started_ms, finished_ms;
	uint8_t *written;       /* per object index: 1 once a PUT succeeded */
	uint64_t written_cap;   /* entries in written */
	uint64_t put_range;     /* objects 0 .. put_range-1 were attempted */
	uint32_t *schedule;     /* object indices for GET / DELETE */
	bool progress;          /* stdout is a TTY: draw the progress line */
	FILE *latency_log;      /* --latency-log, or NULL */
	uint64_t log_t0_ns;     /* uv_hrtime() of the log's offset 0 */
	unsigned n_results;
	struct s3b_phase_result *results; /* S3B_MAX_PHASES, heap (large) */
};

/* Parse the endpoint, build bodies, open the loop and engine. Returns 0,
 * or a negative errno with err set (bad endpoint, bucket, memory). */
int s3b_run_init(struct s3b_run *r, const struct s3b_config *cfg, char *err, size_t errlen);

/* Run every phase the config asks for. Returns 0 when they all ran (some
 * requests may have failed: see the results), or -EIO when the bucket
 * could not be created (err says why; later phases did not run). */
int s3b_run_all(struct s3b_run *r, char *err, size_t errlen);

/* Failed requests over every phase. */
uint64_t s3b_run_errors(const struct s3b_run *r);

void s3b_run_free(struct s3b_run *r);

#endif
