/*
 * sigv2.c — AWS Signature Version 2 (see sigv2.h for the StringToSign).
 * The subresources of interest are botocore's HmacV1Auth list (which is
 * AWS's documented list plus the newer configuration subresources), so
 * what Debian's boto3 signs is what we check.
 */
#include "common/sigv2.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const subresources[] = {
	"accelerate", "acl", "analytics", "cors", "defaultObjectAcl", "delete", "inventory",
	"legal-hold", "lifecycle", "location", "logging", "metrics", "notification",
	"object-lock", "partNumber", "policy", "replication", "requestPayment",
	"response-cache-control", "response-content-disposition", "response-content-encoding",
	"response-content-language", "response-content-type", "response-expires", "restore",
	"retention", "select", "select-type", "storageClass", "tagging", "torrent", "uploadId",
	"uploads", "versionId", "versioning", "versions", "website",
};

static bool is_subresource(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]); i++)
		if (strlen(subresources[i]) == n && memcmp(subresources[i], s, n) == 0)
			return true;
	return false;
}

static bool b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/' || c == '=';
}

static bool valid_sig(const char *s)
{
	if (strlen(s) != SIGV2_SIG_LEN)
		return false;
	for (size_t i = 0; i < SIGV2_SIG_LEN; i++)
		if (!b64_char(s[i]))
			return false;
	return s[SIGV2_SIG_LEN - 1] == '=';
}

static bool valid_key_id(const char *s, size_t n)
{
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == ':' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

int sigv2_parse_header(const char *v, size_t n, struct sigv2_auth *a)
{
	memset(a, 0, sizeof(*a));
	if (n < 4 || memcmp(v, "AWS ", 4) != 0)
		return -ENOENT;
	const char *p = v + 4;
	size_t m = n - 4;
	trim(&p, &m);
	const char *colon = memchr(p, ':', m);
	if (!colon || !valid_key_id(p, (size_t)(colon - p)))
		return -EINVAL;
	size_t kl = (size_t)(colon - p), sl = m - kl - 1;
	memcpy(a->access_key, p, kl);
	if (sl == SIGV2_SIG_LEN) {
		memcpy(a->signature, colon + 1, sl);
		if (!valid_sig(a->signature))
			a->signature[0] = 0;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode n bytes of s into out (cap bytes with the NUL); '+'
 * stays '+' (a signature's base64 may hold one that a client did not
 * escape). Decoded length, or -1 on a bad escape, an embedded NUL or
 * overflow. */
static long unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			int h, l;
			if (i + 2 >= n || (h = hexval(s[i + 1])) < 0 || (l = hexval(s[i + 2])) < 0)
				return -1;
			c = h << 4 | l;
			i += 2;
		}
		if (c == 0 || o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return (long)o;
}

int sigv2_parse_query(const char *q, size_t n, struct sigv2_auth *a)
{
	memset(a, 0, sizeof(*a));
	bool have_key = false, have_sig = false, have_exp = false, bad = false;
	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i);
		size_t end = amp ? (size_t)(amp - q) : n;
		const char *p = q + i;
		size_t pl = end - i;
		const char *eq = memchr(p, '=', pl);
		size_t nl = eq ? (size_t)(eq - p) : pl;
		const char *val = eq ? eq + 1 : p + pl;
		size_t vl = eq ? pl - nl - 1 : 0;
		char buf[160];
		if (nl == 14 && memcmp(p, "AWSAccessKeyId", 14) == 0) {
			long l = unescape(val, vl, buf, sizeof(buf));
			if (have_key || l < 0 || !valid_key_id(buf, (size_t)l))
				bad = true;
			else
				memcpy(a->access_key, buf, (size_t)l + 1);
			have_key = true;
		} else if (nl == 9 && memcmp(p, "Signature", 9) == 0) {
			long l = unescape(val, vl, buf, sizeof(buf));
			if (have_sig)
				bad = true;
			else if (l == SIGV2_SIG_LEN && valid_sig(buf))
				memcpy(a->signature, buf, (size_t)l + 1);
			have_sig = true;
		} else if (nl == 7 && memcmp(p, "Expires", 7) == 0) {
			int64_t e = 0;
			if (have_exp || vl == 0 || vl > 12)
				bad = true;
			for (size_t k = 0; k < vl && !bad; k++) {
				if (val[k] < '0' || val[k] > '9')
					bad = true;
				else
					e = e * 10 + (val[k] - '0');
			}
			a->expires = e;
			have_exp = true;
		}
		i = end + 1;
	}
	if (!have_key && !have_sig)
		return -ENOENT;
	if (bad || !have_key || !have_sig || !have_exp)
		return -EINVAL;
	a->presigned = true;
	return 0;
}

/* ------------------------------------------------------------ string */

