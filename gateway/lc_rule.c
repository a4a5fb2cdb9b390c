/*
 * lc_rule.c — lifecycle configurations: parse, check, render, match. See
 * lc_rule.h.
 *
 * The parser is a pass of hooks over xml_doc.h's reader (no DOCTYPE,
 * bounded depth and text): each element is allowed only under the parents S3's schema gives
 * it, each rule is built as its elements end, and the rules are checked
 * once the document is whole (S3's errors need the whole rule: Days and
 * Date together, no action, tags with a marker action). The record is
 * built with malloc throughout, so protobuf-c's free_unpacked frees it.
 *
 * Pure: no I/O, no clock. Owns only what it returns.
 */
#include "gateway/lc_rule.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/xml_doc.h"

#define DEPTH_MAX 8
#define TEXT_MAX 1024          /* a Key, Value, Prefix or number */
#define TAGS_MAX 10            /* tags in one filter (an object has at most 10) */
#define NEWER_MAX 100          /* NewerNoncurrentVersions, as S3 */
#define DAYS_MAX 2147483647u

/* What a rule has seen, to refuse repeats and judge the rule at the end. */
enum {
	F_ID = 1u << 0, F_STATUS = 1u << 1, F_PREFIX = 1u << 2, F_FILTER = 1u << 3,
	F_EXP = 1u << 4, F_NC = 1u << 5, F_ABORT = 1u << 6, F_DAYS = 1u << 7,
	F_DATE = 1u << 8, F_EODM = 1u << 9, F_NCDAYS = 1u << 10, F_NEWER = 1u << 11,
	F_AIDAYS = 1u << 12, F_AND = 1u << 13, F_FPREFIX = 1u << 14, F_GT = 1u << 15,
	F_LT = 1u << 16,
};

struct lp {
	struct xml_doc d;
	enum s3_err e;
	const char *msg;
	Iolake__Meta__LifecycleConfig *cfg;
	Iolake__Meta__LifecycleRule *r;       /* the rule being read */
	Iolake__Meta__LifecycleTag *tag;      /* the tag being read */
	bool tag_key, tag_value;
	uint32_t seen;                        /* F_* of r */
	unsigned filter_conds;                /* conditions directly under Filter */
	bool status_enabled, eodm;
	bool bad_status;
};

static void fail(struct lp *l, enum s3_err e, const char *msg)
{
	if (l->e == S3E_OK) {
		l->e = e;
		l->msg = msg;
	}
	xml_doc_stop(&l->d, -EBADMSG);
}

static char *dup_text(const char *s)
{
	return strdup(s);
}

/* "Prefix" under parent? */
static bool is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static const char *parent(const struct lp *l)
{
	return xml_doc_parent(&l->d);
}

/* Elements allowed under each parent. */
static bool allowed(const char *par, const char *name, int depth)
{
	static const char *const rule_kids[] = { "ID", "Status", "Prefix", "Filter", "Expiration",
						 "NoncurrentVersionExpiration",
						 "AbortIncompleteMultipartUpload", NULL };
	static const char *const filter_kids[] = { "Prefix", "Tag", "ObjectSizeGreaterThan",
						   "ObjectSizeLessThan", "And", NULL };
	static const char *const and_kids[] = { "Prefix", "Tag", "ObjectSizeGreaterThan",
						"ObjectSizeLessThan", NULL };
	static const char *const tag_kids[] = { "Key", "Value", NULL };
	static const char *const exp_kids[] = { "Days", "Date", "ExpiredObjectDeleteMarker", NULL };
	static const char *const nc_kids[] = { "NoncurrentDays", "NewerNoncurrentVersions", NULL };
	static const char *const ab_kids[] = { "DaysAfterInitiation", NULL };
	const char *const *kids = NULL;
	if (depth == 1)
		return is(name, "LifecycleConfiguration");
	if (depth == 2)
		return is(par, "LifecycleConfiguration") && is(name, "Rule");
	if (is(par, "Rule") && depth == 3)
		kids = rule_kids;
	else if (is(par, "Filter") && depth == 4)
		kids = filter_kids;
	else if (is(par, "And") && depth == 5)
		kids = and_kids;
	else if (is(par, "Tag") && (depth == 5 || depth == 6))
		kids = tag_kids;
	else if (is(par, "Expiration") && depth == 4)
		kids = exp_kids;
	else if (is(par, "NoncurrentVersionExpiration") && depth == 4)
		kids = nc_kids;
	else if (is(par, "AbortIncompleteMultipartUpload") && depth == 4)
		kids = ab_kids;
	for (size_t i = 0; kids && kids[i]; i++)
		if (is(name, kids[i]))
			return true;
	return false;
}

