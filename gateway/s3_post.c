/*
 * s3_post.c — PostObject (browser POST uploads). See s3_post.h.
 *
 * A request's steps: the form parser (gateway/form) takes the body as it
 * streams; the fields are kept (at most 20 KiB in all, form.h). When the
 * file part begins the body is paused and what the parser hands on of the
 * file meanwhile is held: the bucket is read (its CORS headers go on every
 * answer from then on, refusals too), the policy evaluated
 * (gateway/post_policy), the signature checked (the key's secret from the
 * credential source, as s3_auth gets it), s3:PutObject decided for the
 * signer (or anonymous, without a policy), the ACL field checked; then the
 * PUT pipeline (s3_put.h) opens for the file's size, takes the held bytes
 * and the rest as they come (its back-pressure pauses the body), and
 * commits the record with the fields as the object's headers.
 *
 * The file's size must be known when its data starts (gw_data writes
 * stripes of a fixed size): it is the body's Content-Length minus where
 * the file starts and the closing delimiter "\r\n--<boundary>--\r\n". So
 * the file must be the last part and the body end right after the closing
 * delimiter and its CRLF, as browsers, curl and Python's requests send it;
 * anything else is MalformedPOSTRequest (and stores nothing).
 *
 * Owns the request's fields, held bytes and policy.
 */
#include "gateway/s3_post.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/loop.h"
#include "common/sigv4.h"
#include "gateway/form.h"
#include "gateway/post_policy.h"
#include "gateway/s3_cors_hdr.h"
#include "gateway/s3_put.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/s3_quota.h"

#define POST_FIELDS_MAX 256

struct post_rq {
	struct s3_put put;          /* first: the PUT pipeline's request */
	struct form form;
	struct post_field fields[POST_FIELDS_MAX];
	struct sigv4_header hdrs[POST_FIELDS_MAX];  /* the fields as the object's headers */
	size_t n_fields;
	char filename[FORM_FILENAME_MAX + 1];
	char file_ctype[FORM_CTYPE_MAX + 1];
	bool file_seen, file_ended, opened, failed;
	uint64_t body_len;          /* Content-Length */
	uint64_t fed;               /* body bytes given to the form parser */
	uint64_t file_bytes;        /* file bytes passed on */
	/* File bytes that came while the request was being authorized. */
	char *held;
	size_t held_len, held_cap;
	struct post_policy policy;
	bool has_policy;
	struct s3_cred_lookup lookup;
	char access_key[128];
	char sig[80];
	char scope_date[9], scope_region[64];
	bool v2;
	char msg[400];
};

static struct post_rq *post_of(struct s3_rq *rq)
{
	return container_of(rq, struct post_rq, put.rq);
}

static void free_names(struct post_rq *q);

static void post_fini(struct s3_rq *rq)
{
	struct post_rq *q = post_of(rq);
	s3_put_fini(rq);
	free_names(q);
	free(q->held);
	post_policy_free(&q->policy);
}

/* Answer e (msg NULL: the default) once; the body is left to the front
 * end (read and discarded, or a lingering close). */
static int post_fail(struct post_rq *q, enum s3_err e, const char *msg)
{
	if (!q->failed) {
		q->failed = true;
		s3_rq_fail(&q->put.rq, e, msg);
		s3_put_drop_new(&q->put);
	}
	return -ECANCELED;
}

static const struct post_field *field(const struct post_rq *q, const char *name)
{
	for (size_t i = 0; i < q->n_fields; i++)
		if (strcasecmp(q->fields[i].name, name) == 0)
			return &q->fields[i];
	return NULL;
}

/* ------------------------------------------------------------ the form */

