/*
 * s3b_run.c — the phases of a run (see s3b_run.h).
 *
 * Each phase is a `struct driver` handed to the engine as a s3b_phase:
 * next() hands out object indices (or a LIST page request), done() adds
 * the result to the phase's s3b_phase_result, tick() draws the progress
 * line. The GET and DELETE phases walk `schedule`, the indices of objects
 * whose PUT succeeded, so a failed PUT costs one error, not G more.
 */
#include "bench/s3bench/s3b_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define LIST_MAX_KEYS 1000
#define TOKEN_MAX 1024

enum drive_kind { D_BUCKET, D_WARMUP, D_PUT, D_GET, D_LIST, D_DELETE };

struct driver {
	struct s3b_run *r;
	struct s3b_phase_result *res;
	enum drive_kind kind;
	uint64_t next;          /* ops handed out */
	uint64_t total;         /* ops to hand out; UINT64_MAX: until deadline */
	uint64_t deadline_ns;   /* 0: none */
	uint64_t start_ns;
	uint64_t last_draw_ns;
	uint64_t warm_keys;     /* warm-up cycles over objects 0 .. warm_keys-1 */
	uint64_t n_sched;       /* entries of r->schedule in use */
	uint64_t rng;
	/* LIST */
	bool list_inflight, list_done;
	size_t query_len;
	char query[S3B_QUERY_MAX + TOKEN_MAX * 3];
};

