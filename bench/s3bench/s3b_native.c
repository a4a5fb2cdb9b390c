/*
 * s3b_native.c — the native protocol's bench engine (s3b_native.h): ops
 * pulled from the phase, each an RPC on one of the multiplexed channels
 * (logged in at the start, or signed per call), completions fed back to
 * the phase, which is asked for more after each.
 */
#include "bench/s3bench/s3b_native.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/native_login.h"
#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "common/rpc.h"

#define TICK_MS 100

struct s3b_native {
	uv_loop_t *loop;
	struct s3b_native_config cfg;
	char bucket[64];
	char prefix[512];
	struct rpc_channel *ch[S3B_NATIVE_MAX_CHANNELS];
	unsigned n_ch, next_ch;
	struct buf *body;              /* wraps cfg.body->buf: no copy per PUT */
	const struct s3b_phase *p;
	unsigned inflight;
	bool over;                     /* next() said no with nothing out: the phase ended */
	uv_timer_t tick;
	uint64_t tick_n;
	unsigned logins_out;           /* at the start: logins not yet answered */
	char login_err[400];           /* the first that failed */
};

struct nop {
	struct s3b_native *e;
	struct s3b_op op;
	uint64_t t0;
};

static void no_release(struct buf *b)
{
	(void)b;
}

static void fill(struct s3b_native *e);

/* An HTTP-like status for the report. */
static int http_of(int status)
{
	switch (status) {
	case RPC_OK: return 200;
	case RPC_NOT_FOUND: return 404;
	case RPC_PERMISSION_DENIED:
	case RPC_UNAUTHENTICATED: return 403;
	case RPC_INVALID_ARGUMENT:
	case RPC_OUT_OF_RANGE: return 400;
	case RPC_FAILED_PRECONDITION: return 412;
	case RPC_UNAVAILABLE: return 503;
	case RPC_DEADLINE_EXCEEDED: return 0;
	default: return 500;
	}
}

static void on_answer(void *ud, const struct rpc_result *res)
{
	struct nop *n = ud;
	struct s3b_native *e = n->e;
	struct s3b_op *op = &n->op;
	op->start_ns = n->t0;
	op->latency_ns = uv_hrtime() - n->t0;
	op->status = http_of(res->status);
	op->err = S3B_OK;
	if (res->status == RPC_DEADLINE_EXCEEDED)
		op->err = S3B_ERR_TIMEOUT;
	else if (res->status == RPC_UNAVAILABLE && !strncmp(res->message, "ServiceUnavailable", 18))
		op->err = S3B_ERR_HTTP_5XX;
	else if (res->status == RPC_UNAVAILABLE || res->status == RPC_CANCELLED)
		op->err = S3B_ERR_IO;
	else if (res->status != RPC_OK)
		op->err = op->status >= 500 ? S3B_ERR_HTTP_5XX : S3B_ERR_HTTP_4XX;
	if (op->err) {
		op->resp_body = res->message;
		op->resp_body_len = strlen(res->message);
	} else if (op->kind == S3B_OP_GET) {
		const struct s3b_body *b = e->cfg.body;
		op->body_bytes = res->payload.len;
		if (res->payload.len != b->size ||
		    (e->cfg.verify &&
		     memcmp(buf_slice_data(&res->payload),
			    s3b_body_data(b, s3b_body_variant(b, op->obj)), b->size))) {
			op->err = S3B_ERR_BODY;
			op->resp_body = "";
		}
	} else if (op->kind == S3B_OP_PUT) {
		op->body_bytes = e->cfg.body->size;
	}
	e->inflight--;
	e->p->done(e->p->arg, op);
	free(n);
	fill(e);
}