static int on_field(void *ud, const char *name, const char *value, size_t value_len)
{
	struct post_rq *q = ud;
	if (q->file_seen || q->failed)
		return 0; /* after the file: ignored, as S3 does */
	if (q->n_fields == POST_FIELDS_MAX)
		return post_fail(q, S3E_MaxPostPreDataLengthExceeded, NULL);
	size_t nl = strlen(name);
	/* name lives in the parser only during the call: keep a copy (the
	 * names are within the 20 KiB the parser allows, so this is bounded;
	 * the values stay in the parser's buffer). */
	char *copy = malloc(nl + 1);
	if (!copy)
		return post_fail(q, S3E_InternalError, NULL);
	memcpy(copy, name, nl + 1);
	q->fields[q->n_fields++] = (struct post_field){ .name = copy, .value = value,
							 .value_len = value_len };
	return 0;
}

static void free_names(struct post_rq *q)
{
	for (size_t i = 0; i < q->n_fields; i++)
		free((char *)q->fields[i].name);
	q->n_fields = 0;
}

static void authorize(struct post_rq *q);

static int on_file_begin(void *ud, const char *filename, const char *content_type)
{
	struct post_rq *q = ud;
	if (q->failed)
		return -ECANCELED;
	if (q->file_seen)
		return post_fail(q, S3E_IncorrectNumberOfFilesInPostRequest, NULL);
	q->file_seen = true;
	snprintf(q->filename, sizeof(q->filename), "%s", filename);
	snprintf(q->file_ctype, sizeof(q->file_ctype), "%s", content_type);
	/* The file's size: the rest of the body but the closing delimiter. */
	uint64_t tail = q->form.dlen + 4; /* "\r\n--" boundary "--\r\n" */
	uint64_t at = q->fed + q->form.part_at;
	if (q->body_len < at + tail)
		return post_fail(q, S3E_MalformedPOSTRequest, NULL);
	q->put.size = q->body_len - at - tail;
	/* Nothing more is read until the request is authorized. */
	http_pause(s3_call_stream(q->put.rq.c));
	authorize(q);
	return q->failed ? -ECANCELED : 0;
}

static int on_file_data(void *ud, const char *data, size_t len)
{
	struct post_rq *q = ud;
	if (q->failed)
		return -ECANCELED;
	if (q->file_bytes + len > q->put.size)
		return post_fail(q, S3E_MalformedPOSTRequest,
				 "The file must be the last field, and the body end with the "
				 "closing boundary and CRLF");
	q->file_bytes += len;
	if (q->opened) {
		s3_put_feed(&q->put, data, len);
		return 0;
	}
	if (q->held_len + len > q->held_cap) {
		size_t cap = q->held_cap ? q->held_cap * 2 : 65536;
		while (cap < q->held_len + len)
			cap *= 2;
		char *b = realloc(q->held, cap);
		if (!b)
			return post_fail(q, S3E_InternalError, NULL);
		q->held = b;
		q->held_cap = cap;
	}
	memcpy(q->held + q->held_len, data, len);
	q->held_len += len;
	return 0;
}

/* The whole file is in: its size against the policy, then the commit. */
static void file_done(struct post_rq *q)
{
	if (q->file_bytes != q->put.size) {
		post_fail(q, S3E_MalformedPOSTRequest,
			  "The file must be the last field, and the body end with the closing "
			  "boundary and CRLF");
		return;
	}
	if (q->has_policy) {
		enum s3_err e = post_policy_check_size(&q->policy, q->file_bytes);
		if (e) {
			post_fail(q, e, NULL);
			return;
		}
	}
	s3_put_feed_end(&q->put);
}

static int on_file_end(void *ud)
{
	struct post_rq *q = ud;
	if (q->failed)
		return -ECANCELED;
	q->file_ended = true;
	if (q->opened)
		file_done(q);
	return 0;
}

static const struct form_cbs form_cbs = {
	.on_field = on_field,
	.on_file_begin = on_file_begin,
	.on_file_data = on_file_data,
	.on_file_end = on_file_end,
};

static void on_body(struct s3_call *c, const char *data, size_t len)
{
	struct post_rq *q = post_of(s3_call_user(c));
	if (q->failed)
		return;
	int rc = form_feed(&q->form, data, len);
	q->fed += len;
	if (rc == -E2BIG)
		post_fail(q, S3E_MaxPostPreDataLengthExceeded, NULL);
	else if (rc && rc != -ECANCELED)
		post_fail(q, S3E_MalformedPOSTRequest, NULL);
}