/* A repeated element of the rule: MalformedXML. */
static bool once(struct lp *l, uint32_t f)
{
	if (l->seen & f) {
		fail(l, S3E_MalformedXML, NULL);
		return false;
	}
	l->seen |= f;
	return true;
}

static void on_start(struct xml_doc *d)
{
	struct lp *l = d->ud;
	if (l->e)
		return;
	const char *name = xml_doc_name(d), *par = parent(l);
	if (d->depth == 3 && is(par, "Rule") &&
	    (is(name, "Transition") || is(name, "NoncurrentVersionTransition"))) {
		fail(l, S3E_NotImplemented,
		     "Transitions are not supported: this store has one storage class");
		return;
	}
	if (!allowed(par, name, d->depth)) {
		fail(l, S3E_MalformedXML, NULL);
		return;
	}
	if (d->depth == 2) {
		Iolake__Meta__LifecycleConfig *c = l->cfg;
		if (c->n_rules == LC_RULES_MAX) {
			fail(l, S3E_MalformedXML, "A lifecycle configuration has at most 1000 rules");
			return;
		}
		Iolake__Meta__LifecycleRule **nr = realloc(c->rules, (c->n_rules + 1) * sizeof(*nr));
		Iolake__Meta__LifecycleRule *r = malloc(sizeof(*r));
		if (nr)
			c->rules = nr;
		if (!nr || !r) {
			free(r);
			fail(l, S3E_InternalError, NULL);
			return;
		}
		iolake__meta__lifecycle_rule__init(r);
		c->rules[c->n_rules++] = r;
		l->r = r;
		l->seen = 0;
		l->filter_conds = 0;
		l->eodm = false;
		return;
	}
	Iolake__Meta__LifecycleRule *r = l->r;
	bool in_filter = is(par, "Filter"), in_and = is(par, "And");
	if (in_filter && !is(name, "And"))
		l->filter_conds++;
	if (is(name, "Filter"))
		once(l, F_FILTER);
	else if (is(name, "And"))
		once(l, F_AND);
	else if (is(name, "Expiration"))
		once(l, F_EXP);
	else if (is(name, "NoncurrentVersionExpiration"))
		once(l, F_NC);
	else if (is(name, "AbortIncompleteMultipartUpload"))
		once(l, F_ABORT);
	else if (is(name, "Tag") && (in_filter || in_and)) {
		if (r->n_tags == TAGS_MAX) {
			fail(l, S3E_InvalidRequest, "A lifecycle filter has at most 10 tags");
			return;
		}
		Iolake__Meta__LifecycleTag **nt = realloc(r->tags, (r->n_tags + 1) * sizeof(*nt));
		Iolake__Meta__LifecycleTag *t = malloc(sizeof(*t));
		if (nt)
			r->tags = nt;
		if (!nt || !t) {
			free(t);
			fail(l, S3E_InternalError, NULL);
			return;
		}
		iolake__meta__lifecycle_tag__init(t);
		r->tags[r->n_tags++] = t;
		l->tag = t;
		l->tag_key = l->tag_value = false;
	}
}

/* A decimal integer 0..max, nothing else; -1 when not one. */
static long long num(const char *s, unsigned long long max)
{
	if (!*s)
		return -1;
	unsigned long long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > max)
			return -1;
	}
	return (long long)v;
}

/* ISO 8601 "YYYY-MM-DD", "YYYY-MM-DDT00:00:00[.000](Z|+00:00)" -> ms;
 * -1: not a date; -2: a date not at midnight UTC. */
static long long iso_ms(const char *s)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		return -1;
	const char *p = s + 10;
	if (*p == 'T') {
		int m = 0;
		if (sscanf(p, "T%2d:%2d:%2d%n", &h, &mi, &sec, &m) != 3 || m != 9)
			return -1;
		p += m;
		if (*p == '.') {
			p++;
			if (*p < '0' || *p > '9')
				return -1;
			while (*p >= '0' && *p <= '9') {
				if (*p != '0')
					return -2;
				p++;
			}
		}
		if (!strcmp(p, "Z") || !strcmp(p, "+00:00"))
			p += strlen(p);
	}
	if (*p)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
		return -1;
	if (h || mi || sec)
		return -2;
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d };
	time_t t = timegm(&tm);
	if (t < 0)
		return -1;
	return (long long)t * 1000;
}

