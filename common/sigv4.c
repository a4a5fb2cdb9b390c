/*
 * sigv4.c — SigV4 canonical requests and signatures (see sigv4.h).
 *
 * The canonical request is assembled into a growable buffer sized from
 * the request (so no input can overflow a fixed array), hashed, and
 * dropped. Signing starts it, the query's scratch and its table of
 * parameters to sort in stack arrays, and moves to the heap only past
 * them (a long query or many headers): a presigned GET allocates nothing
 * here (issue 19). Parsing
 * of the Authorization header is a hand-written scan: a regex compiled per
 * request once cost a gateway a quarter of its CPU.
 */
#include "common/sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"

/* ------------------------------------------------------------ growable text */

struct text {
	char *p;
	size_t len, cap;
	bool oom;
	bool heap;       /* p is malloc'd (text_done frees it); else a caller's array */
};

/* A text over the caller's array buf[cap] (NULL, 0: none, heap from the
 * first byte). */
static void text_init(struct text *t, char *buf, size_t cap)
{
	*t = (struct text){ .p = buf, .cap = cap };
	if (buf && cap)
		buf[0] = 0;
}

static void text_done(struct text *t)
{
	if (t->heap)
		free(t->p);
}

static void text_reserve(struct text *t, size_t more)
{
	if (t->oom || t->len + more + 1 <= t->cap)
		return;
	size_t cap = t->cap ? t->cap : 1024;
	while (cap < t->len + more + 1)
		cap *= 2;
	char *p = t->heap ? realloc(t->p, cap) : malloc(cap);
	if (!p) {
		t->oom = true;
		return;
	}
	if (!t->heap && t->len)
		memcpy(p, t->p, t->len + 1);
	t->p = p;
	t->cap = cap;
	t->heap = true;
}

