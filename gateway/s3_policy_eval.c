/*
 * s3_policy_eval.c — evaluation of a compiled bucket policy against one
 * request, the "is public" rule, and the value parsers (dates, numbers,
 * CIDRs) that parse and evaluation share. See s3_policy.h.
 *
 * Pure: no allocation, no I/O, no global state; everything a call needs
 * is in the policy (immutable) and the request. Work per call is linear
 * in the policy's size times the longest request string (the wildcard
 * matcher is the classic one-star-backtrack algorithm, never recursive,
 * never exponential).
 *
 * AWS's semantics followed here (IAM User Guide, "Policy evaluation
 * logic" and "IAM JSON policy elements: Condition operators"):
 *  - an explicit Deny wins over any Allow; no applicable statement is
 *    an implicit deny, which for a bucket policy means "no opinion"
 *    (S3_POLICY_NONE) so the owner and ACL checks still apply;
 *  - conditions are ANDed across operators and keys, a key's values are
 *    ORed; for a negated operator (StringNotEquals, NotIpAddress...) the
 *    key must match none of the values ("the effective permission works
 *    like a logical AND");
 *  - a key absent from the request makes the condition false, except:
 *    a negated operator is then true, ...IfExists is true, Null tests
 *    presence, ForAllValues is true and ForAnyValue false ("If the key
 *    that you specify in a policy condition is not present in the
 *    request context, the values do not match and the condition is
 *    false. If the policy condition requires that the key is not
 *    matched, such as StringNotLike or ArnNotLike, and the right key is
 *    not present, the condition is true.");
 *  - a policy variable whose key is absent (and has no default) makes the
 *    pattern holding it match nothing.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3_policy_int.h"

/* ---------------------------------------------------------------- matching */

