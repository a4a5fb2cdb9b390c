/*
 * s3b_req.c — endpoint parsing, canonical paths and SigV4 request heads
 * (see s3b_req.h).
 *
 * Everything is written through `struct out`, an append cursor over a
 * fixed buffer that remembers overflow instead of checking each append:
 * one check at the end decides -ENOSPC.
 */
#include "bench/s3bench/s3b_req.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/sigv4.h"

struct out {
	char *p;
	size_t len, cap;
	bool over;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n == 0) /* s may be NULL: memcpy must not see it */
		return;
	if (o->over || o->len + n >= o->cap) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

/* Append a string literal: its length is known at compile time. */
#define PUTL(o, lit) put((o), (lit), sizeof(lit) - 1)

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static int finish(struct out *o)
{
	if (o->over || o->len >= o->cap)
		return -ENOSPC;
	o->p[o->len] = '\0';
	return (int)o->len;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------ endpoint */

int s3b_endpoint_parse(const char *url, struct s3b_endpoint *ep, char *err, size_t errlen)
{
	memset(ep, 0, sizeof(*ep));
	const char *p;
	if (strncasecmp(url, "https://", 8) == 0) {
		seterr(err, errlen, "%s: https is not supported (the bench speaks plain HTTP)", url);
		return -ENOTSUP;
	}
	if (strncasecmp(url, "http://", 7) != 0) {
		seterr(err, errlen, "%s: expected http://host[:port][/path]", url);
		return -EINVAL;
	}
	p = url + 7;
	const char *host = p, *host_end;
	if (*p == '[') { /* IPv6 literal */
		host = ++p;
		host_end = strchr(p, ']');
		if (!host_end) {
			seterr(err, errlen, "%s: unterminated [IPv6] address", url);
			return -EINVAL;
		}
		p = host_end + 1;
	} else {
		while (*p && *p != ':' && *p != '/')
			p++;
		host_end = p;
	}
	size_t hn = (size_t)(host_end - host);
	if (hn == 0 || hn >= sizeof(ep->host)) {
		seterr(err, errlen, "%s: %s host name", url, hn ? "too long a" : "no");
		return -EINVAL;
	}
	memcpy(ep->host, host, hn);
	ep->port = 80;
	if (*p == ':') {
		char *end;
		unsigned long port = strtoul(p + 1, &end, 10);
		if (end == p + 1 || port == 0 || port > 65535 || (*end && *end != '/')) {
			seterr(err, errlen, "%s: bad port", url);
			return -EINVAL;
		}
		ep->port = (uint16_t)port;
		p = end;
	} else if (*p && *p != '/') {
		seterr(err, errlen, "%s: unexpected '%c' after the host", url, *p);
		return -EINVAL;
	}
	size_t bn = strlen(p);
	while (bn > 0 && p[bn - 1] == '/')
		bn--;
	if (bn >= sizeof(ep->base_path)) {
		seterr(err, errlen, "%s: path too long", url);
		return -EINVAL;
	}
	for (size_t i = 0; i < bn; i++) {
		if (p[i] == '?' || p[i] == '#' || p[i] == '%' || p[i] <= ' ') {
			seterr(err, errlen, "%s: the URL path may not hold '%c'", url, p[i]);
			return -EINVAL;
		}
	}
	memcpy(ep->base_path, p, bn);
	bool v6 = strchr(ep->host, ':') != NULL;
	if (ep->port == 80)
		snprintf(ep->host_header, sizeof(ep->host_header), v6 ? "[%s]" : "%s", ep->host);
	else
		snprintf(ep->host_header, sizeof(ep->host_header), v6 ? "[%s]:%u" : "%s:%u",
			 ep->host, ep->port);
	return 0;
}

/* ------------------------------------------------------------ encoding */

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

int s3b_uri_encode(const char *s, size_t n, bool keep_slash, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (unreserved(c) || (keep_slash && c == '/')) {
			if (j + 1 >= cap)
				return -ENOSPC;
			out[j++] = (char)c;
		} else {
			if (j + 3 >= cap)
				return -ENOSPC;
			out[j++] = '%';
			out[j++] = hex[c >> 4];
			out[j++] = hex[c & 15];
		}
	}
	if (j >= cap)
		return -ENOSPC;
	out[j] = '\0';
	return (int)j;
}

