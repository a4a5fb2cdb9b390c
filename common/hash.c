/*
 * hash.c — SHA-256, HMAC-SHA256 and MD5 with fetched EVP_MDs and a
 * per-thread digest context.
 *
 * HMAC is built from two SHA-256 passes here rather than OpenSSL's HMAC():
 * in OpenSSL 3, HMAC() looks the MAC up by name on every call, which costs
 * more than hashing a SigV4 string-to-sign.
 */
#include "common/hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static EVP_MD *md_sha256, *md_md5;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static _Thread_local EVP_MD_CTX *tl_ctx;
static pthread_key_t ctx_key;   /* frees a thread's context when it exits */

static void free_ctx(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void fetch_mds(void)
{
	if (pthread_key_create(&ctx_key, free_ctx) != 0)
		abort();
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	md_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
	if (!md_sha256 || !md_md5)
		abort(); /* OpenSSL without its default provider: nothing works */
}

static EVP_MD_CTX *ctx_for(const EVP_MD **sha, const EVP_MD **md5)
{
	pthread_once(&md_once, fetch_mds);
	if (sha)
		*sha = md_sha256;
	if (md5)
		*md5 = md_md5;
	if (!tl_ctx) {
		tl_ctx = EVP_MD_CTX_new();
		if (!tl_ctx)
			abort();
		pthread_setspecific(ctx_key, tl_ctx);
	}
	return tl_ctx;
}

static void digest(const EVP_MD *md, EVP_MD_CTX *ctx, const void *a, size_t alen,
		   const void *b, size_t blen, uint8_t *out)
{
	EVP_DigestInit_ex2(ctx, md, NULL);
	EVP_DigestUpdate(ctx, a, alen);
	if (blen)
		EVP_DigestUpdate(ctx, b, blen);
	EVP_DigestFinal_ex(ctx, out, NULL);
}

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	const EVP_MD *md;
	EVP_MD_CTX *ctx = ctx_for(&md, NULL);
	digest(md, ctx, data, len, NULL, 0, out);
}

void hash_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		   uint8_t out[SHA256_LEN])
{
	const EVP_MD *md;
	EVP_MD_CTX *ctx = ctx_for(&md, NULL);
	digest(md, ctx, a, alen, b, blen, out);
}

void hash_md5(const void *data, size_t len, uint8_t out[MD5_LEN])
{
	const EVP_MD *md;
	EVP_MD_CTX *ctx = ctx_for(NULL, &md);
	digest(md, ctx, data, len, NULL, 0, out);
}

void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		      uint8_t out[SHA256_LEN])
{
	enum { BLOCK = 64 };
	const EVP_MD *md;
	EVP_MD_CTX *ctx = ctx_for(&md, NULL);
	uint8_t k[BLOCK] = { 0 };
	if (key_len > BLOCK)
		digest(md, ctx, key, key_len, NULL, 0, k);
	else
		memcpy(k, key, key_len);

	uint8_t pad[BLOCK], inner[SHA256_LEN];
	for (int i = 0; i < BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	digest(md, ctx, pad, BLOCK, data, len, inner);
	for (int i = 0; i < BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	digest(md, ctx, pad, BLOCK, inner, SHA256_LEN, out);
}

struct hash_stream {
	EVP_MD_CTX *ctx;
	const EVP_MD *md;
};

struct hash_stream *hash_stream_new(enum hash_alg alg)
{
	const EVP_MD *sha, *md5;
	ctx_for(&sha, &md5);
	struct hash_stream *h = malloc(sizeof(*h));
	if (!h)
		return NULL;
	h->md = alg == HASH_MD5 ? md5 : sha;
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx) {
		free(h);
		return NULL;
	}
	EVP_DigestInit_ex2(h->ctx, h->md, NULL);
	return h;
}

void hash_stream_update(struct hash_stream *h, const void *data, size_t len)
{
	EVP_DigestUpdate(h->ctx, data, len);
}

void hash_stream_final(struct hash_stream *h, uint8_t *out)
{
	EVP_DigestFinal_ex(h->ctx, out, NULL);
	EVP_DigestInit_ex2(h->ctx, h->md, NULL);
}

void hash_stream_free(struct hash_stream *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

void hash_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hash_unhex(const char *in, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(in[2 * i]), lo = hexval(in[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
