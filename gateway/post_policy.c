/*
 * post_policy.c — S3 POST policy documents. See post_policy.h.
 */
#include "gateway/post_policy.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/json.h"

void post_policy_free(struct post_policy *p)
{
	json_free(p->doc);
	free(p->json);
	memset(p, 0, sizeof(*p));
}

static int digits(const char *s, size_t n, int *out)
{
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int post_policy_parse_time(const char *s, size_t n, int64_t *ms)
{
	/* YYYY-MM-DDTHH:MM:SS[.fff]Z */
	int Y, M, D, h, m, sec, frac = 0;
	if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
	    s[n - 1] != 'Z' || digits(s, 4, &Y) || digits(s + 5, 2, &M) || digits(s + 8, 2, &D) ||
	    digits(s + 11, 2, &h) || digits(s + 14, 2, &m) || digits(s + 17, 2, &sec))
		return -EINVAL;
	if (n > 20) {
		size_t fl = n - 21;
		if (s[19] != '.' || fl == 0 || fl > 9 || digits(s + 20, fl, &frac))
			return -EINVAL;
		while (fl > 3)
			frac /= 10, fl--;
		while (fl < 3)
			frac *= 10, fl++;
	}
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return -EINVAL;
	struct tm tm = { .tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h,
			 .tm_min = m, .tm_sec = sec };
	*ms = (int64_t)timegm(&tm) * 1000 + frac;
	return 0;
}

/* One array condition. */
static int array_cond(const struct json_value *a, struct post_cond *c, const char **msg)
{
	const struct json_value *op = a->u.list.first;
	if (a->u.list.n != 3 || op->type != JSON_STRING) {
		*msg = "Invalid Policy: Invalid Condition.";
		return -EBADMSG;
	}
	const struct json_value *x = op->next, *y = x->next;
	if (strcasecmp(op->u.str.s, "content-length-range") == 0) {
		if (x->type != JSON_NUMBER || !x->u.num.is_int || y->type != JSON_NUMBER ||
		    !y->u.num.is_int || x->u.num.i < 0 || y->u.num.i < x->u.num.i) {
			*msg = "Invalid Policy: Invalid content-length-range.";
			return -EBADMSG;
		}
		c->op = POST_RANGE;
		c->min = x->u.num.i;
		c->max = y->u.num.i;
		return 0;
	}
	if (strcasecmp(op->u.str.s, "eq") == 0)
		c->op = POST_EQ;
	else if (strcasecmp(op->u.str.s, "starts-with") == 0)
		c->op = POST_STARTS_WITH;
	else {
		*msg = "Invalid Policy: Invalid Condition.";
		return -EBADMSG;
	}
	if (x->type != JSON_STRING || x->u.str.s[0] != '$' || y->type != JSON_STRING) {
		*msg = "Invalid Policy: Invalid Condition.";
		return -EBADMSG;
	}
	c->field = x->u.str.s + 1;
	c->value = y->u.str.s;
	c->value_len = y->u.str.len;
	return 0;
}