static void text_put(struct text *t, const char *s, size_t n)
{
	text_reserve(t, n);
	if (t->oom)
		return;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void text_puts(struct text *t, const char *s)
{
	text_put(t, s, strlen(s));
}

static void text_putc(struct text *t, char c)
{
	text_put(t, &c, 1);
}

/* ------------------------------------------------------------ URI encoding */

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode s[0..n) (percent escapes; '+' as space when plus_space) and
 * re-encode it the AWS way into t, keeping '/' when keep_slash. */
static int canon_encode(struct text *t, const char *s, size_t n, bool keep_slash,
			bool plus_space)
{
	static const char hex[] = "0123456789ABCDEF";
	text_reserve(t, 3 * n);
	if (t->oom)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int hi = hexdigit(s[i + 1]), lo = hexdigit(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (unreserved(c) || (c == '/' && keep_slash)) {
			t->p[t->len++] = (char)c;
		} else {
			t->p[t->len++] = '%';
			t->p[t->len++] = hex[c >> 4];
			t->p[t->len++] = hex[c & 15];
		}
	}
	t->p[t->len] = '\0';
	return 0;
}

/* ------------------------------------------------------------ query */

struct qparam {
	size_t key_off, key_len;   /* encoded, in the scratch text */
	size_t val_off, val_len;
};

static int qparam_cmp_base(const struct qparam *a, const struct qparam *b, const char *base)
{
	size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
	int c = memcmp(base + a->key_off, base + b->key_off, n);
	if (c)
		return c;
	if (a->key_len != b->key_len)
		return a->key_len < b->key_len ? -1 : 1;
	n = a->val_len < b->val_len ? a->val_len : b->val_len;
	c = memcmp(base + a->val_off, base + b->val_off, n);
	if (c)
		return c;
	return a->val_len < b->val_len ? -1 : a->val_len > b->val_len;
}

static int qparam_cmp_r(const void *a, const void *b, void *base)
{
	return qparam_cmp_base(a, b, base);
}

static bool span_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Append the canonical query string of q to t. */
static int canon_query(struct text *t, const char *q, size_t n, bool skip_signature)
{
	if (!q || n == 0)
		return 0;
	size_t count = 1;
	for (size_t i = 0; i < n; i++)
		count += q[i] == '&';
	struct qparam ps_mem[16];
	struct qparam *ps = count <= 16 ? ps_mem : calloc(count, sizeof(*ps));
	char scratch_mem[2048];
	struct text scratch;
	text_init(&scratch, scratch_mem, sizeof(scratch_mem));
	int rc = 0;
	if (!ps)
		return -ENOMEM;
	size_t np = 0;
	for (size_t i = 0; i <= n;) {
		size_t end = i;
		while (end < n && q[end] != '&')
			end++;
		if (end > i) {
			size_t eq = i;
			while (eq < end && q[eq] != '=')
				eq++;
			if (!(skip_signature && span_eq(q + i, eq - i, "X-Amz-Signature"))) {
				struct qparam *p = &ps[np++];
				p->key_off = scratch.len;
				rc = canon_encode(&scratch, q + i, eq - i, false, true);
				if (rc)
					goto out;
				p->key_len = scratch.len - p->key_off;
				p->val_off = scratch.len;
				if (eq < end)
					rc = canon_encode(&scratch, q + eq + 1, end - eq - 1, false, true);
				if (rc)
					goto out;
				p->val_len = scratch.len - p->val_off;
			}
		}
		i = end + 1;
	}
	qsort_r(ps, np, sizeof(*ps), qparam_cmp_r, scratch.p);
	for (size_t i = 0; i < np; i++) {
		if (i)
			text_putc(t, '&');
		text_put(t, scratch.p + ps[i].key_off, ps[i].key_len);
		text_putc(t, '=');
		text_put(t, scratch.p + ps[i].val_off, ps[i].val_len);
	}
	if (t->oom)
		rc = -ENOMEM;
out:
	text_done(&scratch);
	if (ps != ps_mem)
		free(ps);
	return rc;
}

/* ------------------------------------------------------------ headers */

/* Append "value" trimmed, inner space runs folded to one. */
static void put_folded(struct text *t, const char *v, size_t n)
{
	size_t b = 0, e = n;
	while (b < e && (v[b] == ' ' || v[b] == '\t'))
		b++;
	while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	bool space = false;
	for (size_t i = b; i < e; i++) {
		if (v[i] == ' ' || v[i] == '\t') {
			space = true;
			continue;
		}
		if (space)
			text_putc(t, ' ');
		space = false;
		text_putc(t, v[i]);
	}
}

static int canon_headers(struct text *t, const struct sigv4_request *req, const char *signed_headers)
{
	const char *s = signed_headers;
	while (*s) {
		const char *end = strchr(s, ';');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		if (n == 0)
			return -EINVAL;
		text_put(t, s, n);
		text_putc(t, ':');
		bool found = false;
		for (size_t i = 0; i < req->n_headers; i++) {
			const struct sigv4_header *h = &req->headers[i];
			if (h->name_len != n || strncasecmp(h->name, s, n) != 0)
				continue;
			if (found)
				text_putc(t, ',');
			put_folded(t, h->value, h->value_len);
			found = true;
		}
		if (!found)
			return -ENOENT;
		text_putc(t, '\n');
		s += n;
		if (*s == ';')
			s++;
	}
	return t->oom ? -ENOMEM : 0;
}

/* ------------------------------------------------------------ signing */

static int build_canonical(struct text *t, const struct sigv4_request *req,
			   const struct sigv4_auth *a)
{
	text_puts(t, req->method);
	text_putc(t, '\n');
	int rc = canon_encode(t, req->path, req->path_len, true, false);
	if (rc)
		return rc;
	text_putc(t, '\n');
	rc = canon_query(t, req->query, req->query_len, a->presigned);
	if (rc)
		return rc;
	text_putc(t, '\n');
	rc = canon_headers(t, req, a->signed_headers);
	if (rc)
		return rc;
	text_putc(t, '\n');
	text_puts(t, a->signed_headers);
	text_putc(t, '\n');
	text_puts(t, req->payload_hash ? req->payload_hash : SIGV4_UNSIGNED_PAYLOAD);
	return t->oom ? -ENOMEM : 0;
}

char *sigv4_canonical_request(const struct sigv4_request *req, const struct sigv4_auth *a,
			      size_t *out_len)
{
	struct text t;
	text_init(&t, NULL, 0);   /* returned: heap */
	if (build_canonical(&t, req, a) != 0) {
		free(t.p);
		return NULL;
	}
	*out_len = t.len;
	return t.p;
}

static void scope(const struct sigv4_auth *a, char *out, size_t len)
{
	snprintf(out, len, "%s/%s/%s/aws4_request", a->date, a->region, a->service);
}

static void sign_string(const uint8_t key[32], const char *sts, size_t n, char sig_hex[65])
{
	uint8_t mac[SHA256_LEN];
	hash_hmac_sha256(key, 32, sts, n, mac);
	hash_hex(mac, SHA256_LEN, sig_hex);
}

int sigv4_sign(const uint8_t key[32], const struct sigv4_request *req,
	       const struct sigv4_auth *a, char sig_hex[65])
{
	char mem[4096];
	struct text t;
	text_init(&t, mem, sizeof(mem));
	int rc = build_canonical(&t, req, a);
	if (rc) {
		text_done(&t);
		return rc;
	}
	uint8_t creq_hash[SHA256_LEN];
	hash_sha256(t.p, t.len, creq_hash);
	text_done(&t);

	char sc[256], hex[65], sts[512];
	scope(a, sc, sizeof(sc));
	hash_hex(creq_hash, SHA256_LEN, hex);
	int n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s", SIGV4_ALGORITHM, a->amz_date, sc, hex);
	if (n < 0 || (size_t)n >= sizeof(sts))
		return -EINVAL;
	sign_string(key, sts, (size_t)n, sig_hex);
	return 0;
}

void sigv4_signing_key(const char *secret, const char *date, const char *region,
		       const char *service, uint8_t key[32])
{
	char k0[256];
	int n = snprintf(k0, sizeof(k0), "AWS4%s", secret);
	if (n < 0 || (size_t)n >= sizeof(k0))
		n = (int)sizeof(k0) - 1; /* secrets are 40 chars; never this long */
	uint8_t k1[32], k2[32], k3[32];
	hash_hmac_sha256(k0, (size_t)n, date, strlen(date), k1);
	hash_hmac_sha256(k1, 32, region, strlen(region), k2);
	hash_hmac_sha256(k2, 32, service, strlen(service), k3);
	hash_hmac_sha256(k3, 32, "aws4_request", 12, key);
}

static void sign_chained(const uint8_t key[32], const struct sigv4_auth *a, const char *alg,
			 const char prev_sig[65], const uint8_t hash[32], char sig_hex[65])
{
	char sc[256], hex[65], sts[640];
	scope(a, sc, sizeof(sc));
	hash_hex(hash, 32, hex);
	int n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s\n%s\n%s", alg, a->amz_date, sc,
			 prev_sig, SIGV4_EMPTY_SHA256, hex);
	sign_string(key, sts, (size_t)n, sig_hex);
}