/* ------------------------------------------------------------ target */

static bool bucket_name_ok(const char *b)
{
	size_t n = strlen(b);
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = b[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
	}
	return true;
}

int s3b_target_init(struct s3b_target *t, const struct s3b_endpoint *ep, const char *bucket,
		    const char *key_prefix, bool virtual_host, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (!bucket_name_ok(bucket)) {
		seterr(err, errlen, "bucket name '%s': 3..63 of a-z 0-9 . - , starting and "
			"ending with a letter or digit", bucket);
		return -EINVAL;
	}
	int n;
	if (virtual_host) {
		n = snprintf(t->host, sizeof(t->host), "%s.%s", bucket, ep->host_header);
		if (n < 0 || (size_t)n >= sizeof(t->host))
			goto too_long;
		n = snprintf(t->bucket_path, sizeof(t->bucket_path), "%s/", ep->base_path);
	} else {
		snprintf(t->host, sizeof(t->host), "%s", ep->host_header);
		n = snprintf(t->bucket_path, sizeof(t->bucket_path), "%s/%s", ep->base_path, bucket);
	}
	if (n < 0 || (size_t)n >= sizeof(t->bucket_path))
		goto too_long;

	char enc[S3B_PATH_MAX];
	n = s3b_uri_encode(key_prefix, strlen(key_prefix), true, enc, sizeof(enc));
	if (n < 0)
		goto too_long;
	const char *sep = virtual_host ? "" : "/"; /* virtual-host bucket_path ends in '/' */
	n = snprintf(t->key_prefix, sizeof(t->key_prefix), "%s%s%s", t->bucket_path, sep, enc);
	/* room for the 20 digits of an index */
	if (n < 0 || (size_t)n + 21 >= sizeof(t->key_prefix))
		goto too_long;
	t->key_prefix_len = (size_t)n;
	n = s3b_uri_encode(key_prefix, strlen(key_prefix), false, t->list_prefix,
			   sizeof(t->list_prefix));
	if (n < 0)
		goto too_long;
	return 0;
too_long:
	seterr(err, errlen, "bucket, key prefix or URL path too long");
	return -EINVAL;
}

int s3b_target_object_path(const struct s3b_target *t, uint64_t idx, char *out, size_t cap)
{
	if (cap < t->key_prefix_len + 21)
		return -ENOSPC;
	memcpy(out, t->key_prefix, t->key_prefix_len);
	/* %08llu by hand: snprintf's format parsing costs more than the rest */
	char d[21];
	int nd = 0;
	do {
		d[nd++] = (char)('0' + idx % 10);
		idx /= 10;
	} while (idx);
	while (nd < 8)
		d[nd++] = '0';
	size_t len = t->key_prefix_len;
	while (nd > 0)
		out[len++] = d[--nd];
	out[len] = '\0';
	return (int)len;
}

/* ------------------------------------------------------------ signer */

static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n == 0 || n >= cap)
		return -EINVAL;
	memcpy(dst, src, n + 1);
	return 0;
}

int s3b_signer_init(struct s3b_signer *s, const char *access_key, const char *secret_key,
		    const char *region)
{
	memset(s, 0, sizeof(*s));
	s->now_s = -1;
	if (copy_str(s->access_key, sizeof(s->access_key), access_key) ||
	    copy_str(s->secret_key, sizeof(s->secret_key), secret_key) ||
	    copy_str(s->region, sizeof(s->region), region))
		return -EINVAL;
	return 0;
}