static void on_body_end(struct s3_call *c, enum s3_err verdict)
{
	struct post_rq *q = post_of(s3_call_user(c));
	if (q->failed)
		return;
	if (verdict) {
		post_fail(q, verdict, NULL);
		return;
	}
	int rc = form_finish(&q->form);
	if (rc) {
		post_fail(q, S3E_MalformedPOSTRequest, NULL);
		return;
	}
	if (!q->file_seen)
		post_fail(q, S3E_IncorrectNumberOfFilesInPostRequest, NULL);
	/* Otherwise the file's end came before this (the closing delimiter);
	 * the commit goes on from there. */
}

/* ------------------------------------------------------------ authorization */

/* The object key: the key field with ${filename} replaced by the file's
 * name. S3E_OK or the error. */
static enum s3_err make_key(struct post_rq *q)
{
	const struct post_field *k = field(q, "key");
	if (!k) {
		snprintf(q->msg, sizeof(q->msg), "Bucket POST must contain a field named 'key'.  "
			 "If it is specified, please check the order of the fields.");
		return S3E_InvalidArgument;
	}
	static const char var[] = "${filename}";
	size_t vl = sizeof(var) - 1, fl = strlen(q->filename);
	char *key = malloc(k->value_len + fl + 1);
	if (!key)
		return S3E_InternalError;
	size_t n = 0;
	const char *hit = k->value_len >= vl ? memmem(k->value, k->value_len, var, vl) : NULL;
	if (hit) {
		size_t pre = (size_t)(hit - k->value);
		memcpy(key, k->value, pre);
		memcpy(key + pre, q->filename, fl);
		memcpy(key + pre + fl, hit + vl, k->value_len - pre - vl);
		n = k->value_len - vl + fl;
	} else {
		memcpy(key, k->value, k->value_len);
		n = k->value_len;
	}
	key[n] = '\0';
	if (n == 0 || n > S3_KEY_MAX || strlen(key) != n) {
		free(key);
		snprintf(q->msg, sizeof(q->msg), n > S3_KEY_MAX ? "Your key is too long"
				 : "User key must have a length greater than 0.");
		return n > S3_KEY_MAX ? S3E_KeyTooLongError : S3E_InvalidArgument;
	}
	free(q->put.rq.key);
	q->put.rq.key = key;
	/* The key as the policy sees it. */
	q->fields[k - q->fields].value = key;
	q->fields[k - q->fields].value_len = n;
	return S3E_OK;
}

static void open_file(struct post_rq *q);

/* Who signed is known (or nobody): s3:PutObject on the bucket read first
 * (rq->bkt), decided as the gate decides it. */
static void decide(struct post_rq *q)
{
	struct s3_rq *rq = &q->put.rq;
	if (s3_rq_decide(rq, S3_ACT_PutObject, rq->bkt, NULL) == S3_DENY) {
		post_fail(q, S3E_AccessDenied, NULL);
		return;
	}
	open_file(q);
}

static bool sig_matches(struct post_rq *q, const char *secret)
{
	const struct post_field *pol = field(q, "policy");
	if (q->v2) {
		uint8_t mac[20];
		unsigned ml = 0;
		HMAC(EVP_sha1(), secret, (int)strlen(secret), (const uint8_t *)pol->value,
		     pol->value_len, mac, &ml);
		char b64[32];
		EVP_EncodeBlock((uint8_t *)b64, mac, 20);
		return strcmp(b64, q->sig) == 0;
	}
	uint8_t key[32], mac[32];
	sigv4_signing_key(secret, q->scope_date, q->scope_region, "s3", key);
	hash_hmac_sha256(key, 32, pol->value, pol->value_len, mac);
	char hex[65];
	hash_hex(mac, 32, hex);
	return sigv4_equal(hex, q->sig);
}

