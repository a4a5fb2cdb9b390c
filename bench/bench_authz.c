/*
 * bench_authz.c — what the authorization gate's pure part costs per
 * request, without and with a bucket policy (issue 16): the copy of the
 * bucket record the gate keeps (s3u_copy_msg), and the decision
 * (s3_authz_decide; with a policy also the s3_policy_cache lookup, the
 * request context of s3_policy_ctx and s3_policy_eval) for a GetObject of
 * an object the caller may read, as s3_rq_decide_key does it. One core,
 * in memory; the meta read the gate makes is not here (it is the same
 * read with or without a policy; the policy only adds its bytes).
 *
 * Prints p50 / p99 / max per call (each call timed alone, batches of 64
 * to keep the clock's own cost below the figures) and calls/s; asserts
 * nothing.
 *
 *   build/bench-authz [--duration 1s]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/flags.h"
#include "common/loop.h"
#include "gateway/s3_authz.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_policy.h"
#include "gateway/s3_policy_cache.h"
#include "gateway/s3_policy_ctx.h"
#include "gateway/s3_util.h"

#define BATCH 64
#define MAX_SAMPLES (1u << 20)

static uint64_t duration_ms = 1000;

static const char *policy_doc =
	"{\"Version\":\"2012-10-17\",\"Statement\":["
	"{\"Sid\":\"NoTen\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
	"\"Resource\":[\"arn:aws:s3:::bench\",\"arn:aws:s3:::bench/*\"],"
	"\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}},"
	"{\"Sid\":\"Tls\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:DeleteObject\","
	"\"Resource\":\"arn:aws:s3:::bench/*\",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"false\"}}},"
	"{\"Sid\":\"Public\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
	"\"Resource\":\"arn:aws:s3:::bench/public/*\"},"
	"{\"Sid\":\"Reader\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
	"\"Action\":[\"s3:GetObject\",\"s3:PutObject\"],\"Resource\":\"arn:aws:s3:::bench/*\"}]}";

struct fixture {
	Iolake__Meta__Bucket *bucket;    /* the record as meta answers it */
	struct s3_policy_cache *cache;
	struct s3_principal who;
	bool with_policy;
};

static volatile unsigned sink;

/* One gate decision's pure part: copy the record, decide. */
static void one(struct fixture *f)
{
	Iolake__Meta__Bucket *b = (Iolake__Meta__Bucket *)s3u_copy_msg(&f->bucket->base);
	struct s3_acl oa;
	s3_acl_canned(&oa, S3_CANNED_PRIVATE);
	struct s3_authz_rec orec = { .owner = "alice", .acl = &oa };
	struct s3_authz_req q = { .who = &f->who, .action = S3_ACT_GetObject, .bucket_name = "bench",
				  .key = "obj/000123", .bucket = { .owner = b->owner },
				  .ownership = S3_OWN_ENFORCED, .object = &orec };
	struct s3_policy_ctx ctx;
	if (b->policy && b->policy[0]) {
		const struct s3_policy_entry *e = s3_policy_cache_get(f->cache, b->name, b->generation,
								      b->policy, strlen(b->policy));
		q.policy = e->policy;
		q.policy_public = e->is_public;
		struct s3_policy_ctx_in in = { .user = "bob", .peer_addr = "127.0.0.1",
					       .action = S3_ACT_GetObject,
					       .now_ms = s3u_wall_ms() };
		s3_policy_ctx_build(&ctx, &in);
		q.ctx = ctx.kv;
		q.n_ctx = ctx.n;
	}
	sink += (unsigned)s3_authz_decide(&q);
	s3u_free_msg(b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void run(const char *name, struct fixture *f, uint64_t *samples)
{
	size_t n = 0;
	uint64_t calls = 0, t_start = loop_now_ns();
	while (loop_now_ns() - t_start < duration_ms * 1000000ull && n < MAX_SAMPLES) {
		uint64_t t0 = loop_now_ns();
		for (int i = 0; i < BATCH; i++)
			one(f);
		samples[n++] = (loop_now_ns() - t0) / BATCH;
		calls += BATCH;
	}
	double secs = (double)(loop_now_ns() - t_start) / 1e9;
	qsort(samples, n, sizeof(*samples), cmp_u64);
	printf("| %s | %.0f | %llu | %llu | %llu |\n", name, (double)calls / secs,
	       (unsigned long long)samples[n / 2], (unsigned long long)samples[n * 99 / 100],
	       (unsigned long long)samples[n - 1]);
}

int main(int argc, char **argv)
{
	struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms,
		  .help = "time per case (default 1s)" },
		{ 0 },
	};
	char err[256];
	int first;
	int rc = flags_parse(specs, argc, argv, &first, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, "bench-authz", "[flags]", specs);
		return 0;
	}
	if (rc) {
		fprintf(stderr, "bench-authz: %s\n", err);
		return 2;
	}
	uint64_t *samples = malloc(MAX_SAMPLES * sizeof(*samples));
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = "bench";
	b.owner = "alice";
	b.region = "us-east-1";
	b.generation = 42;
	b.object_ownership = IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED;
	struct fixture f = { .bucket = &b, .cache = s3_policy_cache_new(S3_POLICY_CACHE_DEFAULT) };
	s3_principal_init(&f.who, "bob", false);
	if (!samples || !f.cache)
		return 1;
	printf("Per GetObject decision (bob reads alice's object), ns; %zu-byte policy.\n\n",
	       strlen(policy_doc));
	printf("| case | calls/s | p50 ns | p99 ns | max ns |\n|---|---|---|---|---|\n");
	run("no policy (record copy + decide)", &f, samples);
	b.policy = (char *)policy_doc;
	run("4-statement policy (copy + cache + context + eval + decide)", &f, samples);
	struct s3_policy_cache_stats st;
	s3_policy_cache_stats(f.cache, &st);
	printf("\npolicy cache: %llu hits, %llu misses (parsed once)\n",
	       (unsigned long long)st.hits, (unsigned long long)st.misses);
	s3_policy_cache_free(f.cache);
	free(samples);
	return (int)(sink & 0);
}