static void set_str(struct lp *l, char **dst, const char *v)
{
	char *s = dup_text(v);
	if (!s) {
		fail(l, S3E_InternalError, NULL);
		return;
	}
	if (*dst != protobuf_c_empty_string)
		free(*dst);
	*dst = s;
}

/* The end of an element below a Rule: its value into the rule. */
static void end_in_rule(struct lp *l)
{
	const char *name = xml_doc_name(&l->d), *par = parent(l), *t = l->d.text;
	Iolake__Meta__LifecycleRule *r = l->r;
	long long v;
	if (l->d.depth >= 3 && r) {
		if (is(par, "Rule")) {
			if (is(name, "ID") && once(l, F_ID)) {
				if (strlen(t) > LC_ID_MAX)
					fail(l, S3E_InvalidArgument,
					     "ID length should not exceed allowed limit of 255");
				else
					set_str(l, &r->id, t);
			} else if (is(name, "Status") && once(l, F_STATUS)) {
				if (is(t, "Enabled"))
					r->enabled = true;
				else if (!is(t, "Disabled"))
					fail(l, S3E_MalformedXML, NULL);
			} else if (is(name, "Prefix") && once(l, F_PREFIX)) {
				set_str(l, &r->prefix, t);
			}
		} else if (is(par, "Filter") || is(par, "And")) {
			if (is(name, "Prefix") && once(l, F_FPREFIX)) {
				set_str(l, &r->prefix, t);
			} else if (is(name, "ObjectSizeGreaterThan") && once(l, F_GT)) {
				if ((v = num(t, UINT64_MAX >> 1)) < 0)
					fail(l, S3E_InvalidArgument,
					     "ObjectSizeGreaterThan must be a non-negative integer");
				r->has_size_gt = true;
				r->size_gt = (uint64_t)(v < 0 ? 0 : v);
			} else if (is(name, "ObjectSizeLessThan") && once(l, F_LT)) {
				if ((v = num(t, UINT64_MAX >> 1)) <= 0)
					fail(l, S3E_InvalidArgument,
					     "ObjectSizeLessThan must be a positive integer");
				r->has_size_lt = true;
				r->size_lt = (uint64_t)(v < 0 ? 0 : v);
			} else if (is(name, "Tag")) {
				if (!l->tag_key || !l->tag->key[0])
					fail(l, S3E_MalformedXML, NULL);
				l->tag = NULL;
			}
		} else if (is(par, "Tag") && l->tag) {
			bool *seen = is(name, "Key") ? &l->tag_key : &l->tag_value;
			if (*seen)
				fail(l, S3E_MalformedXML, NULL);
			*seen = true;
			set_str(l, is(name, "Key") ? &l->tag->key : &l->tag->value, t);
		} else if (is(par, "Expiration")) {
			if (is(name, "Days") && once(l, F_DAYS)) {
				if ((v = num(t, DAYS_MAX)) <= 0)
					fail(l, S3E_InvalidArgument,
					     "'Days' for Expiration action must be a positive integer");
				r->exp_days = (uint32_t)(v < 0 ? 0 : v);
			} else if (is(name, "Date") && once(l, F_DATE)) {
				v = iso_ms(t);
				if (v == -2)
					fail(l, S3E_InvalidArgument, "'Date' must be at midnight GMT");
				else if (v < 0)
					fail(l, S3E_InvalidArgument, "Invalid date: not ISO 8601");
				r->exp_date_ms = (uint64_t)(v < 0 ? 0 : v);
			} else if (is(name, "ExpiredObjectDeleteMarker") && once(l, F_EODM)) {
				if (is(t, "true"))
					r->exp_delete_marker = true;
				else if (!is(t, "false"))
					fail(l, S3E_MalformedXML, NULL);
			}
		} else if (is(par, "NoncurrentVersionExpiration")) {
			if (is(name, "NoncurrentDays") && once(l, F_NCDAYS)) {
				if ((v = num(t, DAYS_MAX)) <= 0)
					fail(l, S3E_InvalidArgument,
					     "'NoncurrentDays' for NoncurrentVersionExpiration action "
					     "must be a positive integer");
				r->noncurrent_days = (uint32_t)(v < 0 ? 0 : v);
			} else if (is(name, "NewerNoncurrentVersions") && once(l, F_NEWER)) {
				if ((v = num(t, NEWER_MAX)) <= 0)
					fail(l, S3E_InvalidArgument,
					     "NewerNoncurrentVersions must be between 1 and 100");
				r->newer_noncurrent = (uint32_t)(v < 0 ? 0 : v);
			}
		} else if (is(par, "AbortIncompleteMultipartUpload")) {
			if (is(name, "DaysAfterInitiation") && once(l, F_AIDAYS)) {
				if ((v = num(t, DAYS_MAX)) <= 0)
					fail(l, S3E_InvalidArgument,
					     "'DaysAfterInitiation' for AbortIncompleteMultipartUpload "
					     "action must be a positive integer");
				r->abort_days = (uint32_t)(v < 0 ? 0 : v);
			}
		}
	}
}

