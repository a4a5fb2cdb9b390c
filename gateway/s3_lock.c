/*
 * s3_lock.c — S3 Object Lock in the gateway (issue 17; contracts in
 * s3_lock.h): the bucket's lock configuration, a version's retention and
 * legal hold, the lock headers of writes and reads, and the stamp of the
 * bypass on the ops that could remove a version.
 *
 * What this module does NOT do: refuse a delete or an overwrite. Meta's
 * apply is the one place that decides (meta/state_lock.c), against the
 * version as committed and at the time this module stamps on the op; the
 * gateway only says whether the caller may bypass GOVERNANCE (the
 * header AND s3:BypassGovernanceRetention: admin, bucket owner, a policy
 * Allow or a FULL grant, s3_authz.h). Nor does it decide who may read or
 * change lock settings (the gate, by the handler rows below).
 *
 * Dates: the default retention of a write is counted from the write's
 * time (a multipart object's from CreateMultipartUpload, whose time S3
 * also gives the object); "in the future" is checked on this gateway's
 * clock, the hold in meta on the op's stamped time.
 *
 * Thread: the gateway loop.
 */
#include "gateway/s3_lock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/http.h"
#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_lock_parse.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml.h"

#define DAY_MS (86400ull * 1000)

bool s3_lock_bucket_enabled(const Iolake__Meta__Bucket *b)
{
	return b && b->object_lock && b->object_lock->enabled;
}

/* ------------------------------------------------------------ write headers */

struct lock_hdrs {
	bool any;
	int mode;                 /* -1: absent */
	uint64_t until_ms;        /* 0: absent */
	int hold;                 /* -1 absent, 0 OFF, 1 ON */
};

static bool has_integrity(struct s3_call *c)
{
	if (s3u_hdr(c, "content-md5") || s3u_hdr(c, "x-amz-sdk-checksum-algorithm") ||
	    s3u_hdr(c, "x-amz-trailer"))
		return true;
	const struct http_request *hr = s3_call_http(c);
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		if (h->name_len > 15 && !strncasecmp(h->name, "x-amz-checksum-", 15) &&
		    !(h->name_len == 19 && !strncasecmp(h->name + 15, "mode", 4)) &&
		    !(h->name_len == 24 && !strncasecmp(h->name + 15, "algorithm", 9)) &&
		    !(h->name_len == 19 && !strncasecmp(h->name + 15, "type", 4)))
			return true;
	}
	return false;
}

static enum s3_err read_hdrs(struct s3_rq *rq, struct lock_hdrs *h, const char **msg)
{
	struct s3_call *c = rq->c;
	const struct sigv4_header *m = s3u_hdr(c, "x-amz-object-lock-mode");
	const struct sigv4_header *d = s3u_hdr(c, "x-amz-object-lock-retain-until-date");
	const struct sigv4_header *lh = s3u_hdr(c, "x-amz-object-lock-legal-hold");
	*h = (struct lock_hdrs){ .any = m || d || lh, .mode = -1, .hold = -1 };
	*msg = NULL;
	if (!h->any)
		return S3E_OK;
	if (!s3_lock_bucket_enabled(s3_rq_gate_bucket(rq)))
		return S3E_LockNotEnabled;
	if (!m != !d) {
		*msg = "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied";
		return S3E_InvalidArgument;
	}
	if (m) {
		h->mode = s3_lock_mode_parse(m->value, m->value_len);
		if (h->mode < 0) {
			*msg = "Unknown wormMode directive.";
			return S3E_InvalidArgument;
		}
		if (s3_lock_date_parse(d->value, d->value_len, &h->until_ms)) {
			*msg = "The retain until date must be provided in ISO 8601 format";
			return S3E_InvalidArgument;
		}
		if (h->until_ms <= s3u_wall_ms()) {
			*msg = "The retain until date must be in the future!";
			return S3E_InvalidArgument;
		}
	}
	if (lh) {
		if (lh->value_len == 2 && !memcmp(lh->value, "ON", 2))
			h->hold = 1;
		else if (lh->value_len == 3 && !memcmp(lh->value, "OFF", 3))
			h->hold = 0;
		else {
			*msg = "Legal Hold must be either of 'ON' or 'OFF'";
			return S3E_InvalidArgument;
		}
	}
	return S3E_OK;
}