static unsigned char fold_byte(unsigned char c, bool fold)
{
	return fold && c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* The input is two concatenated parts; at() reads byte i of the whole. */
struct two {
	const char *a, *b;
	size_t alen, len;
};

static unsigned char at(const struct two *s, size_t i)
{
	return (unsigned char)(i < s->alen ? s->a[i] : s->b[i - s->alen]);
}

/* One character at i: a UTF-8 lead byte and its continuation bytes. */
static size_t char_len(const struct two *s, size_t i)
{
	size_t n = 1;
	while (i + n < s->len && (at(s, i + n) & 0xC0) == 0x80)
		n++;
	return n;
}

/* Literal text of item k: the item itself or its variable's value. */
static void item_text(const struct pat *p, const struct pat_vals *v, uint32_t k, uint32_t *var,
		      const char **t, size_t *n)
{
	const struct pat_item *it = &p->it[k];
	if (it->kind == PAT_VAR) {
		*t = v->s[*var];
		*n = v->len[*var];
	} else {
		*t = it->s;
		*n = it->len;
	}
}

bool pat_match(const struct pat *p, const struct pat_vals *v, const char *a, size_t alen,
	       const char *b, size_t blen, bool fold)
{
	struct two s = { .a = a, .b = b, .alen = alen, .len = alen + blen };
	/* Position in the pattern: item k, offset o inside a literal; var is
	 * the index of item k's variable among the pattern's variables. */
	uint32_t k = 0, var = 0;
	size_t o = 0, i = 0;
	/* The last star seen, to retry with it eating one more character. */
	bool star = false;
	uint32_t star_k = 0, star_var = 0;
	size_t star_i = 0;
	const char *t;
	size_t tn;

	for (;;) {
		/* Step past finished literals. */
		while (k < p->n && p->it[k].kind != PAT_STAR && p->it[k].kind != PAT_QMARK) {
			item_text(p, v, k, &var, &t, &tn);
			if (o < tn)
				break;
			if (p->it[k].kind == PAT_VAR)
				var++;
			k++;
			o = 0;
		}
		if (i == s.len) {
			/* Only stars and empty variables may remain. */
			while (k < p->n) {
				if (p->it[k].kind == PAT_VAR) {
					item_text(p, v, k, &var, &t, &tn);
					if (tn)
						break;
					var++;
				} else if (p->it[k].kind != PAT_STAR) {
					break;
				}
				k++;
			}
			if (k == p->n)
				return true;
		} else if (k < p->n) {
			uint8_t kind = p->it[k].kind;
			if (kind == PAT_STAR) {
				star = true;
				star_k = ++k;
				star_var = var;
				star_i = i;
				o = 0;
				continue;
			}
			if (kind == PAT_QMARK) {
				i += char_len(&s, i);
				k++;
				o = 0;
				continue;
			}
			item_text(p, v, k, &var, &t, &tn);
			if (fold_byte((unsigned char)t[o], fold) == fold_byte(at(&s, i), fold)) {
				o++;
				i++;
				continue;
			}
		}
		if (!star || star_i == s.len)
			return false;
		star_i += char_len(&s, star_i);
		i = star_i;
		k = star_k;
		var = star_var;
		o = 0;
	}
}

static const struct s3_policy_kv *lookup(const struct s3_policy_req *r, const char *key)
{
	for (size_t i = 0; i < r->n_ctx; i++)
		if (r->ctx[i].key && s3p_key_eq(r->ctx[i].key, key))
			return r->ctx[i].n ? &r->ctx[i] : NULL;
	return NULL;
}

/* Resolves p's variables from the request; false if one cannot be (an
 * absent or multi-valued key without a default). */
static bool resolve(const struct pat *p, const struct s3_policy_req *r, struct pat_vals *v)
{
	uint32_t j = 0;
	for (uint32_t k = 0; k < p->n && j < p->n_vars; k++) {
		const struct pat_item *it = &p->it[k];
		if (it->kind != PAT_VAR)
			continue;
		const struct s3_policy_kv *kv = lookup(r, it->s);
		if (kv && kv->n == 1 && kv->vals[0]) {
			v->s[j] = kv->vals[0];
			v->len[j] = strlen(kv->vals[0]);
		} else if (it->has_dflt) {
			v->s[j] = it->dflt;
			v->len[j] = it->dflt_len;
		} else {
			return false;
		}
		j++;
	}
	return true;
}

static bool pat_match_req(const struct pat *p, const struct s3_policy_req *r, const char *a,
			  size_t alen, const char *b, size_t blen, bool fold)
{
	struct pat_vals v;
	if (p->n_vars && !resolve(p, r, &v))
		return false;
	return pat_match(p, p->n_vars ? &v : NULL, a, alen, b, blen, fold);
}

/* ---------------------------------------------------------------- values */

static bool digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

int s3p_parse_date(const char *s, size_t n, int64_t *ms)
{
	/* Epoch seconds: digits only, anything but the 4-digit W3C "YYYY". */
	if (digits(s, n) && n != 4) {
		if (n > 12)
			return -1;      /* past year 33658: not a date we compare */
		*ms = strtoll(s, NULL, 10) * 1000;
		return 0;
	}
	if (n < 4 || !digits(s, 4))
		return -1;
	int mo = 1, d = 1, h = 0, mi = 0, sec = 0;
	int64_t frac_ms = 0, off_min = 0;
	int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	size_t i = 4;
	if (i < n) {
		if (n - i < 3 || s[i] != '-' || !digits(s + i + 1, 2))
			return -1;
		mo = num2(s + i + 1);
		i += 3;
	}
	if (i < n) {
		if (n - i < 3 || s[i] != '-' || !digits(s + i + 1, 2))
			return -1;
		d = num2(s + i + 1);
		i += 3;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return -1;
	if (i < n) {
		if (i != 10 || n - i < 6 || (s[i] != 'T' && s[i] != 't') || !digits(s + i + 1, 2) ||
		    s[i + 3] != ':' || !digits(s + i + 4, 2))
			return -1;
		h = num2(s + i + 1);
		mi = num2(s + i + 4);
		i += 6;
		if (i < n && s[i] == ':') {
			if (n - i < 3 || !digits(s + i + 1, 2))
				return -1;
			sec = num2(s + i + 1);
			i += 3;
			if (i < n && s[i] == '.') {
				size_t f = ++i, scale = 100;
				while (i < n && s[i] >= '0' && s[i] <= '9') {
					frac_ms += (s[i] - '0') * (int64_t)scale;
					scale /= 10;
					i++;
				}
				if (i == f)
					return -1;
			}
		}
		if (h > 23 || mi > 59 || sec > 60)
			return -1;
		/* Time zone: Z, +hh:mm, -hh:mm; none is taken as UTC. */
		if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
			i++;
		} else if (i < n && (s[i] == '+' || s[i] == '-')) {
			if (n - i < 6 || !digits(s + i + 1, 2) || s[i + 3] != ':' ||
			    !digits(s + i + 4, 2))
				return -1;
			int oh = num2(s + i + 1), om = num2(s + i + 4);
			if (oh > 23 || om > 59)
				return -1;
			off_min = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
			i += 6;
		}
		if (i != n)
			return -1;
	}
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off_min * 60;
	*ms = secs * 1000 + frac_ms;
	return 0;
}

int s3p_parse_number(const char *s, size_t n, double *d)
{
	char buf[64];
	size_t i = 0;
	if (n == 0 || n >= sizeof(buf))
		return -1;
	if (s[i] == '-' || s[i] == '+')
		i++;
	size_t int_start = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	size_t int_digits = i - int_start, frac_digits = 0;
	if (i < n && s[i] == '.') {
		size_t f = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		frac_digits = i - f;
	}
	if (!int_digits && !frac_digits)
		return -1;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		size_t e = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == e)
			return -1;
	}
	if (i != n)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*d = strtod(buf, NULL);
	return 0;
}