/* ------------------------------------------------------------ whole rules */

/* The checks that need a whole rule (l->seen is per rule, so they run as
 * each rule ends: see on_rule_end). */
static void check_rule(struct lp *l, Iolake__Meta__LifecycleRule *r, uint32_t seen,
		       unsigned filter_conds)
{
	if (!(seen & F_STATUS) || ((seen & F_PREFIX) && (seen & F_FILTER)) ||
	    !(seen & (F_PREFIX | F_FILTER))) {
		fail(l, S3E_MalformedXML, NULL);
		return;
	}
	/* Under Filter: one condition, or one And holding them. */
	if ((seen & F_AND) ? filter_conds != 0 : filter_conds > 1) {
		fail(l, S3E_MalformedXML, NULL);
		return;
	}
	r->filter_form = (seen & F_PREFIX) ? 0 : (seen & F_AND) ? 2 : 1;
	if (!(seen & (F_EXP | F_NC | F_ABORT))) {
		fail(l, S3E_InvalidRequest, "At least one action needs to be specified in a rule");
		return;
	}
	if (seen & F_EXP) {
		unsigned n = !!(seen & F_DAYS) + !!(seen & F_DATE) + !!(seen & F_EODM);
		if (n != 1) {
			fail(l, S3E_MalformedXML, NULL);
			return;
		}
		if (r->exp_delete_marker && r->n_tags) {
			fail(l, S3E_InvalidRequest,
			     "ExpiredObjectDeleteMarker cannot be specified with a tag filter");
			return;
		}
	}
	if ((seen & F_NC) && !(seen & F_NCDAYS)) {
		fail(l, S3E_MalformedXML, NULL);
		return;
	}
	r->has_noncurrent = (seen & F_NC) != 0;
	if (seen & F_ABORT) {
		if (!(seen & F_AIDAYS)) {
			fail(l, S3E_MalformedXML, NULL);
			return;
		}
		if (r->n_tags || r->has_size_gt || r->has_size_lt) {
			fail(l, S3E_InvalidRequest,
			     "AbortIncompleteMultipartUpload cannot be specified with Tags or "
			     "object size filters");
			return;
		}
	}
	if (r->has_size_gt && r->has_size_lt && r->size_gt >= r->size_lt) {
		fail(l, S3E_InvalidArgument,
		     "ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
		return;
	}
	for (size_t i = 0; i < r->n_tags; i++)
		for (size_t j = 0; j < i; j++)
			if (is(r->tags[i]->key, r->tags[j]->key)) {
				fail(l, S3E_InvalidRequest, "Duplicate Tag Keys are not allowed");
				return;
			}
}

static void on_end(struct xml_doc *d)
{
	struct lp *l = d->ud;
	if (l->e)
		return;
	if (d->depth != 2) {
		end_in_rule(l);
	} else if (l->r) {
		check_rule(l, l->r, l->seen, l->filter_conds);
		l->r = NULL;
	}
}

enum s3_err lc_parse(const char *body, size_t len, Iolake__Meta__LifecycleConfig **out,
		     const char **msg, char *msgbuf, size_t msgcap)
{
	*out = NULL;
	*msg = NULL;
	if (len > LC_BODY_MAX)
		return S3E_MalformedXML;
	struct lp *l = calloc(1, sizeof(*l));
	Iolake__Meta__LifecycleConfig *c = malloc(sizeof(*c));
	if (!l || !c) {
		free(l);
		free(c);
		return S3E_InternalError;
	}
	iolake__meta__lifecycle_config__init(c);
	l->cfg = c;
	l->d = (struct xml_doc){ .max_depth = DEPTH_MAX, .text_max = TEXT_MAX,
				 .on_start = on_start, .on_end = on_end, .ud = l };
	int rc = xml_doc_parse(&l->d, body, len, LC_BODY_MAX);
	if (rc && !l->e)
		l->e = rc == -ENOMEM ? S3E_InternalError : S3E_MalformedXML;
	if (!l->e && !c->n_rules)
		fail(l, S3E_MalformedXML, NULL);
	/* IDs: S3 makes one up for a rule without; unique. */
	for (size_t i = 0; !l->e && i < c->n_rules; i++) {
		Iolake__Meta__LifecycleRule *r = c->rules[i];
		if (!r->id[0]) {
			char id[32];
			snprintf(id, sizeof(id), "rule-%zu", i + 1);
			set_str(l, &r->id, id);
		}
	}
	for (size_t i = 0; !l->e && i < c->n_rules; i++)
		for (size_t j = 0; j < i; j++)
			if (is(c->rules[i]->id, c->rules[j]->id)) {
				if (msgbuf && msgcap)
					snprintf(msgbuf, msgcap,
						 "Rule ID must be unique. Found same ID for more than "
						 "one rule: %.255s", c->rules[i]->id);
				fail(l, S3E_InvalidArgument, msgbuf && msgcap ? msgbuf : NULL);
				break;
			}
	enum s3_err e = l->e;
	*msg = l->msg;
	free(l);
	if (e) {
		lc_config_free(c);
		return e;
	}
	*out = c;
	return S3E_OK;
}

void lc_config_free(Iolake__Meta__LifecycleConfig *c)
{
	if (c)
		protobuf_c_message_free_unpacked(&c->base, NULL);
}

/* ------------------------------------------------------------ render */

static void render_conds(struct xml_w *w, const Iolake__Meta__LifecycleRule *r, bool prefix)
{
	if (prefix)
		xml_elem(w, "Prefix", r->prefix);
	for (size_t i = 0; i < r->n_tags; i++) {
		xml_open(w, "Tag");
		xml_elem(w, "Key", r->tags[i]->key);
		xml_elem(w, "Value", r->tags[i]->value);
		xml_close(w);
	}
	if (r->has_size_gt)
		xml_elem_u64(w, "ObjectSizeGreaterThan", r->size_gt);
	if (r->has_size_lt)
		xml_elem_u64(w, "ObjectSizeLessThan", r->size_lt);
}

void lc_render(struct xml_w *w, const Iolake__Meta__LifecycleConfig *c)
{
	xml_decl(w);
	xml_open_ns(w, "LifecycleConfiguration", "http://s3.amazonaws.com/doc/2006-03-01/");
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__LifecycleRule *r = c->rules[i];
		xml_open(w, "Rule");
		xml_elem(w, "ID", r->id);
		if (r->filter_form == 0) {
			xml_elem(w, "Prefix", r->prefix);
		} else {
			xml_open(w, "Filter");
			if (r->filter_form == 2) {
				xml_open(w, "And");
				render_conds(w, r, r->prefix[0] != 0);
				xml_close(w);
			} else {
				unsigned n = !!r->n_tags + r->has_size_gt + r->has_size_lt;
				render_conds(w, r, r->prefix[0] || !n);
			}
			xml_close(w);
		}
		xml_elem(w, "Status", r->enabled ? "Enabled" : "Disabled");
		if (r->exp_days || r->exp_date_ms || r->exp_delete_marker) {
			xml_open(w, "Expiration");
			if (r->exp_days)
				xml_elem_u64(w, "Days", r->exp_days);
			if (r->exp_date_ms) {
				char d[40];
				time_t t = (time_t)(r->exp_date_ms / 1000);
				struct tm tm;
				gmtime_r(&t, &tm);
				strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
				xml_elem(w, "Date", d);
			}
			if (r->exp_delete_marker)
				xml_elem(w, "ExpiredObjectDeleteMarker", "true");
			xml_close(w);
		}
		if (r->has_noncurrent) {
			xml_open(w, "NoncurrentVersionExpiration");
			xml_elem_u64(w, "NoncurrentDays", r->noncurrent_days);
			if (r->newer_noncurrent)
				xml_elem_u64(w, "NewerNoncurrentVersions", r->newer_noncurrent);
			xml_close(w);
		}
		if (r->abort_days) {
			xml_open(w, "AbortIncompleteMultipartUpload");
			xml_elem_u64(w, "DaysAfterInitiation", r->abort_days);
			xml_close(w);
		}
		xml_close(w);
	}
	xml_close(w);
}