enum s3_err s3_lock_check_headers(struct s3_rq *rq, bool need_integrity, const char **msg)
{
	struct lock_hdrs h;
	enum s3_err e = read_hdrs(rq, &h, msg);
	if (e == S3E_OK && need_integrity && h.any && !has_integrity(rq->c)) {
		*msg = "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests "
		       "with Object Lock parameters";
		return S3E_InvalidRequest;
	}
	return e;
}

enum s3_err s3_lock_to_record(struct s3_rq *rq, Iolake__Meta__ObjectRecord *rec, uint64_t now_ms,
			      const char **msg)
{
	struct lock_hdrs h;
	rec->lock_mode = IOLAKE__META__LOCK_MODE__LOCK_NONE;
	rec->lock_until_ms = 0;
	rec->legal_hold = false;
	if (!rq->c)
		return S3E_InternalError;
	enum s3_err e = read_hdrs(rq, &h, msg);
	if (e)
		return e;
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	if (h.mode > 0) {
		rec->lock_mode = (Iolake__Meta__LockMode)h.mode;
		rec->lock_until_ms = h.until_ms;
	} else if (s3_lock_bucket_enabled(b) && b->object_lock->default_mode) {
		/* The bucket's default retention, from the write's time. */
		const Iolake__Meta__ObjectLockConfig *cfg = b->object_lock;
		uint64_t days = cfg->default_days ? cfg->default_days : 365ull * cfg->default_years;
		rec->lock_mode = cfg->default_mode;
		rec->lock_until_ms = now_ms + days * DAY_MS;
	}
	rec->legal_hold = h.hold == 1;
	return S3E_OK;
}

/* ------------------------------------------------------------ read headers */

void s3_lock_record_headers(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec)
{
	if (!rq->c || !rec)
		return;
	struct http_stream *s = s3_call_stream(rq->c);
	if (rec->lock_mode) {
		char d[40];
		s3u_iso_date(rec->lock_until_ms, d);
		http_add_header(s, "x-amz-object-lock-mode", s3_lock_mode_name((int)rec->lock_mode));
		http_add_header(s, "x-amz-object-lock-retain-until-date", d);
	}
	if (rec->legal_hold)
		http_add_header(s, "x-amz-object-lock-legal-hold", "ON");
}

/* ------------------------------------------------------------ handlers */

struct lock_rq {
	struct s3_rq rq;
	struct s3_body body;
	/* the parsed document, between the body and the commit */
	struct s3_lock_config cfg;
	int mode;
	uint64_t until_ms;
	bool hold;
};

static struct lock_rq *lock_of(struct s3_rq *rq)
{
	return container_of(rq, struct lock_rq, rq);
}

static void lock_fini(struct s3_rq *rq)
{
	s3_body_free(&lock_of(rq)->body);
}

static struct lock_rq *lock_new(struct s3_call *c)
{
	struct lock_rq *l = s3_rq_new(c, sizeof(*l));
	if (l)
		l->rq.fini = lock_fini;
	return l;
}

static void on_lock_done(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	if (e == S3E_NoSuchKey)
		s3_rq_no_such_key(rq, rq->bucket);
	else if (e)
		s3_rq_fail(rq, e, NULL);
	else
		http_respond(s3_call_stream(rq->c), 200, NULL, 0, NULL, NULL);
}

/* Put* bodies need Content-MD5 or a checksum, as S3. */
static bool missing_integrity(struct s3_rq *rq)
{
	if (has_integrity(rq->c))
		return false;
	s3_rq_fail(rq, S3E_InvalidRequest, "Missing required header for this request: Content-MD5");
	return true;
}

/* ---- Put/GetObjectLockConfiguration */