void sigv4_chunk_signature(const uint8_t key[32], const struct sigv4_auth *a,
			   const char prev_sig[65], const uint8_t chunk_sha256[32],
			   char sig_hex[65])
{
	sign_chained(key, a, "AWS4-HMAC-SHA256-PAYLOAD", prev_sig, chunk_sha256, sig_hex);
}

void sigv4_trailer_signature(const uint8_t key[32], const struct sigv4_auth *a,
			     const char prev_sig[65], const uint8_t trailer_sha256[32],
			     char sig_hex[65])
{
	/* The trailer string-to-sign has no empty-hash line. */
	char sc[256], hex[65], sts[640];
	scope(a, sc, sizeof(sc));
	hash_hex(trailer_sha256, 32, hex);
	int n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s",
			 a->amz_date, sc, prev_sig, hex);
	sign_string(key, sts, (size_t)n, sig_hex);
}

bool sigv4_equal(const char *a, const char *b)
{
	unsigned char d = 0;
	for (int i = 0; i < 64; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0 && a[64] == '\0' && b[64] == '\0';
}

/* ------------------------------------------------------------ parsing */

static int copy_span(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		return -EINVAL;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hexdigit(s[i]) < 0 || (s[i] >= 'A' && s[i] <= 'F'))
			return false;
	return true;
}