int s3p_parse_cidr(const char *s, size_t n, struct cidr *c)
{
	char buf[64];
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *slash = strchr(buf, '/');
	long bits = -1;
	if (slash) {
		*slash = '\0';
		size_t bn = strlen(slash + 1);
		if (bn == 0 || bn > 3 || !digits(slash + 1, bn))
			return -1;
		bits = strtol(slash + 1, NULL, 10);
	}
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, buf, c->addr) == 1) {
		c->family = 4;
		if (bits > 32)
			return -1;
		c->bits = (uint8_t)(bits < 0 ? 32 : bits);
	} else if (inet_pton(AF_INET6, buf, c->addr) == 1) {
		c->family = 6;
		if (bits > 128)
			return -1;
		c->bits = (uint8_t)(bits < 0 ? 128 : bits);
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (c->bits >= 96 && memcmp(c->addr, mapped, 12) == 0) {
			memmove(c->addr, c->addr + 12, 4);
			memset(c->addr + 4, 0, 12);
			c->family = 4;
			c->bits -= 96;
		}
	} else {
		return -1;
	}
	/* Clear host bits: "192.0.2.5/24" is the network 192.0.2.0/24. */
	for (unsigned i = 0; i < 16; i++) {
		unsigned keep = c->bits > i * 8 ? c->bits - i * 8 : 0;
		if (keep < 8)
			c->addr[i] &= (uint8_t)(0xFF00 >> keep);
	}
	return 0;
}

bool s3p_cidr_contains(const struct cidr *net, const struct cidr *addr)
{
	if (net->family != addr->family || addr->bits < net->bits)
		return false;
	unsigned full = net->bits / 8, rest = net->bits % 8;
	if (memcmp(net->addr, addr->addr, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xFF00 >> rest);
		if ((net->addr[full] & mask) != (addr->addr[full] & mask))
			return false;
	}
	return true;
}

static int parse_bool(const char *s, bool *b)
{
	if (strcasecmp(s, "true") == 0)
		*b = true;
	else if (strcasecmp(s, "false") == 0)
		*b = false;
	else
		return -1;
	return 0;
}

/* ---------------------------------------------------------------- conditions */

/* ARN parts: the first five colons split; the sixth part keeps the rest. */
static size_t arn_split(const char *s, const char *part[ARN_PARTS], size_t len[ARN_PARTS])
{
	size_t n = 0;
	const char *p = s;
	while (n < ARN_PARTS - 1) {
		const char *c = strchr(p, ':');
		if (!c)
			break;
		part[n] = p;
		len[n++] = (size_t)(c - p);
		p = c + 1;
	}
	part[n] = p;
	len[n++] = strlen(p);
	return n;
}

/* Does request value x satisfy the (positive) operator against any of
 * the condition's values? */