static void send_config(struct s3_rq *rq, const Iolake__Meta__ObjectLockConfig *cfg)
{
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ObjectLockConfiguration", S3_XMLNS);
	xml_elem(w, "ObjectLockEnabled", "Enabled");
	if (cfg->default_mode) {
		xml_open(w, "Rule");
		xml_open(w, "DefaultRetention");
		xml_elem(w, "Mode", s3_lock_mode_name((int)cfg->default_mode));
		if (cfg->default_days)
			xml_elem_u64(w, "Days", cfg->default_days);
		else
			xml_elem_u64(w, "Years", cfg->default_years);
		xml_close(w);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void on_config_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct lock_rq *l = lock_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	int rc = s3_lock_parse_config((const char *)l->body.buf, l->body.len, S3_LOCK_BODY_MAX,
				      &l->cfg);
	if (rc == -EINVAL) {
		s3_rq_fail(rq, S3E_InvalidArgument,
			   "Default retention period must be a positive integer value");
		return;
	}
	if (rc) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	if (!b || b->versioning != IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED) {
		s3_rq_fail(rq, S3E_InvalidBucketState,
			   "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration");
		return;
	}
	Iolake__Meta__ObjectLockConfig cfg = IOLAKE__META__OBJECT_LOCK_CONFIG__INIT;
	cfg.enabled = true;
	cfg.default_mode = (Iolake__Meta__LockMode)l->cfg.mode;
	cfg.default_days = l->cfg.days;
	cfg.default_years = l->cfg.years;
	Iolake__Meta__SetObjectLockConfig sc = IOLAKE__META__SET_OBJECT_LOCK_CONFIG__INIT;
	sc.name = rq->bucket;
	sc.config = &cfg;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_OBJECT_LOCK_CONFIG;
	op.set_object_lock_config = &sc;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET_LOCK, on_lock_done);
}

static void op_put_lock_config(struct s3_call *c)
{
	struct lock_rq *l = lock_new(c);
	if (!l || missing_integrity(&l->rq))
		return;
	enum s3_err e = s3_body_read(&l->rq, &l->body, S3_LOCK_BODY_MAX, on_config_body);
	if (e)
		s3_rq_fail(&l->rq, e, NULL);
}

static void op_get_lock_config(struct s3_call *c)
{
	struct lock_rq *l = lock_new(c);
	if (!l)
		return;
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(&l->rq);
	if (!s3_lock_bucket_enabled(b)) {
		s3_rq_fail(&l->rq, S3E_ObjectLockConfigurationNotFound, NULL);
		return;
	}
	send_config(&l->rq, b->object_lock);
}

/* ---- Put/GetObjectRetention, Put/GetObjectLegalHold */

static bool lock_bucket_or_fail(struct s3_rq *rq)
{
	if (s3_lock_bucket_enabled(s3_rq_gate_bucket(rq)))
		return true;
	s3_rq_fail(rq, S3E_LockNotEnabled, NULL);
	return false;
}

static void on_version_read(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	if (e == S3E_NoSuchKey) {
		s3u_free_msg(rec);
		s3_rq_no_such_key(rq, rq->bucket);
		return;
	}
	if (e) {
		s3u_free_msg(rec);
		s3_rq_fail(rq, e, NULL);
		return;
	}
	bool retention = s3_call_req(rq->c)->op == S3_OP_GetObjectRetention;
	struct xml_w *w = s3_call_xml(rq->c);
	if (retention) {
		if (!rec->lock_mode) {
			s3u_free_msg(rec);
			s3_rq_fail(rq, S3E_NoSuchObjectLockConfiguration, NULL);
			return;
		}
		char d[40];
		s3u_iso_date(rec->lock_until_ms, d);
		xml_decl(w);
		xml_open_ns(w, "Retention", S3_XMLNS);
		xml_elem(w, "Mode", s3_lock_mode_name((int)rec->lock_mode));
		xml_elem(w, "RetainUntilDate", d);
		xml_close(w);
	} else {
		xml_decl(w);
		xml_open_ns(w, "LegalHold", S3_XMLNS);
		xml_elem(w, "Status", rec->legal_hold ? "ON" : "OFF");
		xml_close(w);
	}
	s3u_free_msg(rec);
	s3_call_send_xml(rq->c, 200);
}