/* "AK/20130524/us-east-1/s3/aws4_request" */
static int parse_credential(const char *s, size_t n, struct sigv4_auth *a)
{
	const char *parts[5];
	size_t lens[5];
	size_t k = 0, start = 0;
	/* The access key itself has no '/', so split on the last four. */
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (k == 5)
				return -EINVAL;
			parts[k] = s + start;
			lens[k] = i - start;
			k++;
			start = i + 1;
		}
	}
	if (k != 5 || !span_eq(parts[4], lens[4], "aws4_request") || lens[1] != 8 || lens[0] == 0)
		return -EINVAL;
	for (size_t i = 0; i < 8; i++)
		if (parts[1][i] < '0' || parts[1][i] > '9')
			return -EINVAL;
	if (copy_span(a->access_key, sizeof(a->access_key), parts[0], lens[0]) ||
	    copy_span(a->date, sizeof(a->date), parts[1], lens[1]) ||
	    copy_span(a->region, sizeof(a->region), parts[2], lens[2]) ||
	    copy_span(a->service, sizeof(a->service), parts[3], lens[3]))
		return -EINVAL;
	return 0;
}

static int check_signed_headers(const char *s)
{
	if (!*s)
		return -EINVAL;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == ';' || *s == '_' || *s == '.'))
			return -EINVAL;
	return 0;
}

int sigv4_parse_header(const char *h, size_t len, struct sigv4_auth *a)
{
	memset(a, 0, sizeof(*a));
	size_t alg = strlen(SIGV4_ALGORITHM);
	if (len < alg + 1 || memcmp(h, SIGV4_ALGORITHM, alg) != 0 || (h[alg] != ' '))
		return (len >= 4 && memcmp(h, "AWS ", 4) == 0) ? -ENOTSUP : -EINVAL;
	bool have_cred = false, have_sh = false, have_sig = false;
	size_t i = alg;
	while (i < len) {
		while (i < len && (h[i] == ' ' || h[i] == ','))
			i++;
		if (i == len)
			break;
		size_t kb = i;
		while (i < len && h[i] != '=')
			i++;
		if (i == len)
			return -EINVAL;
		const char *key = h + kb;
		size_t klen = i - kb;
		size_t vb = ++i;
		while (i < len && h[i] != ',' && h[i] != ' ')
			i++;
		const char *v = h + vb;
		size_t vlen = i - vb;
		if (span_eq(key, klen, "Credential")) {
			if (have_cred || parse_credential(v, vlen, a))
				return -EINVAL;
			have_cred = true;
		} else if (span_eq(key, klen, "SignedHeaders")) {
			if (have_sh || copy_span(a->signed_headers, sizeof(a->signed_headers), v, vlen) ||
			    check_signed_headers(a->signed_headers))
				return -EINVAL;
			have_sh = true;
		} else if (span_eq(key, klen, "Signature")) {
			if (have_sig || vlen != 64 || !all_hex(v, 64))
				return -EINVAL;
			copy_span(a->signature, sizeof(a->signature), v, vlen);
			have_sig = true;
		} else {
			return -EINVAL;
		}
	}
	return have_cred && have_sh && have_sig ? 0 : -EINVAL;
}