static bool value_matches(const struct cond *c, const char *x, const struct s3_policy_req *r)
{
	size_t xn = strlen(x);
	double num = 0;
	int64_t ms = 0;
	bool b = false;
	struct cidr ip;
	const char *part[ARN_PARTS];
	size_t plen[ARN_PARTS];
	size_t nparts = 0;

	/* Parse the request's value once; one that does not parse matches no
	 * value (and so satisfies the negated forms). */
	switch (c->base) {
	case COP_NUM_EQ: case COP_NUM_LT: case COP_NUM_LE: case COP_NUM_GT: case COP_NUM_GE:
		if (s3p_parse_number(x, xn, &num))
			return false;
		break;
	case COP_DATE_EQ: case COP_DATE_LT: case COP_DATE_LE: case COP_DATE_GT: case COP_DATE_GE:
		if (s3p_parse_date(x, xn, &ms))
			return false;
		break;
	case COP_BOOL:
		if (parse_bool(x, &b))
			return false;
		break;
	case COP_IP:
		if (s3p_parse_cidr(x, xn, &ip))
			return false;
		break;
	case COP_ARN_LIKE:
		nparts = arn_split(x, part, plen);
		if (nparts != ARN_PARTS)
			return false;
		break;
	default:
		break;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		const struct cond_val *v = &c->v[i];
		bool m = false;
		switch (c->base) {
		case COP_STR_EQ:
		case COP_STR_LIKE:
		case COP_BIN_EQ: m = pat_match_req(&v->pat, r, x, xn, "", 0, false); break;
		case COP_STR_EQ_IC: m = pat_match_req(&v->pat, r, x, xn, "", 0, true); break;
		case COP_NUM_EQ: m = num == v->num; break;
		case COP_NUM_LT: m = num < v->num; break;
		case COP_NUM_LE: m = num <= v->num; break;
		case COP_NUM_GT: m = num > v->num; break;
		case COP_NUM_GE: m = num >= v->num; break;
		case COP_DATE_EQ: m = ms == v->ms; break;
		case COP_DATE_LT: m = ms < v->ms; break;
		case COP_DATE_LE: m = ms <= v->ms; break;
		case COP_DATE_GT: m = ms > v->ms; break;
		case COP_DATE_GE: m = ms >= v->ms; break;
		case COP_BOOL: m = b == v->b; break;
		case COP_IP: m = s3p_cidr_contains(&v->ip, &ip); break;
		case COP_ARN_LIKE:
			m = true;
			for (size_t j = 0; j < ARN_PARTS && m; j++)
				m = pat_match_req(&v->arn[j], r, part[j], plen[j], "", 0, false);
			break;
		case COP_NULL: break;
		}
		if (m)
			return true;
	}
	return false;
}

static bool cond_holds(const struct cond *c, const struct s3_policy_req *r)
{
	const struct s3_policy_kv *kv = lookup(r, c->key);
	if (c->base == COP_NULL) {
		/* "true": the key must be absent; "false": present. */
		for (uint32_t i = 0; i < c->n; i++)
			if (c->v[i].b == !kv)
				return true;
		return false;
	}
	if (!kv) {
		if (c->if_exists)
			return true;
		/* ForAllValues over no values is vacuously true; ForAnyValue
		 * finds none; a plain operator: false, its negation true. */
		if (c->set == SET_ALL)
			return true;
		if (c->set == SET_ANY)
			return false;
		return c->negate;
	}
	if (c->set == SET_NONE) {
		/* A plain operator on a multi-valued key: any value will do. */
		bool any = false;
		for (size_t i = 0; i < kv->n && !any; i++)
			any = kv->vals[i] && value_matches(c, kv->vals[i], r);
		return c->negate ? !any : any;
	}
	for (size_t i = 0; i < kv->n; i++) {
		bool m = kv->vals[i] && value_matches(c, kv->vals[i], r);
		if (c->negate)
			m = !m;
		if (c->set == SET_ANY && m)
			return true;
		if (c->set == SET_ALL && !m)
			return false;
	}
	return c->set == SET_ALL;
}

/* ---------------------------------------------------------------- statements */

static bool principal_matches(const struct stmt *st, const struct s3_policy_req *r)
{
	for (uint32_t i = 0; i < st->n_pr; i++) {
		const struct princ *p = &st->pr[i];
		switch (p->kind) {
		case PR_ANY: return true;
		case PR_USER:
			if (r->principal && strcmp(r->principal, p->name) == 0)
				return true;
			break;
		case PR_CANONICAL:
			if (r->principal && r->principal_id &&
			    strcasecmp(r->principal_id, p->name) == 0)
				return true;
			break;
		case PR_OWNER:
			if (r->principal && r->is_bucket_owner)
				return true;
			break;
		default: break;
		}
	}
	return false;
}

static bool applies(const struct s3_policy *p, const struct stmt *st, const struct s3_policy_req *r)
{
	if (principal_matches(st, r) == st->not_principal)
		return false;
	bool act = false;
	for (uint32_t i = 0; i < st->n_act && !act; i++)
		act = pat_match_req(&st->act[i], r, r->action, strlen(r->action), "", 0, true);
	if (act == st->not_action)
		return false;
	const char *a = r->key ? p->object_arn : p->bucket_arn;
	size_t alen = p->bucket_arn_len + (r->key ? 1 : 0);
	const char *b = r->key ? r->key : "";
	size_t blen = strlen(b);
	bool res = false;
	for (uint32_t i = 0; i < st->n_res && !res; i++)
		res = pat_match_req(&st->res[i], r, a, alen, b, blen, false);
	if (res == st->not_resource)
		return false;
	for (uint32_t i = 0; i < st->n_cond; i++)
		if (!cond_holds(&st->cond[i], r))
			return false;
	return true;
}