enum s3_err post_policy_parse(const char *b64, size_t len, struct post_policy *p, const char **msg)
{
	memset(p, 0, sizeof(*p));
	*msg = "Invalid Policy: Invalid 'Base64' encoding.";
	if (len == 0 || len > POST_POLICY_MAX || len % 4)
		return S3E_InvalidPolicyDocument;
	if (!(p->json = malloc(len / 4 * 3 + 1)))
		return S3E_InternalError;
	int n = EVP_DecodeBlock((unsigned char *)p->json, (const unsigned char *)b64, (int)len);
	if (n < 0)
		return S3E_InvalidPolicyDocument;
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	for (size_t i = len; i > 0 && b64[i - 1] == '='; i--)
		n--;
	if (n < 0)
		return S3E_InvalidPolicyDocument;
	struct json_limits lim = { .max_bytes = POST_POLICY_MAX, .max_depth = 4,
				   .max_members = 256 };
	*msg = "Invalid Policy: Invalid JSON.";
	if (json_parse(p->json, (size_t)n, &lim, &p->doc, NULL))
		return S3E_InvalidPolicyDocument;
	const struct json_value *root = json_root(p->doc);
	if (root->type != JSON_OBJECT)
		return S3E_InvalidPolicyDocument;
	const struct json_value *exp = json_get(root, "expiration");
	*msg = "Invalid Policy: Policy missing expiration.";
	if (!exp)
		return S3E_InvalidPolicyDocument;
	*msg = "Invalid Policy: Invalid 'expiration' value: must be an ISO 8601 date.";
	if (exp->type != JSON_STRING ||
	    post_policy_parse_time(exp->u.str.s, exp->u.str.len, &p->expiration_ms))
		return S3E_InvalidPolicyDocument;
	const struct json_value *conds = json_get(root, "conditions");
	*msg = "Invalid Policy: Policy missing conditions.";
	if (!conds)
		return S3E_InvalidPolicyDocument;
	*msg = "Invalid Policy: Invalid conditions.";
	if (conds->type != JSON_ARRAY || conds->u.list.n > POST_POLICY_CONDS_MAX)
		return S3E_InvalidPolicyDocument;
	for (const struct json_value *c = conds->u.list.first; c; c = c->next) {
		struct post_cond *pc = &p->conds[p->n_conds];
		if (c->type == JSON_OBJECT) {
			const struct json_value *m = c->u.list.first;
			*msg = "Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have "
			       "exactly one property specified.";
			if (c->u.list.n != 1 || m->type != JSON_STRING)
				return S3E_InvalidPolicyDocument;
			pc->op = POST_EQ;
			pc->field = m->key;
			pc->value = m->u.str.s;
			pc->value_len = m->u.str.len;
		} else if (c->type == JSON_ARRAY) {
			if (array_cond(c, pc, msg))
				return S3E_InvalidPolicyDocument;
		} else {
			*msg = "Invalid Policy: Invalid Condition.";
			return S3E_InvalidPolicyDocument;
		}
		if (pc->op == POST_RANGE) {
			p->has_range = true;
			p->range_min = pc->min;
			p->range_max = pc->max;
		}
		p->n_conds++;
	}
	*msg = NULL;
	return S3E_OK;
}

static const struct post_field *field_of(const struct post_field *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(f[i].name, name) == 0)
			return &f[i];
	return NULL;
}

/* Fields no condition needs to name (AWS: the signature, the file, the
 * policy itself, x-ignore-*; SigV2's key id). */
static bool exempt(const char *name)
{
	static const char *const names[] = { "x-amz-signature", "signature", "awsaccesskeyid",
					     "file", "policy" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(name, names[i]) == 0)
			return true;
	return strncasecmp(name, "x-ignore-", 9) == 0;
}

enum s3_err post_policy_check(const struct post_policy *p, int64_t now_ms, const char *bucket,
			      const struct post_field *f, size_t n, char *msg, size_t cap)
{
	if (now_ms >= p->expiration_ms) {
		snprintf(msg, cap, "Invalid according to Policy: Policy expired.");
		return S3E_AccessDenied;
	}
	for (size_t i = 0; i < p->n_conds; i++) {
		const struct post_cond *c = &p->conds[i];
		if (c->op == POST_RANGE)
			continue;
		const char *v;
		size_t vl;
		if (strcasecmp(c->field, "bucket") == 0) {
			v = bucket;
			vl = strlen(bucket);
		} else {
			const struct post_field *pf = field_of(f, n, c->field);
			v = pf ? pf->value : NULL;
			vl = pf ? pf->value_len : 0;
		}
		bool ok = v && (c->op == POST_EQ ? vl == c->value_len && memcmp(v, c->value, vl) == 0
						 : vl >= c->value_len &&
							   memcmp(v, c->value, c->value_len) == 0);
		if (!ok) {
			snprintf(msg, cap, "Invalid according to Policy: Policy Condition failed: "
				 "[\"%s\", \"$%.64s\", \"%.128s\"]",
				 c->op == POST_EQ ? "eq" : "starts-with", c->field, c->value);
			return S3E_AccessDenied;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (exempt(f[i].name))
			continue;
		bool named = false;
		for (size_t k = 0; k < p->n_conds && !named; k++)
			named = p->conds[k].field && strcasecmp(p->conds[k].field, f[i].name) == 0;
		if (!named) {
			snprintf(msg, cap, "Invalid according to Policy: Extra input fields: %.128s",
				 f[i].name);
			return S3E_AccessDenied;
		}
	}
	return S3E_OK;
}

enum s3_err post_policy_check_size(const struct post_policy *p, uint64_t size)
{
	if (!p->has_range)
		return S3E_OK;
	if (size > (uint64_t)p->range_max)
		return S3E_EntityTooLarge;
	if (size < (uint64_t)p->range_min)
		return S3E_EntityTooSmall;
	return S3E_OK;
}