/* Decode a query value into dst (NUL-terminated); -EINVAL if too long. */
static int decode_into(char *dst, size_t cap, const char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int hi = hexdigit(s[i + 1]), lo = hexdigit(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi << 4 | lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (o + 1 >= cap)
			return -EINVAL;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return 0;
}

int sigv4_parse_query(const char *q, size_t n, struct sigv4_auth *a)
{
	memset(a, 0, sizeof(*a));
	char alg[32] = "", cred[512] = "", expires[16] = "";
	bool have_sig = false;
	for (size_t i = 0; i < n;) {
		size_t end = i;
		while (end < n && q[end] != '&')
			end++;
		size_t eq = i;
		while (eq < end && q[eq] != '=')
			eq++;
		const char *k = q + i, *v = q + eq + (eq < end);
		size_t klen = eq - i, vlen = eq < end ? end - eq - 1 : 0;
		int rc = 0;
		if (span_eq(k, klen, "X-Amz-Algorithm"))
			rc = decode_into(alg, sizeof(alg), v, vlen);
		else if (span_eq(k, klen, "X-Amz-Credential"))
			rc = decode_into(cred, sizeof(cred), v, vlen);
		else if (span_eq(k, klen, "X-Amz-Date"))
			rc = decode_into(a->amz_date, sizeof(a->amz_date), v, vlen);
		else if (span_eq(k, klen, "X-Amz-Expires"))
			rc = decode_into(expires, sizeof(expires), v, vlen);
		else if (span_eq(k, klen, "X-Amz-SignedHeaders"))
			rc = decode_into(a->signed_headers, sizeof(a->signed_headers), v, vlen);
		else if (span_eq(k, klen, "X-Amz-Signature")) {
			rc = decode_into(a->signature, sizeof(a->signature), v, vlen);
			have_sig = true;
		}
		if (rc)
			return -EINVAL;
		i = end + 1;
	}
	if (!have_sig)
		return -ENOENT;
	if (strcmp(alg, SIGV4_ALGORITHM) != 0)
		return alg[0] ? -ENOTSUP : -EINVAL;
	if (strlen(a->signature) != 64 || !all_hex(a->signature, 64) ||
	    parse_credential(cred, strlen(cred), a) || check_signed_headers(a->signed_headers))
		return -EINVAL;
	char *end = NULL;
	errno = 0;
	unsigned long e = strtoul(expires, &end, 10);
	/* S3 allows at most 7 days. 0 parses: it is a URL that has expired
	 * (403 AccessDenied, as S3 answers), not a malformed one. */
	if (!expires[0] || *end || errno || e > 604800)
		return -EINVAL;
	a->expires_s = (uint32_t)e;
	time_t t;
	if (sigv4_parse_amz_date(a->amz_date, &t))
		return -EINVAL;
	a->presigned = true;
	return 0;
}

int sigv4_parse_amz_date(const char *s, time_t *out)
{
	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
		return -EINVAL;
	int v[6];
	static const int off[6] = { 0, 4, 6, 9, 11, 13 }, len[6] = { 4, 2, 2, 2, 2, 2 };
	for (int f = 0; f < 6; f++) {
		v[f] = 0;
		for (int i = 0; i < len[f]; i++) {
			char c = s[off[f] + i];
			if (c < '0' || c > '9')
				return -EINVAL;
			v[f] = v[f] * 10 + (c - '0');
		}
	}
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -EINVAL;
	struct tm tm = { .tm_year = v[0] - 1900, .tm_mon = v[1] - 1, .tm_mday = v[2],
			 .tm_hour = v[3], .tm_min = v[4], .tm_sec = v[5] };
	*out = timegm(&tm);
	return 0;
}

void sigv4_format_amz_date(time_t t, char out[17])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

int sigv4_format_header(const struct sigv4_auth *a, char *out, size_t len)
{
	int n = snprintf(out, len,
			 "%s Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
			 SIGV4_ALGORITHM, a->access_key, a->date, a->region, a->service,
			 a->signed_headers, a->signature);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}