struct out {
	char *p;
	size_t len, cap;
	bool fail;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->fail)
		return;
	if (o->len + n + 1 > o->cap) {
		if (o->len + n + 1 > SIGV2_STS_MAX) {
			o->fail = true;
			return;
		}
		size_t cap = o->cap ? o->cap : 512;
		while (cap < o->len + n + 1)
			cap *= 2;
		char *np = realloc(o->p, cap);
		if (!np) {
			o->fail = true;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = 0;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static bool name_is(const struct sigv4_header *h, const char *lit)
{
	return h->name_len == strlen(lit) && strncasecmp(h->name, lit, h->name_len) == 0;
}

static const struct sigv4_header *find(const struct sigv2_request *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (name_is(&r->headers[i], name))
			return &r->headers[i];
	return NULL;
}

static void put_header_value(struct out *o, const struct sigv4_header *h)
{
	if (!h)
		return;
	const char *v = h->value;
	size_t n = h->value_len;
	trim(&v, &n);
	put(o, v, n);
}

static bool is_amz(const struct sigv4_header *h)
{
	return h->name_len > 6 && strncasecmp(h->name, "x-amz-", 6) == 0;
}

/* x-amz-* header a sorts before b (lower-case byte order). */
static int amz_cmp(const struct sigv4_header *a, const struct sigv4_header *b)
{
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = strncasecmp(a->name, b->name, n);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

static void put_amz_headers(struct out *o, const struct sigv2_request *r)
{
	/* Selection by repeated minimum: headers are few (bounded by the HTTP
	 * parser) and this needs no allocation. */
	const struct sigv4_header *last = NULL;
	for (;;) {
		const struct sigv4_header *next = NULL;
		for (size_t i = 0; i < r->n_headers; i++) {
			const struct sigv4_header *h = &r->headers[i];
			if (!is_amz(h) || (last && amz_cmp(h, last) <= 0))
				continue;
			if (!next || amz_cmp(h, next) < 0)
				next = h;
		}
		if (!next)
			return;
		char lower[256];
		size_t ln = next->name_len < sizeof(lower) ? next->name_len : sizeof(lower);
		for (size_t i = 0; i < ln; i++)
			lower[i] = (char)(next->name[i] >= 'A' && next->name[i] <= 'Z' ?
						  next->name[i] + 32 : next->name[i]);
		put(o, lower, ln);
		put(o, ":", 1);
		bool first = true;
		for (size_t i = 0; i < r->n_headers; i++) {
			if (!is_amz(&r->headers[i]) || amz_cmp(&r->headers[i], next) != 0)
				continue;
			if (!first)
				put(o, ",", 1);
			put_header_value(o, &r->headers[i]);
			first = false;
		}
		put(o, "\n", 1);
		last = next;
	}
}

struct param {
	const char *name, *val;
	size_t nl, vl;
	bool has_eq;
};

static void put_resource(struct out *o, const struct sigv2_request *r)
{
	if (r->vhost_bucket) {
		put(o, "/", 1);
		put(o, r->vhost_bucket, r->vhost_bucket_len);
	}
	put(o, r->path, r->path_len);
	struct param ps[32];
	size_t np = 0;
	const char *q = r->query;
	size_t n = q ? r->query_len : 0;
	for (size_t i = 0; i < n;) {
		const char *amp = memchr(q + i, '&', n - i);
		size_t end = amp ? (size_t)(amp - q) : n;
		const char *p = q + i;
		size_t pl = end - i;
		const char *eq = memchr(p, '=', pl);
		size_t nl = eq ? (size_t)(eq - p) : pl;
		if (is_subresource(p, nl)) {
			if (np == sizeof(ps) / sizeof(ps[0])) {
				o->fail = true;
				return;
			}
			ps[np++] = (struct param){ .name = p, .nl = nl, .val = eq ? eq + 1 : NULL,
						   .vl = eq ? pl - nl - 1 : 0, .has_eq = eq != NULL };
		}
		i = end + 1;
	}
	/* Stable insertion sort by name (a repeated name keeps its order). */
	for (size_t i = 1; i < np; i++) {
		struct param t = ps[i];
		size_t j = i;
		while (j > 0) {
			const struct param *a = &ps[j - 1];
			size_t m = a->nl < t.nl ? a->nl : t.nl;
			int c = memcmp(a->name, t.name, m);
			if (c < 0 || (c == 0 && a->nl <= t.nl))
				break;
			ps[j] = ps[j - 1];
			j--;
		}
		ps[j] = t;
	}
	for (size_t i = 0; i < np; i++) {
		put(o, i ? "&" : "?", 1);
		put(o, ps[i].name, ps[i].nl);
		if (!ps[i].has_eq)
			continue;
		put(o, "=", 1);
		char buf[1024];
		long l = unescape(ps[i].val, ps[i].vl, buf, sizeof(buf));
		if (l < 0) {
			put(o, ps[i].val, ps[i].vl); /* will not match; keeps the text honest */
			continue;
		}
		put(o, buf, (size_t)l);
	}
}

char *sigv2_string_to_sign(const struct sigv2_request *req, const struct sigv2_auth *a,
			   size_t *len)
{
	struct out o = { 0 };
	puts_(&o, req->method);
	put(&o, "\n", 1);
	put_header_value(&o, find(req, "content-md5"));
	put(&o, "\n", 1);
	put_header_value(&o, find(req, "content-type"));
	put(&o, "\n", 1);
	if (a->presigned) {
		char e[24];
		int l = snprintf(e, sizeof(e), "%lld", (long long)a->expires);
		put(&o, e, (size_t)l);
	} else if (!(a->blank_date && find(req, "x-amz-date"))) {
		put_header_value(&o, find(req, "date"));
	}
	put(&o, "\n", 1);
	put_amz_headers(&o, req);
	put_resource(&o, req);
	if (o.fail || !o.p) {
		free(o.p);
		return NULL;
	}
	*len = o.len;
	return o.p;
}

int sigv2_sign(const char *secret, const struct sigv2_request *req, const struct sigv2_auth *a,
	       char sig[SIGV2_SIG_LEN + 1])
{
	size_t len;
	char *sts = sigv2_string_to_sign(req, a, &len);
	if (!sts)
		return -E2BIG;
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;
	unsigned char *ok = HMAC(EVP_sha1(), secret, (int)strlen(secret), (unsigned char *)sts,
				 len, mac, &ml);
	free(sts);
	if (!ok || ml != 20)
		return -ENOMEM;
	EVP_EncodeBlock((unsigned char *)sig, mac, 20);
	sig[SIGV2_SIG_LEN] = 0;
	return 0;
}

bool sigv2_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}