static void on_cred(struct s3_cred_lookup *l, int rc, const struct s3_cred *cred)
{
	struct post_rq *q = container_of(l, struct post_rq, lookup);
	struct s3_rq *rq = &q->put.rq;
	if (!s3_rq_back(rq))
		return;
	if (rc == -ENOENT) {
		post_fail(q, S3E_InvalidAccessKeyId, NULL);
		return;
	}
	if (rc) {
		post_fail(q, S3E_ServiceUnavailable, NULL);
		return;
	}
	if (!sig_matches(q, cred->secret)) {
		post_fail(q, S3E_SignatureDoesNotMatch, NULL);
		return;
	}
	snprintf(rq->user, sizeof(rq->user), "%s", cred->user);
	s3_principal_init(&rq->who, rq->user, cred->admin);
	if (!s3_rq_set_grants(rq, cred->grants, cred->n_grants)) {
		post_fail(q, S3E_InternalError, NULL);
		return;
	}
	decide(q);
}

/* x-amz-credential "AK/YYYYMMDD/region/s3/aws4_request" into q. */
static bool parse_credential(struct post_rq *q, const struct post_field *cr)
{
	char buf[256];
	if (cr->value_len >= sizeof(buf))
		return false;
	memcpy(buf, cr->value, cr->value_len);
	buf[cr->value_len] = '\0';
	char *parts[5], *save = NULL, *s = buf;
	for (int i = 0; i < 5; i++, s = NULL)
		if (!(parts[i] = strtok_r(s, "/", &save)))
			return false;
	if (strtok_r(NULL, "/", &save) || strlen(parts[1]) != 8 ||
	    strcmp(parts[3], "s3") != 0 || strcmp(parts[4], "aws4_request") != 0 ||
	    strlen(parts[0]) >= sizeof(q->access_key) || strlen(parts[2]) >= sizeof(q->scope_region))
		return false;
	snprintf(q->access_key, sizeof(q->access_key), "%s", parts[0]);
	memcpy(q->scope_date, parts[1], 9);
	snprintf(q->scope_region, sizeof(q->scope_region), "%s", parts[2]);
	return true;
}

/* The signer: the policy's signature checked against the key's secret
 * (looked up), the policy evaluated; then decide. */
static void check_signer(struct post_rq *q)
{
	struct s3_rq *rq = &q->put.rq;
	enum s3_err e;
	const struct post_field *pol = field(q, "policy");
	const struct post_field *sig4 = field(q, "x-amz-signature");
	const struct post_field *sig2 = field(q, "signature");
	const struct post_field *ak2 = field(q, "AWSAccessKeyId");
	if (!pol && !sig4 && !sig2) {
		/* Anonymous: as the request's own authentication says (a signed
		 * POST keeps its signer); the bucket's ACL decides. */
		decide(q);
		return;
	}
	if (!pol) {
		post_fail(q, S3E_InvalidArgument, "Bucket POST must contain a field named 'policy'.  "
			  "If it is specified, please check the order of the fields.");
		return;
	}
	const char *msg;
	e = post_policy_parse(pol->value, pol->value_len, &q->policy, &msg);
	q->has_policy = e == S3E_OK;
	if (e) {
		post_fail(q, e, msg);
		return;
	}
	if (sig4) {
		const struct post_field *alg = field(q, "x-amz-algorithm");
		const struct post_field *cr = field(q, "x-amz-credential");
		const struct post_field *dt = field(q, "x-amz-date");
		if (!alg || !cr || !dt) {
			post_fail(q, S3E_InvalidArgument, !alg ? "Bucket POST must contain a field named 'x-amz-algorithm'."
					  : !cr ? "Bucket POST must contain a field named 'x-amz-credential'."
						: "Bucket POST must contain a field named 'x-amz-date'.");
			return;
		}
		if (alg->value_len != 16 || memcmp(alg->value, "AWS4-HMAC-SHA256", 16) != 0) {
			post_fail(q, S3E_InvalidArgument, "Only AWS4-HMAC-SHA256 is supported for x-amz-algorithm");
			return;
		}
		if (!parse_credential(q, cr)) {
			post_fail(q, S3E_InvalidArgument, "Invalid argument x-amz-credential");
			return;
		}
		snprintf(q->sig, sizeof(q->sig), "%.*s", (int)(sig4->value_len < 79 ? sig4->value_len : 79),
			 sig4->value);
	} else {
		if (!sig2 || !ak2 || ak2->value_len >= sizeof(q->access_key)) {
			post_fail(q, S3E_InvalidArgument, "Bucket POST must contain a field named "
				  "'AWSAccessKeyId' and one named 'signature'.");
			return;
		}
		q->v2 = true;
		snprintf(q->access_key, sizeof(q->access_key), "%.*s", (int)ak2->value_len, ak2->value);
		snprintf(q->sig, sizeof(q->sig), "%.*s", (int)(sig2->value_len < 79 ? sig2->value_len : 79),
			 sig2->value);
	}
	/* The policy before the key's lookup: an expired or violated policy
	 * is refused without a meta read. */
	e = post_policy_check(&q->policy, (int64_t)s3u_wall_ms(), rq->bucket, q->fields,
			      q->n_fields, q->msg, sizeof(q->msg));
	if (e) {
		post_fail(q, e, q->msg);
		return;
	}
	q->lookup.access_key = q->access_key;
	q->lookup.done = on_cred;
	rq->pending++;
	s3_call_cred_lookup(rq->c, &q->lookup);
}