void s3b_signer_tick(struct s3b_signer *s, time_t now)
{
	if (now == s->now_s)
		return;
	s->now_s = now;
	sigv4_format_amz_date(now, s->amz_date);
	if (memcmp(s->date, s->amz_date, 8) != 0) {
		memcpy(s->date, s->amz_date, 8);
		s->date[8] = '\0';
		sigv4_signing_key(s->secret_key, s->date, s->region, "s3", s->key);
		s->key_derivations++;
	}
}

#define SIGNED_HEADERS "host;x-amz-content-sha256;x-amz-date"

int s3b_req_format(const struct s3b_signer *s, const struct s3b_req *r, char *out_p, size_t cap)
{
	size_t qlen = r->query ? r->query_len : 0;
	if (r->path_len >= S3B_PATH_MAX || qlen >= S3B_QUERY_MAX)
		return -EINVAL;

	/* Canonical request: method, path, query, the three headers, the
	 * signed-header list, the payload hash. Bounded by the checks above. */
	char creq_buf[S3B_PATH_MAX + S3B_QUERY_MAX + 2 * S3B_HOST_MAX + 512];
	struct out c = { creq_buf, 0, sizeof(creq_buf), false };
	puts_(&c, r->method);
	PUTL(&c, "\n");
	put(&c, r->path, r->path_len);
	PUTL(&c, "\n");
	put(&c, r->query, qlen);
	PUTL(&c, "\nhost:");
	puts_(&c, r->host);
	PUTL(&c, "\nx-amz-content-sha256:");
	puts_(&c, r->payload_hash);
	PUTL(&c, "\nx-amz-date:");
	put(&c, s->amz_date, 16);
	PUTL(&c, "\n\n" SIGNED_HEADERS "\n");
	puts_(&c, r->payload_hash);
	int clen = finish(&c);
	if (clen < 0)
		return -EINVAL;

	uint8_t digest[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1];
	hash_sha256(creq_buf, (size_t)clen, digest);
	hash_hex(digest, SHA256_LEN, hex);

	/* String to sign: algorithm, date, scope, hash of the canonical request. */
	char sts_buf[256];
	struct out t = { sts_buf, 0, sizeof(sts_buf), false };
	PUTL(&t, SIGV4_ALGORITHM "\n");
	put(&t, s->amz_date, 16);
	PUTL(&t, "\n");
	put(&t, s->date, 8);
	PUTL(&t, "/");
	puts_(&t, s->region);
	PUTL(&t, "/s3/aws4_request\n");
	put(&t, hex, 2 * SHA256_LEN);
	int tlen = finish(&t);
	if (tlen < 0)
		return -EINVAL;
	char sig[2 * SHA256_LEN + 1];
	hash_hmac_sha256(s->key, 32, sts_buf, (size_t)tlen, digest);
	hash_hex(digest, SHA256_LEN, sig);

	struct out o = { out_p, 0, cap, false };
	puts_(&o, r->method);
	PUTL(&o, " ");
	put(&o, r->path, r->path_len);
	if (qlen) {
		PUTL(&o, "?");
		put(&o, r->query, qlen);
	}
	PUTL(&o, " HTTP/1.1\r\nHost: ");
	puts_(&o, r->host);
	PUTL(&o, "\r\nx-amz-content-sha256: ");
	puts_(&o, r->payload_hash);
	PUTL(&o, "\r\nx-amz-date: ");
	put(&o, s->amz_date, 16);
	PUTL(&o, "\r\nAuthorization: " SIGV4_ALGORITHM " Credential=");
	puts_(&o, s->access_key);
	PUTL(&o, "/");
	put(&o, s->date, 8);
	PUTL(&o, "/");
	puts_(&o, s->region);
	PUTL(&o, "/s3/aws4_request, SignedHeaders=" SIGNED_HEADERS ", Signature=");
	put(&o, sig, 64);
	if (r->content_length >= 0) {
		char num[24];
		int n = snprintf(num, sizeof(num), "%lld", (long long)r->content_length);
		PUTL(&o, "\r\nContent-Length: ");
		put(&o, num, (size_t)n);
	}
	PUTL(&o, "\r\n\r\n");
	return finish(&o);
}