static uint64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void shuffle(uint32_t *a, uint64_t n, uint64_t *rng)
{
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = rng_next(rng) % i;
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* ------------------------------------------------------------ LIST pages */

/* The text between <tag> and </tag> in body, or NULL. */
static const char *xml_find(const char *body, size_t n, const char *tag, size_t *len)
{
	char open[64], close[64];
	int on = snprintf(open, sizeof(open), "<%s>", tag);
	int cn = snprintf(close, sizeof(close), "</%s>", tag);
	const char *p = memmem(body, n, open, (size_t)on);
	if (!p)
		return NULL;
	p += on;
	const char *e = memmem(p, n - (size_t)(p - body), close, (size_t)cn);
	if (!e)
		return NULL;
	*len = (size_t)(e - p);
	return p;
}

static uint64_t xml_count(const char *body, size_t n, const char *needle)
{
	uint64_t count = 0;
	size_t nl = strlen(needle);
	const char *p = body, *end = body + n;
	while ((p = memmem(p, (size_t)(end - p), needle, nl)) != NULL) {
		count++;
		p += nl;
	}
	return count;
}

/* Undo the five XML entities in place; returns the new length. */
static size_t xml_unescape(char *s, size_t n)
{
	static const struct { const char *ent; char c; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
	};
	size_t j = 0;
	for (size_t i = 0; i < n;) {
		bool hit = false;
		for (size_t k = 0; k < 5 && s[i] == '&'; k++) {
			size_t el = strlen(ents[k].ent);
			if (i + el <= n && memcmp(s + i, ents[k].ent, el) == 0) {
				s[j++] = ents[k].c;
				i += el;
				hit = true;
				break;
			}
		}
		if (!hit)
			s[j++] = s[i++];
	}
	return j;
}

/* Build the ListObjectsV2 query (parameters sorted by name, as SigV4's
 * canonical query must be). token: raw continuation token or NULL. */
static int list_query(struct driver *d, const char *token, size_t token_len)
{
	char enc[TOKEN_MAX * 3 + 1];
	int n;
	if (token) {
		if (s3b_uri_encode(token, token_len, false, enc, sizeof(enc)) < 0)
			return -ENOSPC;
		n = snprintf(d->query, sizeof(d->query),
			     "continuation-token=%s&list-type=2&max-keys=%d&prefix=%s", enc,
			     LIST_MAX_KEYS, d->r->target.list_prefix);
	} else {
		n = snprintf(d->query, sizeof(d->query), "list-type=2&max-keys=%d&prefix=%s",
			     LIST_MAX_KEYS, d->r->target.list_prefix);
	}
	if (n < 0 || (size_t)n >= sizeof(d->query) || (size_t)n >= S3B_QUERY_MAX)
		return -ENOSPC;
	d->query_len = (size_t)n;
	return 0;
}

static void list_page_done(struct driver *d, const struct s3b_op *op)
{
	d->list_inflight = false;
	if (op->err != S3B_OK) {
		d->list_done = true;
		return;
	}
	const char *b = op->resp_body;
	size_t n = op->resp_body_len, len;
	d->res->items += xml_count(b, n, "<Key>");
	const char *t = xml_find(b, n, "IsTruncated", &len);
	if (!t || len != 4 || memcmp(t, "true", 4) != 0) {
		d->list_done = true;
		return;
	}
	const char *tok = xml_find(b, n, "NextContinuationToken", &len);
	char raw[TOKEN_MAX];
	if (!tok || len == 0 || len >= sizeof(raw)) {
		snprintf(d->res->first_error, sizeof(d->res->first_error),
			 "LIST: truncated page without a usable NextContinuationToken");
		d->res->errors++;
		d->res->errors_by_kind[S3B_ERR_PROTOCOL]++;
		d->list_done = true;
		return;
	}
	memcpy(raw, tok, len);
	len = xml_unescape(raw, len);
	if (list_query(d, raw, len) < 0)
		d->list_done = true;
}

/* ------------------------------------------------------------ phase callbacks */

static bool drv_next(void *arg, struct s3b_op *op)
{
	struct driver *d = arg;
	struct s3b_run *r = d->r;
	if (d->next >= d->total)
		return false;
	if (d->deadline_ns && uv_hrtime() >= d->deadline_ns)
		return false;
	switch (d->kind) {
	case D_BUCKET:
		op->kind = S3B_OP_MKBUCKET;
		break;
	case D_WARMUP:
		op->kind = S3B_OP_PUT;
		op->obj = d->next % d->warm_keys;
		break;
	case D_PUT:
		if (d->next >= r->written_cap)
			return false;
		op->kind = S3B_OP_PUT;
		op->obj = d->next;
		r->put_range = d->next + 1;
		break;
	case D_GET: {
		uint64_t pos = d->next % d->n_sched;
		if (pos == 0 && r->cfg->get_random)
			shuffle(r->schedule, d->n_sched, &d->rng); /* a new order each pass */
		op->kind = S3B_OP_GET;
		op->obj = r->schedule[pos];
		break;
	}
	case D_DELETE:
		op->kind = S3B_OP_DELETE;
		op->obj = r->schedule[d->next];
		break;
	case D_LIST:
		if (d->list_inflight || d->list_done)
			return false;
		d->list_inflight = true;
		op->kind = S3B_OP_LIST;
		op->query = d->query;
		op->query_len = d->query_len;
		break;
	}
	if (d->next == 0)
		d->start_ns = uv_hrtime();
	d->next++;
	return true;
}

static const char *op_method(enum s3b_op_kind k)
{
	switch (k) {
	case S3B_OP_MKBUCKET: return "PUT bucket";
	case S3B_OP_PUT: return "PUT";
	case S3B_OP_GET: return "GET";
	case S3B_OP_LIST: return "LIST";
	case S3B_OP_DELETE: return "DELETE";
	}
	return "?";
}

static void note_first_error(struct driver *d, const struct s3b_op *op)
{
	struct s3b_phase_result *res = d->res;
	if (res->first_error[0])
		return;
	char detail[160] = "";
	if (op->sys_err)
		snprintf(detail, sizeof(detail), ": %s (%s)", uv_strerror(op->sys_err),
			 uv_err_name(op->sys_err));
	else if (op->status)
		snprintf(detail, sizeof(detail), ": HTTP %d", op->status);
	char body[128];
	size_t n = 0;
	for (size_t i = 0; i < op->resp_body_len && n + 1 < sizeof(body); i++) {
		char c = op->resp_body[i];
		body[n++] = (c >= 32 && c < 127) ? c : ' ';
	}
	body[n] = '\0';
	char what[48] = "";
	if (op->kind == S3B_OP_PUT || op->kind == S3B_OP_GET || op->kind == S3B_OP_DELETE)
		snprintf(what, sizeof(what), " object %llu", (unsigned long long)op->obj);
	snprintf(res->first_error, sizeof(res->first_error), "%s%s: %s%s%s%s", op_method(op->kind),
		 what, s3b_err_name(op->err), detail, n ? " " : "", body);
}

/* One --latency-log line: start offset us, latency us, phase, result. A
 * buffered fprintf (~0.2 us), so logging does not move the figures. */
static void log_latency(struct driver *d, const struct s3b_op *op)
{
	struct s3b_run *r = d->r;
	uint64_t start = op->start_ns > r->log_t0_ns ? op->start_ns - r->log_t0_ns : 0;
	fprintf(r->latency_log, "%llu %llu %s %s\n", (unsigned long long)(start / 1000),
		(unsigned long long)(op->latency_ns / 1000), d->res->name, s3b_err_name(op->err));
}

static void drv_done(void *arg, const struct s3b_op *op)
{
	struct driver *d = arg;
	struct s3b_phase_result *res = d->res;
	res->ops++;
	if (d->r->latency_log && res->measured)
		log_latency(d, op);
	if (op->err != S3B_OK) {
		res->errors++;
		res->errors_by_kind[op->err]++;
		note_first_error(d, op);
	} else {
		s3b_hist_record(&res->hist, op->latency_ns);
		if (op->kind == S3B_OP_PUT || op->kind == S3B_OP_GET)
			res->bytes += op->body_bytes;
		if (op->kind == S3B_OP_PUT && d->kind == D_PUT)
			d->r->written[op->obj] = 1;
	}
	if (d->kind == D_LIST)
		list_page_done(d, op);
}

static void drv_tick(void *arg, uint64_t now)
{
	struct driver *d = arg;
	if (!d->r->progress || now - d->last_draw_ns < 1000000000ull || d->next == 0)
		return;
	d->last_draw_ns = now;
	double s = (double)(now - d->start_ns) / 1e9;
	uint64_t ok = d->res->ops - d->res->errors;
	printf("\r\033[K  %-7s %10llu ops  %10.0f ops/s  %llu errors  %5.1fs", d->res->name,
	       (unsigned long long)d->res->ops, s > 0 ? (double)ok / s : 0.0,
	       (unsigned long long)d->res->errors, s);
	fflush(stdout);
}

/* ------------------------------------------------------------ phases */

static struct driver *phase_begin(struct s3b_run *r, const char *name, enum drive_kind kind,
				  bool measured)
{
	struct driver *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	struct s3b_phase_result *res = &r->results[r->n_results++];
	memset(res, 0, sizeof(*res));
	s3b_hist_init(&res->hist);
	snprintf(res->name, sizeof(res->name), "%s", name);
	res->measured = measured;
	d->r = r;
	d->res = res;
	d->kind = kind;
	d->total = UINT64_MAX;
	d->rng = r->seed ^ (uint64_t)kind;
	return d;
}

static int phase_run(struct s3b_run *r, struct driver *d, unsigned inflight)
{
	struct s3b_phase p = { drv_next, drv_done, drv_tick, d, inflight };
	d->res->started_ms = wall_ms();
	int rc = r->native ? s3b_native_run(r->native, &p) : s3b_engine_run(r->engine, &p);
	uint64_t end = uv_hrtime();
	d->res->finished_ms = wall_ms();
	d->res->elapsed_ns = d->next ? end - d->start_ns : 0;
	if (r->progress && d->last_draw_ns) {
		printf("\r\033[K");
		fflush(stdout);
	}
	free(d);
	return rc;
}

static unsigned conc(const struct s3b_run *r)
{
	return (unsigned)r->cfg->concurrency;
}

/* The indices of objects whose PUT succeeded, in index order. */
static uint64_t fill_schedule(struct s3b_run *r)
{
	uint64_t n = 0;
	for (uint64_t i = 0; i < r->put_range; i++)
		if (r->written[i])
			r->schedule[n++] = (uint32_t)i;
	return n;
}

int s3b_run_all(struct s3b_run *r, char *err, size_t errlen)
{
	const struct s3b_config *cfg = r->cfg;
	struct driver *d;
	int rc;
	r->started_ms = wall_ms();

	if (cfg->create_bucket) {
		if (!(d = phase_begin(r, "bucket", D_BUCKET, false)))
			return -ENOMEM;
		d->total = 1;
		struct s3b_phase_result *res = d->res;
		if ((rc = phase_run(r, d, 1)) < 0)
			return rc;
		if (res->errors) {
			snprintf(err, errlen, "cannot create bucket %s: %s", cfg->bucket,
				 res->first_error);
			r->finished_ms = wall_ms();
			return -EIO;
		}
	}

	if (cfg->skip_put) {
		/* A GET-only load over the objects an earlier run wrote. */
		for (uint64_t i = 0; i < cfg->objects; i++)
			r->written[i] = 1;
		r->put_range = cfg->objects;
	} else if (cfg->warmup_ops || cfg->warmup_ms) {
		if (!(d = phase_begin(r, "warmup", D_WARMUP, false)))
			return -ENOMEM;
		if (cfg->warmup_ops)
			d->total = cfg->warmup_ops;
		else
			d->deadline_ns = uv_hrtime() + cfg->warmup_ms * 1000000ull;
		/* overwrite objects the PUT phase writes again: nothing left over */
		d->warm_keys = cfg->objects && cfg->objects < (uint64_t)cfg->concurrency
				       ? cfg->objects
				       : (uint64_t)cfg->concurrency;
		if ((rc = phase_run(r, d, conc(r))) < 0)
			return rc;
	}

	if (!cfg->skip_put) {
		if (!(d = phase_begin(r, "put", D_PUT, true)))
			return -ENOMEM;
		if (cfg->objects)
			d->total = cfg->objects;
		else
			d->deadline_ns = uv_hrtime() + cfg->duration_ms * 1000000ull;
		if ((rc = phase_run(r, d, conc(r))) < 0)
			return rc;
	}

	uint64_t n_ok = fill_schedule(r);
	if (cfg->gets && n_ok) {
		if (!(d = phase_begin(r, "get", D_GET, true)))
			return -ENOMEM;
		d->n_sched = n_ok;
		d->total = n_ok * cfg->gets;
		if ((rc = phase_run(r, d, conc(r))) < 0)
			return rc;
	}

	if (cfg->do_list) {
		if (!(d = phase_begin(r, "list", D_LIST, true)))
			return -ENOMEM;
		if (list_query(d, NULL, 0) < 0) {
			free(d);
			snprintf(err, errlen, "--prefix too long for a LIST query");
			return -EINVAL;
		}
		if ((rc = phase_run(r, d, 1)) < 0) /* pages follow each other */
			return rc;
	}

	if (cfg->do_delete && n_ok) {
		if (!(d = phase_begin(r, "delete", D_DELETE, true)))
			return -ENOMEM;
		d->total = fill_schedule(r); /* index order again */
		if ((rc = phase_run(r, d, conc(r))) < 0)
			return rc;
	}
	r->finished_ms = wall_ms();
	if (r->native)
		s3b_native_get_stats(r->native, &r->engine_stats);
	else
		s3b_engine_get_stats(r->engine, &r->engine_stats);
	if (r->latency_log && (fflush(r->latency_log) != 0 || ferror(r->latency_log))) {
		snprintf(err, errlen, "--latency-log %s: write failed", cfg->latency_log);
		return -EIO;
	}
	return 0;
}

uint64_t s3b_run_errors(const struct s3b_run *r)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < r->n_results; i++)
		n += r->results[i].errors;
	return n;
}