/* Sign and send one op. 0, or a negative errno (the op is then failed). */
static int send_op(struct s3b_native *e, struct nop *n)
{
	struct s3b_signer *sg = e->cfg.signer;
	const struct s3b_body *b = e->cfg.body;
	char key[600], sha[65], authz[NATIVE_SIG_AUTHZ_MAX];
	snprintf(key, sizeof(key), "%s%08llu", e->prefix, (unsigned long long)n->op.obj);
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	union {
		ProtobufCMessage base;
		Iolake__Native__PutRequest put;
		Iolake__Native__GetRequest get;
		Iolake__Native__DeleteRequest del;
		Iolake__Native__ListRequest list;
	} m;
	unsigned method;
	struct buf_slice payload = { 0 }, *pp = NULL;
	snprintf(sha, sizeof(sha), "%s", SIGV4_UNSIGNED_PAYLOAD);
	switch (n->op.kind) {
	case S3B_OP_PUT: {
		unsigned v = s3b_body_variant(b, n->op.obj);
		iolake__native__put_request__init(&m.put);
		m.put.auth = &auth;
		m.put.bucket = e->bucket;
		m.put.key = key;
		m.put.skip_md5 = e->cfg.skip_md5;
		method = NATIVE_M_PUT;
		payload.buf = e->body;
		payload.off = (size_t)v * S3B_BODY_STEP;
		payload.len = b->size;
		pp = &payload;
		if (e->cfg.sign_payload && b->sha256_hex)
			snprintf(sha, sizeof(sha), "%s", b->sha256_hex[v]);
		break;
	}
	case S3B_OP_GET:
		iolake__native__get_request__init(&m.get);
		m.get.auth = &auth;
		m.get.bucket = e->bucket;
		m.get.key = key;
		method = NATIVE_M_GET;
		break;
	case S3B_OP_DELETE:
		iolake__native__delete_request__init(&m.del);
		m.del.auth = &auth;
		m.del.bucket = e->bucket;
		m.del.key = key;
		method = NATIVE_M_DELETE;
		break;
	case S3B_OP_MKBUCKET:
		iolake__native__list_request__init(&m.list);
		m.list.auth = &auth;
		m.list.bucket = e->bucket;
		m.list.max_keys = 1;
		method = NATIVE_M_LIST;
		break;
	default:
		return -ENOTSUP;
	}
	if (e->cfg.sign_each_call) {
		int rc = native_sig_sign(sg->key, sg->access_key, sg->region, sg->amz_date,
					 NATIVE_SVC, method, &m.base, sha, authz);
		if (rc)
			return rc;
		auth.authorization = authz;
		auth.amz_date = sg->amz_date;
		auth.content_sha256 = sha;
	}
	struct rpc_call_opts co = { .timeout_ms = (uint32_t)(e->cfg.timeout_ns / 1000000) };
	n->t0 = uv_hrtime();
	struct rpc_channel *ch = e->ch[e->next_ch++ % e->n_ch];
	rpc_call(ch, NATIVE_SVC, method, &m.base, pp, &co, on_answer, n);
	return 0;
}

static void fill(struct s3b_native *e)
{
	while (!e->over && e->inflight < e->p->max_inflight) {
		struct nop *n = calloc(1, sizeof(*n));
		if (!n)
			break;
		n->e = e;
		if (!e->p->next(e->p->arg, &n->op)) {
			free(n);
			if (!e->inflight) {
				e->over = true;
				uv_stop(e->loop);
			}
			return;
		}
		e->inflight++;
		int rc = send_op(e, n);
		if (rc) {
			n->op.err = S3B_ERR_PROTOCOL;
			n->op.resp_body = "cannot build the call";
			n->op.resp_body_len = strlen(n->op.resp_body);
			e->inflight--;
			e->p->done(e->p->arg, &n->op);
			free(n);
		}
	}
}

static void on_tick(uv_timer_t *t)
{
	struct s3b_native *e = t->data;
	if (++e->tick_n % (1000 / TICK_MS) == 0)
		s3b_signer_tick(e->cfg.signer, time(NULL));
	if (e->p && e->p->tick)
		e->p->tick(e->p->arg, uv_hrtime());
	/* next() may say yes again later (duration phases ask after each
	 * completion; a phase that ran dry with nothing out ends). */
}

