/*
 * s3b_report.c — markdown table and JSON (see s3b_report.h).
 */
#include "bench/s3bench/s3b_report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/flags.h"

static double secs(const struct s3b_phase_result *p)
{
	return (double)p->elapsed_ns / 1e9;
}

static double ops_per_s(const struct s3b_phase_result *p)
{
	double s = secs(p);
	return s > 0 ? (double)(p->ops - p->errors) / s : 0;
}

static double mib_per_s(const struct s3b_phase_result *p)
{
	double s = secs(p);
	return s > 0 ? (double)p->bytes / (1024.0 * 1024.0) / s : 0;
}

static double q_ms(const struct s3b_phase_result *p, double q)
{
	return (double)s3b_hist_quantile(&p->hist, q) / 1e6;
}

void s3b_report_table(FILE *out, const struct s3b_run *r)
{
	const struct s3b_config *c = r->cfg;
	char size[32];
	flags_format_size(c->size_bytes, size, sizeof(size));
	fprintf(out, "iolake-s3-bench: %s, bucket %s, %s objects, concurrency %lld, gets %llu\n\n",
		c->endpoint, c->bucket, size, (long long)c->concurrency,
		(unsigned long long)c->gets);
	fprintf(out, "| phase | ops | errors | ops/s | MiB/s | p50 ms | p90 ms | p99 ms | max ms "
		     "| elapsed s |\n");
	fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (unsigned i = 0; i < r->n_results; i++) {
		const struct s3b_phase_result *p = &r->results[i];
		fprintf(out, "| %s%s | %llu | %llu | %.0f | %.1f | %.3f | %.3f | %.3f | %.3f | %.2f |\n",
			p->name, p->measured ? "" : " (unmeasured)", (unsigned long long)p->ops,
			(unsigned long long)p->errors, ops_per_s(p), mib_per_s(p), q_ms(p, 0.5),
			q_ms(p, 0.9), q_ms(p, 0.99), q_ms(p, 1), secs(p));
	}
	for (unsigned i = 0; i < r->n_results; i++) {
		const struct s3b_phase_result *p = &r->results[i];
		if (strcmp(p->name, "list") == 0)
			fprintf(out, "\nlist: %llu keys listed\n", (unsigned long long)p->items);
		if (!p->errors)
			continue;
		fprintf(out, "\n%s: %llu errors:", p->name, (unsigned long long)p->errors);
		for (int k = 1; k < S3B_ERR__COUNT; k++)
			if (p->errors_by_kind[k])
				fprintf(out, " %s=%llu", s3b_err_name(k),
					(unsigned long long)p->errors_by_kind[k]);
		fprintf(out, "\n  first: %s\n", p->first_error);
	}
}

/* ------------------------------------------------------------ JSON */