/* ------------------------------------------------------------ setup */

/* Open --latency-log and write its header: the wall clock of offset 0, so
 * the lines can be laid beside a server's log timestamps. */
static int open_latency_log(struct s3b_run *r, char *err, size_t errlen)
{
	const char *path = r->cfg->latency_log;
	r->latency_log = fopen(path, "w");
	if (!r->latency_log) {
		int e = errno;
		snprintf(err, errlen, "--latency-log %s: %s", path, strerror(e));
		return -e;
	}
	struct timeval tv;
	gettimeofday(&tv, NULL);
	r->log_t0_ns = uv_hrtime();
	fprintf(r->latency_log, "# iolake-s3-bench latency log: offset 0 = %lld.%06ld s since the "
		"epoch (wall clock)\n# start_us latency_us phase result\n",
		(long long)tv.tv_sec, (long)tv.tv_usec);
	return 0;
}

int s3b_run_init(struct s3b_run *r, const struct s3b_config *cfg, char *err, size_t errlen)
{
	int rc;
	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	r->seed = cfg->seed_given ? cfg->seed : (uint64_t)wall_ms() ^ ((uint64_t)getpid() << 32);
	r->progress = isatty(STDOUT_FILENO);

	/* The native protocol's endpoint is host:port; the S3 target below
	 * only names the bucket for the report. */
	char url[300];
	snprintf(url, sizeof(url), "%s%s", cfg->native && strncmp(cfg->endpoint, "http://", 7) ?
		 "http://" : "", cfg->endpoint);
	if ((rc = s3b_endpoint_parse(url, &r->endpoint, err, errlen)) < 0)
		return rc;
	if ((rc = s3b_target_init(&r->target, &r->endpoint, cfg->bucket, cfg->prefix,
				  cfg->virtual_host, err, errlen)) < 0)
		return rc;
	if ((rc = s3b_signer_init(&r->signer, cfg->access_key, cfg->secret_key, cfg->region)) < 0) {
		snprintf(err, errlen, "access key, secret key or region empty or too long");
		return rc;
	}
	r->written_cap = cfg->objects ? cfg->objects : cfg->max_objects;
	if (r->written_cap > UINT32_MAX) {
		snprintf(err, errlen, "too many objects");
		return -EINVAL;
	}
	r->results = calloc(S3B_MAX_PHASES, sizeof(*r->results));
	r->written = calloc(r->written_cap, 1);
	r->schedule = calloc(r->written_cap, sizeof(*r->schedule));
	if (!r->results || !r->written || !r->schedule) {
		rc = -ENOMEM;
		goto free_arrays;
	}
	if ((rc = s3b_body_init(&r->body, cfg->size_bytes, r->seed, cfg->sign_payload)) < 0)
		goto free_arrays;
	if (cfg->latency_log && (rc = open_latency_log(r, err, errlen)) < 0)
		goto free_body;
	if ((rc = uv_loop_init(&r->loop)) < 0)
		goto close_log;
	struct s3b_engine_config ec = {
		.endpoint = &r->endpoint,
		.target = &r->target,
		.signer = &r->signer,
		.body = &r->body,
		.connections = (unsigned)cfg->concurrency,
		.timeout_ns = cfg->timeout_ms * 1000000ull,
		.verify = cfg->verify,
		.sign_payload = cfg->sign_payload,
	};
	if (cfg->native) {
		struct s3b_native_config nc = {
			.endpoint = cfg->endpoint, .bucket = cfg->bucket, .prefix = cfg->prefix,
			.signer = &r->signer, .body = &r->body,
			.timeout_ns = cfg->timeout_ms * 1000000ull, .verify = cfg->verify,
			.sign_payload = cfg->sign_payload, .skip_md5 = cfg->skip_md5,
			.channels = (unsigned)cfg->native_conns,
			.sign_each_call = cfg->native_sign_each,
		};
		if ((rc = s3b_native_new(&r->loop, &nc, &r->native, err, errlen)) < 0)
			goto close_loop;
	} else if ((rc = s3b_engine_new(&r->loop, &ec, &r->engine, err, errlen)) < 0)
		goto close_loop;
	return 0;

close_loop:
	uv_loop_close(&r->loop);
close_log:
	if (r->latency_log)
		fclose(r->latency_log);
	r->latency_log = NULL;
free_body:
	s3b_body_free(&r->body);
free_arrays:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(r->schedule);
	free(r->written);
	free(r->results);
	r->results = NULL;
	return rc;
}

void s3b_run_free(struct s3b_run *r)
{
	if (!r->results)
		return;
	if (r->native)
		s3b_native_free(r->native);
	else
		s3b_engine_free(r->engine);
	uv_loop_close(&r->loop);
	if (r->latency_log)
		fclose(r->latency_log);
	r->latency_log = NULL;
	s3b_body_free(&r->body);
	free(r->schedule);
	free(r->written);
	free(r->results);
	r->results = NULL;
}