/* ------------------------------------------------------------ matching */

bool lc_rule_matches(const Iolake__Meta__LifecycleRule *r, const struct lc_obj *o)
{
	if (!r->enabled)
		return false;
	size_t pl = strlen(r->prefix);
	if (pl && strncmp(o->key, r->prefix, pl) != 0)
		return false;
	if (r->has_size_gt && !(o->size > r->size_gt))
		return false;
	if (r->has_size_lt && !(o->size < r->size_lt))
		return false;
	for (size_t i = 0; i < r->n_tags; i++) {
		bool hit = false;
		for (size_t j = 0; j < o->n_tags && !hit; j++)
			hit = is(o->tags[j]->key, r->tags[i]->key) &&
			      is(o->tags[j]->value, r->tags[i]->value);
		if (!hit)
			return false;
	}
	return true;
}

uint64_t lc_due_ms(uint64_t from_ms, uint32_t days, uint64_t day_ms)
{
	if (!day_ms)
		day_ms = LC_DAY_MS;
	uint64_t t = from_ms + (uint64_t)days * day_ms;
	return (t + day_ms - 1) / day_ms * day_ms;
}

uint64_t lc_current_expiry(const Iolake__Meta__LifecycleConfig *c, const struct lc_obj *o,
			   uint64_t mtime_ms, uint64_t day_ms,
			   const Iolake__Meta__LifecycleRule **rule)
{
	uint64_t best = 0;
	if (rule)
		*rule = NULL;
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__LifecycleRule *r = c->rules[i];
		if ((!r->exp_days && !r->exp_date_ms) || !lc_rule_matches(r, o))
			continue;
		uint64_t due = r->exp_days ? lc_due_ms(mtime_ms, r->exp_days, day_ms) : r->exp_date_ms;
		if (!best || due < best) {
			best = due;
			if (rule)
				*rule = r;
		}
	}
	return best;
}

