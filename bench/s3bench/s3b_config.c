/*
 * s3b_config.c — the flag table of iolake-s3-bench (see s3b_config.h).
 */
#include "bench/s3bench/s3b_config.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "common/flags.h"

#define N_SPECS 32 /* the table below, terminator included */

static void defaults(struct s3b_config *c)
{
	memset(c, 0, sizeof(*c));
	c->region = "us-east-1";
	c->bucket = "iolake-bench";
	c->prefix = "s3bench/";
	c->create_bucket = true;
	c->size_bytes = 64 << 10;
	c->max_objects = 1000000;
	c->concurrency = 16;
	c->gets = 1;
	c->get_order = "random";
	c->warmup_ms = 2000;
	c->timeout_ms = 30000;
	c->protocol = "s3";
	c->native_conns = 1;
}

/* The table points into c, so it is built per call. */
static void make_specs(struct s3b_config *c, struct flag_spec *s)
{
	const struct flag_spec specs[] = {
		{ .name = "endpoint", .type = FLAG_STRING, .dst = &c->endpoint, .required = true,
		  .metavar = "URL", .help = "S3 endpoint, http://host:port[/path] (with --protocol "
		  "native: the native listener, host:port)" },
		{ .name = "protocol", .type = FLAG_STRING, .dst = &c->protocol,
		  .metavar = "s3|native", .help = "S3 over HTTP/1.1, or IOLake's native protocol "
		  "(HTTP/2 RPC, docs/native-protocol.md; the bucket must exist)" },
		{ .name = "skip-md5", .type = FLAG_BOOL, .dst = &c->skip_md5,
		  .help = "native PUTs: store no MD5 (an opaque \"<hex>-0\" ETag)" },
		{ .name = "native-conns", .type = FLAG_INT64, .dst = &c->native_conns, .min = 1,
		  .max = 64, .metavar = "N", .help = "native: HTTP/2 connections the calls are "
		  "spread over (S3's engine: one per request in flight)" },
		{ .name = "native-sign-each-call", .type = FLAG_BOOL, .dst = &c->native_sign_each,
		  .help = "native: sign every call (SigV4, as S3) instead of logging each "
		  "connection in once" },
		{ .name = "access-key", .type = FLAG_STRING, .dst = &c->access_key, .required = true,
		  .metavar = "KEY", .help = "access key id" },
		{ .name = "secret-key", .type = FLAG_STRING, .dst = &c->secret_key, .required = true,
		  .metavar = "KEY", .help = "secret access key" },
		{ .name = "region", .type = FLAG_STRING, .dst = &c->region,
		  .help = "region of the SigV4 credential scope" },
		{ .name = "bucket", .type = FLAG_STRING, .dst = &c->bucket, .metavar = "NAME",
		  .help = "bucket to write to" },
		{ .name = "create-bucket", .type = FLAG_BOOL, .dst = &c->create_bucket,
		  .help = "create the bucket first (--no-create-bucket to skip)" },
		{ .name = "prefix", .type = FLAG_STRING, .dst = &c->prefix,
		  .help = "key prefix; keys are <prefix><8+ digits>" },
		{ .name = "virtual-host", .type = FLAG_BOOL, .dst = &c->virtual_host,
		  .help = "address the bucket as bucket.host instead of /bucket" },
		{ .name = "size", .type = FLAG_SIZE, .dst = &c->size_bytes, .min = 0,
		  .max = (int64_t)S3B_MAX_SIZE, .help = "object size (4KiB, 64KiB, 4MiB)" },
		{ .name = "objects", .type = FLAG_UINT64, .dst = &c->objects, .min = 0,
		  .max = 1000000000, .metavar = "N",
		  .help = "objects to PUT (default 1000 unless --duration)" },
		{ .name = "duration", .type = FLAG_DURATION, .dst = &c->duration_ms,
		  .help = "PUT for this long instead of --objects (30s)" },
		{ .name = "max-objects", .type = FLAG_UINT64, .dst = &c->max_objects, .min = 1,
		  .max = 100000000, .metavar = "N", .help = "bound on objects of a --duration PUT phase" },
		{ .name = "concurrency", .type = FLAG_INT64, .dst = &c->concurrency, .min = 1,
		  .max = S3B_MAX_CONCURRENCY, .metavar = "C",
		  .help = "requests in flight (one keep-alive connection each)" },
		{ .name = "gets", .type = FLAG_UINT64, .dst = &c->gets, .min = 0, .max = 1000,
		  .metavar = "G", .help = "GET each object G times (0: no GET phase)" },
		{ .name = "get-order", .type = FLAG_STRING, .dst = &c->get_order,
		  .metavar = "random|sequential", .help = "order of the GET phase" },
		{ .name = "warmup", .type = FLAG_DURATION, .dst = &c->warmup_ms,
		  .help = "unmeasured warm-up PUTs for this long (0 for none)" },
		{ .name = "warmup-ops", .type = FLAG_UINT64, .dst = &c->warmup_ops, .min = 0,
		  .max = 100000000, .metavar = "N", .help = "warm up with N PUTs instead of --warmup" },
		{ .name = "list", .type = FLAG_BOOL, .dst = &c->do_list,
		  .help = "LIST phase: ListObjectsV2 pages over the prefix" },
		{ .name = "skip-put", .type = FLAG_BOOL, .dst = &c->skip_put,
		  .help = "no warm-up or PUT: the --objects were written by an earlier run "
			  "with the same --prefix (a GET-only load)" },
		{ .name = "delete", .type = FLAG_BOOL, .dst = &c->do_delete,
		  .help = "DELETE phase: delete every object written" },
		{ .name = "verify", .type = FLAG_BOOL, .dst = &c->verify,
		  .help = "compare every GET body with the bytes PUT" },
		{ .name = "sign-payload", .type = FLAG_BOOL, .dst = &c->sign_payload,
		  .help = "sign the body's SHA-256 instead of UNSIGNED-PAYLOAD" },
		{ .name = "timeout", .type = FLAG_DURATION, .dst = &c->timeout_ms,
		  .help = "per-request timeout" },
		{ .name = "json", .type = FLAG_STRING, .dst = &c->json_path, .metavar = "FILE",
		  .help = "write every figure as JSON to FILE" },
		{ .name = "latency-log", .type = FLAG_STRING, .dst = &c->latency_log,
		  .metavar = "FILE", .help = "one line per measured request to FILE: start "
		  "offset us, latency us, op, result (to see WHEN slow requests happen)" },
		{ .name = "allow-errors", .type = FLAG_BOOL, .dst = &c->allow_errors,
		  .help = "exit 0 even when requests failed" },
		{ .name = "seed", .type = FLAG_UINT64, .dst = &c->seed,
		  .help = "seed of bodies and GET order (default: from the clock)" },
		{ 0 },
	};
	_Static_assert(sizeof(specs) / sizeof(specs[0]) == N_SPECS, "N_SPECS");
	memcpy(s, specs, sizeof(specs));
}