enum s3_policy_verdict s3_policy_eval(const struct s3_policy *p, const struct s3_policy_req *r)
{
	bool allow = false;
	if (!p || !r || !r->action)
		return S3_POLICY_NONE;
	for (uint32_t i = 0; i < p->n_st; i++) {
		const struct stmt *st = &p->st[i];
		/* Once an Allow is known, only a Deny can change the answer. */
		if (!st->deny && allow)
			continue;
		if (!applies(p, st, r))
			continue;
		if (st->deny)
			return S3_POLICY_DENY;
		allow = true;
	}
	return allow ? S3_POLICY_ALLOW : S3_POLICY_NONE;
}

/* ---------------------------------------------------------------- public */

/* Does c pin one of AWS's listed keys to fixed values? Only positive,
 * unconditional tests do: a negation, IfExists or ForAllValues lets
 * requests through that carry another value or none at all. */
static bool cond_restricts(const struct cond *c)
{
	if (c->negate || c->if_exists || c->set == SET_ALL || !s3p_public_restricting_key(c->key))
		return false;
	switch (c->base) {
	case COP_STR_EQ:
	case COP_STR_EQ_IC:
	case COP_STR_LIKE:
		for (uint32_t i = 0; i < c->n; i++)
			if (c->v[i].pat.wild || c->v[i].pat.n_vars || strpbrk(c->v[i].text, "*?"))
				return false;
		return true;
	case COP_ARN_LIKE:
		for (uint32_t i = 0; i < c->n; i++)
			if (strpbrk(c->v[i].text, "*?$"))
				return false;
		return true;
	case COP_IP:
		/* S3 User Guide: aws:SourceIp ranges broader than /8 (IPv4)
		 * or /32 (IPv6) count as public. */
		for (uint32_t i = 0; i < c->n; i++)
			if (c->v[i].ip.bits < (c->v[i].ip.family == 4 ? 8 : 32))
				return false;
		return true;
	default:
		return false;
	}
}

bool s3_policy_is_public(const struct s3_policy *p)
{
	for (uint32_t i = 0; p && i < p->n_st; i++) {
		const struct stmt *st = &p->st[i];
		if (st->deny)
			continue;
		bool everyone = st->not_principal;
		for (uint32_t j = 0; j < st->n_pr && !everyone; j++)
			everyone = st->pr[j].kind == PR_ANY;
		if (!everyone)
			continue;
		bool restricted = false;
		for (uint32_t j = 0; j < st->n_cond && !restricted; j++)
			restricted = cond_restricts(&st->cond[j]);
		if (!restricted)
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- keys */

static bool key_named(const char *have, const char *want, size_t wn, bool prefix)
{
	return prefix ? strncasecmp(have, want, wn) == 0 : s3p_key_eq(have, want);
}

static bool pat_names(const struct pat *p, const char *want, size_t wn, bool prefix)
{
	for (uint32_t k = 0; k < p->n && p->n_vars; k++)
		if (p->it[k].kind == PAT_VAR && key_named(p->it[k].s, want, wn, prefix))
			return true;
	return false;
}

bool s3_policy_mentions_key(const struct s3_policy *p, const char *key)
{
	size_t n = strlen(key);
	bool prefix = n && key[n - 1] == '/';
	for (uint32_t i = 0; p && i < p->n_st; i++) {
		const struct stmt *st = &p->st[i];
		for (uint32_t j = 0; j < st->n_res; j++)
			if (pat_names(&st->res[j], key, n, prefix))
				return true;
		for (uint32_t j = 0; j < st->n_cond; j++) {
			const struct cond *c = &st->cond[j];
			if (key_named(c->key, key, n, prefix))
				return true;
			for (uint32_t v = 0; v < c->n; v++) {
				if (pat_names(&c->v[v].pat, key, n, prefix))
					return true;
				for (int a = 0; c->base == COP_ARN_LIKE && a < ARN_PARTS; a++)
					if (pat_names(&c->v[v].arn[a], key, n, prefix))
						return true;
			}
		}
	}
	return false;
}
