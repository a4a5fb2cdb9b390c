/*
 * s3b_native.h — the bench's engine for IOLake's native protocol (issue
 * 19, docs/native-protocol.md), beside the S3 one (s3b_engine.h) and
 * driven by the same phases: one HTTP/2 connection (common/rpc's client on
 * the bench's loop; --native-conns N spreads the calls over N) carrying
 * up to max_inflight calls at once. Each connection is logged in once
 * when the engine starts (common/native_login), and its calls go
 * unsigned; with sign_each_call (--native-sign-each-call) every call is
 * signed with common/native_sig (the signer's daily key, its amz_date)
 * instead. Bodies are sent from the pre-generated buffer without a copy.
 *
 * Ops: MKBUCKET is a List of one key (the protocol makes no buckets: it
 * fails when the bucket is missing), PUT a Put (Begin/Append/Commit is not
 * used: the bench's sizes fit one call up to 16 MiB), GET a Get of the
 * whole object (compared with --verify), DELETE a Delete. No LIST.
 *
 * Single-threaded: everything runs on the loop passed to s3b_native_new.
 */
#ifndef BENCH_S3B_NATIVE_H
#define BENCH_S3B_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "bench/s3bench/s3b_body.h"
#include "bench/s3bench/s3b_engine.h"
#include "bench/s3bench/s3b_req.h"

struct s3b_native_config {
	const char *endpoint;          /* "host:port" */
	const char *bucket;
	const char *prefix;            /* keys are <prefix>%08llu, as the S3 engine's */
	struct s3b_signer *signer;     /* ticked once per second */
	const struct s3b_body *body;
	uint64_t timeout_ns;
	bool verify;
	bool sign_payload;             /* body SHA-256s (body must hold them) */
	bool skip_md5;
	unsigned channels;             /* HTTP/2 connections, ops spread over them; 0: 1 */
	bool sign_each_call;           /* no login: every call signed */
};

#define S3B_NATIVE_MAX_CHANNELS 64

struct s3b_native;

/* 0 and *out; -EINVAL (endpoint), -ENOMEM, -EACCES (a connection's
 * login failed), err says which. */
int s3b_native_new(uv_loop_t *loop, const struct s3b_native_config *cfg, struct s3b_native **out,
		   char *err, size_t errlen);
/* As s3b_engine_run. */
int s3b_native_run(struct s3b_native *e, const struct s3b_phase *p);
/* connects: the channels opened; the rest 0. */
void s3b_native_get_stats(const struct s3b_native *e, struct s3b_engine_stats *st);
void s3b_native_free(struct s3b_native *e);

#endif
