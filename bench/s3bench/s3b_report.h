/*
 * s3b_report.h — the figures of a finished run: a markdown table for
 * people (stdout) and a JSON document with every figure for scripts.
 *
 * JSON schema (version 1; times in ms since the epoch, latencies in us):
 *   { "tool": "iolake-s3-bench", "schema": 1,
 *     "host": { "name", "cpus", "kernel" },
 *     "config": { "endpoint", "bucket", "prefix", "region", "size_bytes",
 *                 "objects", "duration_ms", "concurrency", "gets",
 *                 "get_order", "warmup_ms", "warmup_ops", "verify",
 *                 "sign_payload", "list", "delete", "virtual_host",
 *                 "timeout_ms", "seed" },
 *     "started_ms", "finished_ms",
 *     "phases": [ { "name", "measured", "ops", "errors",
 *                   "errors_by_kind": { "connect", "timeout", "io",
 *                     "protocol", "http_1xx", "http_3xx", "http_4xx",
 *                     "http_5xx", "body" },
 *                   "first_error" (string or null), "bytes", "items",
 *                   "elapsed_s", "ops_per_s", "mib_per_s",
 *                   "latency_us": { "count", "min", "mean", "p50", "p90",
 *                                   "p99", "p999", "max" },
 *                   "started_ms", "finished_ms" } ... ],
 *     "connections": { "opened", "stale_retries", "closed_by_peer" },
 *     "errors_total" }
 * ops counts every completed request; ops_per_s and mib_per_s count the
 * successful ones over elapsed_s; latencies are of successful requests.
 */
#ifndef BENCH_S3B_REPORT_H
#define BENCH_S3B_REPORT_H

#include <stdio.h>

#include "bench/s3bench/s3b_run.h"

/* The markdown table, then one line per phase with errors (kinds and the
 * first error). */
void s3b_report_table(FILE *out, const struct s3b_run *r);

/* Write the JSON document to path (via path.tmp + rename). 0 or -errno. */
int s3b_report_json(const char *path, const struct s3b_run *r);

#endif