static void jstr(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void jkey(FILE *f, const char *k)
{
	jstr(f, k);
	fputs(": ", f);
}

static void jbool(FILE *f, const char *k, bool v, const char *sep)
{
	jkey(f, k);
	fprintf(f, "%s%s", v ? "true" : "false", sep);
}

static void ju64(FILE *f, const char *k, uint64_t v, const char *sep)
{
	jkey(f, k);
	fprintf(f, "%llu%s", (unsigned long long)v, sep);
}

static void jdbl(FILE *f, const char *k, double v, const char *sep)
{
	jkey(f, k);
	fprintf(f, "%.3f%s", v, sep);
}

static void jstrk(FILE *f, const char *k, const char *v, const char *sep)
{
	jkey(f, k);
	jstr(f, v);
	fputs(sep, f);
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

static void json_phase(FILE *f, const struct s3b_phase_result *p)
{
	fputs("    { ", f);
	jstrk(f, "name", p->name, ", ");
	jbool(f, "measured", p->measured, ", ");
	ju64(f, "ops", p->ops, ", ");
	ju64(f, "errors", p->errors, ",\n      ");
	jkey(f, "errors_by_kind");
	fputs("{ ", f);
	for (int k = 1; k < S3B_ERR__COUNT; k++)
		ju64(f, s3b_err_name(k), p->errors_by_kind[k], k + 1 < S3B_ERR__COUNT ? ", " : " },\n      ");
	jstrk(f, "first_error", p->first_error[0] ? p->first_error : NULL, ",\n      ");
	ju64(f, "bytes", p->bytes, ", ");
	ju64(f, "items", p->items, ", ");
	jdbl(f, "elapsed_s", secs(p), ", ");
	jdbl(f, "ops_per_s", ops_per_s(p), ", ");
	jdbl(f, "mib_per_s", mib_per_s(p), ",\n      ");
	jkey(f, "latency_us");
	fputs("{ ", f);
	ju64(f, "count", p->hist.count, ", ");
	jdbl(f, "min", us(p->hist.count ? p->hist.min : 0), ", ");
	jdbl(f, "mean", s3b_hist_mean(&p->hist) / 1e3, ", ");
	jdbl(f, "p50", us(s3b_hist_quantile(&p->hist, 0.5)), ", ");
	jdbl(f, "p90", us(s3b_hist_quantile(&p->hist, 0.9)), ", ");
	jdbl(f, "p99", us(s3b_hist_quantile(&p->hist, 0.99)), ", ");
	jdbl(f, "p999", us(s3b_hist_quantile(&p->hist, 0.999)), ", ");
	jdbl(f, "max", us(p->hist.max), " },\n      ");
	ju64(f, "started_ms", p->started_ms, ", ");
	ju64(f, "finished_ms", p->finished_ms, " }");
}

int s3b_report_json(const char *path, const struct s3b_run *r)
{
	const struct s3b_config *c = r->cfg;
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;

	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	struct utsname u;
	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));

	fputs("{\n  ", f);
	jstrk(f, "tool", "iolake-s3-bench", ", ");
	ju64(f, "schema", 1, ",\n  ");
	jkey(f, "host");
	fputs("{ ", f);
	jstrk(f, "name", host, ", ");
	ju64(f, "cpus", (uint64_t)sysconf(_SC_NPROCESSORS_ONLN), ", ");
	jstrk(f, "kernel", u.release, " },\n  ");
	jkey(f, "config");
	fputs("{ ", f);
	jstrk(f, "endpoint", c->endpoint, ", ");
	jstrk(f, "bucket", c->bucket, ", ");
	jstrk(f, "prefix", c->prefix, ", ");
	jstrk(f, "region", c->region, ",\n    ");
	ju64(f, "size_bytes", c->size_bytes, ", ");
	ju64(f, "objects", c->objects, ", ");
	ju64(f, "duration_ms", c->duration_ms, ", ");
	ju64(f, "concurrency", (uint64_t)c->concurrency, ", ");
	ju64(f, "gets", c->gets, ", ");
	jstrk(f, "get_order", c->get_random ? "random" : "sequential", ",\n    ");
	ju64(f, "warmup_ms", c->warmup_ops ? 0 : c->warmup_ms, ", ");
	ju64(f, "warmup_ops", c->warmup_ops, ", ");
	jbool(f, "verify", c->verify, ", ");
	jbool(f, "sign_payload", c->sign_payload, ", ");
	jbool(f, "list", c->do_list, ", ");
	jbool(f, "delete", c->do_delete, ", ");
	jbool(f, "virtual_host", c->virtual_host, ",\n    ");
	ju64(f, "timeout_ms", c->timeout_ms, ", ");
	ju64(f, "seed", r->seed, " },\n  ");
	ju64(f, "started_ms", r->started_ms, ", ");
	ju64(f, "finished_ms", r->finished_ms, ",\n  ");
	jkey(f, "phases");
	fputs("[\n", f);
	for (unsigned i = 0; i < r->n_results; i++) {
		json_phase(f, &r->results[i]);
		fputs(i + 1 < r->n_results ? ",\n" : "\n", f);
	}
	fputs("  ],\n  ", f);
	jkey(f, "connections");
	fputs("{ ", f);
	ju64(f, "opened", r->engine_stats.connects, ", ");
	ju64(f, "stale_retries", r->engine_stats.stale_retries, ", ");
	ju64(f, "closed_by_peer", r->engine_stats.closes_by_peer, " },\n  ");
	ju64(f, "errors_total", s3b_run_errors(r), "\n}\n");

	int rc = 0;
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}