static void open_file(struct post_rq *q)
{
	struct s3_put *p = &q->put;
	p->is_inline = p->size <= p->rq.o->inline_max;
	/* The object's headers: the fields (Content-Type, x-amz-meta-*, acl
	 * as x-amz-acl, ...). */
	for (size_t i = 0; i < q->n_fields; i++) {
		const char *n = q->fields[i].name;
		q->hdrs[i] = (struct sigv4_header){ .name = strcasecmp(n, "acl") == 0 ? "x-amz-acl" : n,
						     .name_len = strcasecmp(n, "acl") == 0 ? 9 : strlen(n),
						     .value = q->fields[i].value,
						     .value_len = q->fields[i].value_len };
	}
	p->form_hdrs = q->hdrs;
	p->n_form_hdrs = q->n_fields;
	enum s3_err e = s3_put_check_headers(&p->rq);
	if (!e)
		e = s3_quota_check(s3_rq_gate_bucket(&p->rq), p->size, 1);
	if (e) {
		post_fail(q, e, NULL);
		return;
	}
	/* The bucket's default encryption (s3_sse.h; a form's own SSE fields
	 * are not read). */
	struct s3_sse_obj so;
	const char *smsg;
	e = s3_sse_for_write(p->rq.c, p->rq.bkt, &so, &smsg);
	int rc = e ? 0 : s3_put_encrypt(p, &so);
	s3_sse_obj_wipe(&so);
	if (e) {
		post_fail(q, e, smsg);
		return;
	}
	if (rc) {
		q->failed = true;
		return;
	}
	if (s3_put_open(p)) {
		q->failed = true;
		return;
	}
	q->opened = true;
	if (q->held_len)
		s3_put_feed(p, q->held, q->held_len);
	free(q->held);
	q->held = NULL;
	q->held_len = q->held_cap = 0;
	if (q->file_ended)
		file_done(q);
	/* s3_put_feed paused the body again if gw_data's window is full. */
	if (!p->spill_len)
		http_resume(s3_call_stream(p->rq.c));
}

/* The bucket first, so that every answer after it, refusals included,
 * carries the bucket's CORS headers (a page can read why it failed). */
static void on_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	struct post_rq *q = post_of(rq);
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e)
		s3_cors_headers(rq->c, b);
	if (!e && !rq->bkt && !(rq->bkt = (Iolake__Meta__Bucket *)s3u_copy_msg(&b->base)))
		e = S3E_InternalError;
	if (e) {
		post_fail(q, e, NULL);
		return;
	}
	check_signer(q);
}

static void authorize(struct post_rq *q)
{
	enum s3_err e = make_key(q);
	if (e) {
		post_fail(q, e, q->msg[0] ? q->msg : NULL);
		return;
	}
	s3_rq_bucket(&q->put.rq, q->put.rq.bucket, on_bucket);
}