static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int s3b_config_parse(struct s3b_config *c, int argc, char **argv, char *err, size_t errlen)
{
	struct flag_spec specs[N_SPECS];
	defaults(c);
	make_specs(c, specs);
	c->seed = UINT64_MAX;
	int first = 0;
	int rc = flags_parse(specs, argc, argv, &first, err, errlen);
	flags_free(specs);
	if (rc != 0)
		return rc;
	if (first < argc)
		return fail(err, errlen, "unexpected argument '%s'", argv[first]);
	c->seed_given = c->seed != UINT64_MAX;
	if (c->size_bytes == 0)
		return fail(err, errlen, "flag --size: must be at least 1 byte");
	if (c->objects && c->duration_ms)
		return fail(err, errlen, "flag --duration: give --objects or --duration, not both");
	if (!c->objects && !c->duration_ms)
		c->objects = S3B_DEFAULT_OBJECTS;
	if (strcmp(c->get_order, "random") == 0)
		c->get_random = true;
	else if (strcmp(c->get_order, "sequential") == 0)
		c->get_random = false;
	else
		return fail(err, errlen, "flag --get-order: '%s' is not random or sequential",
			    c->get_order);
	if (strcmp(c->protocol, "s3") == 0)
		c->native = false;
	else if (strcmp(c->protocol, "native") == 0)
		c->native = true;
	else
		return fail(err, errlen, "flag --protocol: '%s' is not s3 or native", c->protocol);
	if (c->native && c->do_list)
		return fail(err, errlen, "flag --list: the native engine has no LIST phase");
	if (c->native_sign_each && !c->native)
		return fail(err, errlen, "flag --native-sign-each-call: only with --protocol native");
	if (c->skip_md5 && !c->native)
		return fail(err, errlen, "flag --skip-md5: only with --protocol native");
	if (c->timeout_ms == 0)
		return fail(err, errlen, "flag --timeout: must be above 0");
	if (c->skip_put && (!c->objects || c->duration_ms))
		return fail(err, errlen, "flag --skip-put: needs --objects N (the objects that exist)");
	if (c->skip_put && c->verify)
		return fail(err, errlen, "flag --skip-put: --verify needs the bodies this run PUT");
	if (c->verify && c->gets == 0)
		return fail(err, errlen, "flag --verify: needs a GET phase (--gets 1 or more)");
	return 0;
}

void s3b_config_usage(FILE *out, const char *prog)
{
	struct s3b_config c;
	struct flag_spec specs[N_SPECS];
	defaults(&c);
	make_specs(&c, specs);
	flags_usage(out, prog, "", specs);
	fprintf(out, "\nPhases: [create bucket] -> warm-up (unmeasured) -> PUT -> GET"
		     " [-> LIST] [-> DELETE].\nExit status: 0 when every measured request"
		     " succeeded, 1 when any failed (unless --allow-errors), 2 for bad flags.\n");
}