static void on_login(void *ud, int status, const char *message, const char *user)
{
	(void)user;
	struct s3b_native *e = ud;
	if (status != RPC_OK && !e->login_err[0])
		snprintf(e->login_err, sizeof(e->login_err), "%s", message);
	e->logins_out--;
}

/* Log every channel's connection in; 0, or -1 with e->login_err. */
static int login_all(struct s3b_native *e)
{
	struct s3b_signer *sg = e->cfg.signer;
	uint32_t ms = (uint32_t)(e->cfg.timeout_ns / 1000000);
	for (unsigned i = 0; i < e->n_ch; i++) {
		if (native_login_start(e->ch[i], sg->key, sg->access_key, sg->region, sg->amz_date,
				       ms, on_login, e)) {
			snprintf(e->login_err, sizeof(e->login_err), "out of memory");
			break;
		}
		e->logins_out++;
	}
	while (e->logins_out)
		uv_run(e->loop, UV_RUN_ONCE);
	return e->login_err[0] ? -1 : 0;
}

int s3b_native_new(uv_loop_t *loop, const struct s3b_native_config *cfg, struct s3b_native **out,
		   char *err, size_t errlen)
{
	struct s3b_native *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->loop = loop;
	e->cfg = *cfg;
	const char *ep = cfg->endpoint;
	if (!strncmp(ep, "http://", 7))
		ep += 7;
	snprintf(e->bucket, sizeof(e->bucket), "%s", cfg->bucket);
	snprintf(e->prefix, sizeof(e->prefix), "%s", cfg->prefix);
	size_t blen = cfg->body->size + (size_t)(cfg->body->variants - 1) * S3B_BODY_STEP;
	struct rpc_channel_opts co = { .max_message_bytes = NATIVE_CHUNK_MAX + (1u << 20) };
	e->n_ch = cfg->channels ? cfg->channels : 1;
	if (e->n_ch > S3B_NATIVE_MAX_CHANNELS)
		e->n_ch = S3B_NATIVE_MAX_CHANNELS;
	for (unsigned i = 0; i < e->n_ch; i++)
		if (!strchr(ep, ':') || !(e->ch[i] = rpc_channel_open(loop, ep, &co))) {
			snprintf(err, errlen, "flag --endpoint: '%s' is not host:port", cfg->endpoint);
			while (i)
				rpc_channel_close(e->ch[--i]);
			free(e);
			return -EINVAL;
		}
	if (!(e->body = buf_wrap(cfg->body->buf, blen, no_release, NULL))) {
		for (unsigned i = 0; i < e->n_ch; i++)
			rpc_channel_close(e->ch[i]);
		free(e);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uv_timer_init(loop, &e->tick);
	e->tick.data = e;
	s3b_signer_tick(cfg->signer, time(NULL));
	*out = e;
	if (!cfg->sign_each_call && login_all(e)) {
		snprintf(err, errlen, "native login: %s", e->login_err);
		s3b_native_free(e);
		*out = NULL;
		return -EACCES;
	}
	return 0;
}

int s3b_native_run(struct s3b_native *e, const struct s3b_phase *p)
{
	if (!p->max_inflight)
		return -EINVAL;
	e->p = p;
	e->over = false;
	e->inflight = 0;
	uv_timer_start(&e->tick, on_tick, TICK_MS, TICK_MS);
	fill(e);
	while (!e->over)
		uv_run(e->loop, UV_RUN_DEFAULT);
	uv_timer_stop(&e->tick);
	e->p = NULL;
	return 0;
}

void s3b_native_get_stats(const struct s3b_native *e, struct s3b_engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->connects = e->n_ch;
}

void s3b_native_free(struct s3b_native *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->n_ch; i++)
		rpc_channel_close(e->ch[i]);
	uv_close((uv_handle_t *)&e->tick, NULL);
	uv_run(e->loop, UV_RUN_DEFAULT);
	buf_unref(e->body);
	free(e);
}