bool lc_noncurrent_due(const Iolake__Meta__LifecycleConfig *c, const struct lc_obj *o,
		       uint64_t since_ms, uint32_t nth, uint64_t now_ms, uint64_t day_ms)
{
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__LifecycleRule *r = c->rules[i];
		if (!r->has_noncurrent || nth <= r->newer_noncurrent || !lc_rule_matches(r, o))
			continue;
		if (now_ms >= lc_due_ms(since_ms, r->noncurrent_days, day_ms))
			return true;
	}
	return false;
}

bool lc_marker_due(const Iolake__Meta__LifecycleConfig *c, const char *key, uint64_t mtime_ms,
		   uint64_t now_ms, uint64_t day_ms)
{
	struct lc_obj o = { .key = key };
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__LifecycleRule *r = c->rules[i];
		if (!lc_rule_matches(r, &o))
			continue;
		if (r->exp_delete_marker)
			return true;
		if (r->exp_days && now_ms >= lc_due_ms(mtime_ms, r->exp_days, day_ms))
			return true;
	}
	return false;
}

bool lc_upload_due(const Iolake__Meta__LifecycleConfig *c, const char *key, uint64_t init_ms,
		   uint64_t now_ms, uint64_t day_ms)
{
	struct lc_obj o = { .key = key };
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__LifecycleRule *r = c->rules[i];
		if (r->abort_days && lc_rule_matches(r, &o) &&
		    now_ms >= lc_due_ms(init_ms, r->abort_days, day_ms))
			return true;
	}
	return false;
}

size_t lc_expiration_header(uint64_t due_ms, const char *rule_id, char *out, size_t cap)
{
	char d[40];
	time_t t = (time_t)(due_ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(d, sizeof(d), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	int n = snprintf(out, cap, "expiry-date=\"%s\", rule-id=\"", d);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	size_t o = (size_t)n;
	for (const char *p = rule_id; *p; p++) {
		/* a quoted-string: escape '"' and '\\'; control characters dropped */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			continue;
		if (*p == '"' || *p == '\\') {
			if (o + 1 >= cap)
				return 0;
			out[o++] = '\\';
		}
		if (o + 1 >= cap)
			return 0;
		out[o++] = *p;
	}
	if (o + 2 > cap)
		return 0;
	out[o++] = '"';
	out[o] = '\0';
	return o;
}