/* The version the request names (?versionId), else the current one. */
static void read_version(struct s3_rq *rq)
{
	bool bad;
	const char *vid = s3_ver_query(rq, &bad);
	if (bad)
		s3_rq_fail(rq, S3E_InvalidVersionId, NULL);
	else if (vid)
		s3_ver_read(rq, vid, on_version_read);
	else
		s3_rq_head(rq, rq->bucket, rq->key, on_version_read);
}

static void op_get_version_lock(struct s3_call *c)
{
	struct lock_rq *l = lock_new(c);
	if (l && lock_bucket_or_fail(&l->rq))
		read_version(&l->rq);
}

static void on_version_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct lock_rq *l = lock_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	bool retention = s3_call_req(rq->c)->op == S3_OP_PutObjectRetention;
	const char *body = (const char *)l->body.buf;
	int rc = retention ? s3_lock_parse_retention(body, l->body.len, S3_LOCK_BODY_MAX, &l->mode,
						     &l->until_ms)
			   : s3_lock_parse_legal_hold(body, l->body.len, S3_LOCK_BODY_MAX, &l->hold);
	if (rc == -EINVAL) {
		s3_rq_fail(rq, S3E_InvalidArgument, NULL);
		return;
	}
	if (rc) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	if (retention && l->mode && l->until_ms <= s3u_wall_ms()) {
		s3_rq_fail(rq, S3E_InvalidArgument, "The retain until date must be in the future!");
		return;
	}
	bool bad;
	const char *vid = s3_ver_query(rq, &bad);
	if (bad) {
		s3_rq_fail(rq, S3E_InvalidVersionId, NULL);
		return;
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.version_id = (char *)(vid ? vid : "");
	Iolake__Meta__SetObjectRetention sr = IOLAKE__META__SET_OBJECT_RETENTION__INIT;
	Iolake__Meta__SetObjectLegalHold sh = IOLAKE__META__SET_OBJECT_LEGAL_HOLD__INIT;
	if (retention) {
		sr.bucket = rq->bucket;
		sr.key = rq->key;
		sr.mode = (Iolake__Meta__LockMode)l->mode;
		sr.until_ms = l->until_ms;
		op.body_case = IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION;
		op.set_object_retention = &sr;
	} else {
		sh.bucket = rq->bucket;
		sh.key = rq->key;
		sh.on = l->hold;
		op.body_case = IOLAKE__META__OP__BODY_SET_OBJECT_LEGAL_HOLD;
		op.set_object_legal_hold = &sh;
	}
	/* s3_rq_submit stamps the time and the bypass (s3_lock_stamp) */
	s3_rq_submit(rq, &op, S3_SUBJ_OBJECT_TAGS, on_lock_done);
}

static void op_put_version_lock(struct s3_call *c)
{
	struct lock_rq *l = lock_new(c);
	if (!l || !lock_bucket_or_fail(&l->rq) || missing_integrity(&l->rq))
		return;
	enum s3_err e = s3_body_read(&l->rq, &l->body, S3_LOCK_BODY_MAX, on_version_body);
	if (e)
		s3_rq_fail(&l->rq, e, NULL);
}

const struct s3_handler s3_lock_handlers[] = {
	{ S3_OP_PutObjectLockConfiguration, op_put_lock_config, S3_ACT_PutBucketObjectLockConfiguration },
	{ S3_OP_GetObjectLockConfiguration, op_get_lock_config, S3_ACT_GetBucketObjectLockConfiguration },
	{ S3_OP_PutObjectRetention, op_put_version_lock, S3_ACT_PutObjectRetention },
	{ S3_OP_GetObjectRetention, op_get_version_lock, S3_ACT_GetObjectRetention },
	{ S3_OP_PutObjectLegalHold, op_put_version_lock, S3_ACT_PutObjectLegalHold },
	{ S3_OP_GetObjectLegalHold, op_get_version_lock, S3_ACT_GetObjectLegalHold },
	S3_HANDLERS_END,
};