/* ------------------------------------------------------------ the answer */

static void url_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;
	for (; *s && n + 4 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    strchr("-_.~", ch)) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
}

static void post_respond(struct s3_put *p)
{
	struct post_rq *q = container_of(p, struct post_rq, put);
	struct s3_call *c = p->rq.c;
	struct http_stream *s = s3_call_stream(c);
	char etag[40], ek[3 * S3_KEY_MAX + 1], eb[3 * S3_BUCKET_MAX + 1], et[128];
	snprintf(etag, sizeof(etag), "\"%s\"", p->etag);
	http_add_header(s, "ETag", etag);
	url_escape(p->rq.key, ek, sizeof(ek));
	url_escape(p->rq.bucket, eb, sizeof(eb));
	const struct http_request *hr = s3_call_http(c);
	char loc[4 * S3_KEY_MAX + 512];
	snprintf(loc, sizeof(loc), "http://%.*s/%s/%s", (int)hr->host_len, hr->host ? hr->host : "",
		 eb, ek);
	const struct post_field *redir = field(q, "success_action_redirect");
	if (!redir || !redir->value_len)
		redir = field(q, "redirect");
	if (redir && redir->value_len) {
		url_escape(etag, et, sizeof(et));
		char *to = malloc(redir->value_len + sizeof(ek) + sizeof(eb) + sizeof(et) + 32);
		if (!to) {
			s3_rq_fail(&p->rq, S3E_InternalError, NULL);
			return;
		}
		sprintf(to, "%.*s%sbucket=%s&key=%s&etag=%s", (int)redir->value_len, redir->value,
			memchr(redir->value, '?', redir->value_len) ? "&" : "?", eb, ek, et);
		http_add_header(s, "Location", to);
		free(to);
		http_respond(s, 303, NULL, 0, NULL, NULL);
		return;
	}
	http_add_header(s, "Location", loc);
	const struct post_field *st = field(q, "success_action_status");
	int status = 204;
	if (st && st->value_len == 3 && memcmp(st->value, "200", 3) == 0)
		status = 200;
	else if (st && st->value_len == 3 && memcmp(st->value, "201", 3) == 0)
		status = 201;
	if (status != 201) {
		http_respond(s, status, NULL, 0, NULL, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open(w, "PostResponse");
	xml_elem(w, "Location", loc);
	xml_elem(w, "Bucket", p->rq.bucket);
	xml_elem(w, "Key", p->rq.key);
	xml_elem(w, "ETag", etag);
	xml_close(w);
	s3_call_send_xml(c, 201);
}

/* ------------------------------------------------------------ the handler */

void s3_post_object(struct s3_call *c)
{
	const struct http_request *hr = s3_call_http(c);
	const struct sigv4_header *ct = s3u_hdr(c, "content-type");
	char boundary[FORM_BOUNDARY_MAX + 1];
	int bl = ct ? form_boundary(ct->value, ct->value_len, boundary) : -EINVAL;
	if (bl < 0) {
		s3_call_error(c, S3E_MalformedPOSTRequest, NULL);
		return;
	}
	if (!hr->has_content_length) {
		s3_call_error(c, S3E_MissingContentLength, NULL);
		return;
	}
	if (hr->content_length > S3_MAX_PUT_BYTES + FORM_FIELDS_MAX + 64 * 1024) {
		s3_call_error(c, S3E_EntityTooLarge, NULL);
		return;
	}
	struct s3_put *p = s3_put_begin(c, sizeof(struct post_rq), false);
	if (!p)
		return;
	struct post_rq *q = container_of(p, struct post_rq, put);
	p->rq.fini = post_fini;
	p->respond = post_respond;
	p->is_inline = false;
	q->body_len = hr->content_length;
	form_init(&q->form, boundary, (size_t)bl, &form_cbs, q);
	enum s3_err e = s3_call_read_body(c, on_body, on_body_end);
	if (e) {
		s3_rq_fail(&p->rq, e, NULL);
		return;
	}
	http_resume(s3_call_stream(c));
}
