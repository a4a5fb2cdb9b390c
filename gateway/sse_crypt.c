/*
 * sse_crypt.c — the chunk cipher of server-side encryption (formats and
 * contracts in sse_crypt.h): AES-256-GCM per 64 KiB chunk, tags
 * interleaved after each chunk, stream keys bound to the PUT's object
 * id, customer-key check values, and the plaintext -> stored range map.
 *
 * The AES-256-GCM cipher is fetched once per process (EVP_CIPHER_fetch);
 * a context is made per stream with the key set once, and each chunk only
 * sets its nonce. Pure: no I/O, no loop; any thread.
 */
#include "gateway/sse_crypt.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define STREAM_LABEL "iolake-sse-stream-v1"
#define CHECK_LABEL "iolake-sse-check-v1"

static EVP_CIPHER *gcm_cipher;
static pthread_once_t gcm_once = PTHREAD_ONCE_INIT;

static void gcm_fetch(void)
{
	gcm_cipher = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
}

static const EVP_CIPHER *gcm(void)
{
	pthread_once(&gcm_once, gcm_fetch);
	return gcm_cipher;
}

uint64_t sse_nchunks(uint64_t plain, uint32_t chunk_bytes)
{
	return (plain + chunk_bytes - 1) / chunk_bytes;
}

uint64_t sse_stored_len(uint64_t plain, uint32_t chunk_bytes)
{
	return plain + sse_nchunks(plain, chunk_bytes) * SSE_TAG_BYTES;
}

void sse_map_range(uint64_t plain, uint32_t chunk_bytes, uint64_t off, uint64_t len,
		   struct sse_range *out)
{
	uint64_t first = off / chunk_bytes;
	uint64_t last = (off + len - 1) / chunk_bytes;
	uint64_t stride = (uint64_t)chunk_bytes + SSE_TAG_BYTES;
	out->first_chunk = first;
	out->skip = (uint32_t)(off - first * chunk_bytes);
	out->stored_off = first * stride;
	uint64_t end = (last + 1) * stride;              /* past the last chunk's tag */
	uint64_t stored = sse_stored_len(plain, chunk_bytes);
	if (end > stored)
		end = stored;                            /* the last chunk is short */
	out->stored_len = end - out->stored_off;
}

/* HMAC-SHA256(key, label || data). */
static int hmac(const uint8_t *key, const char *label, const uint8_t *data, size_t n,
		uint8_t out[32])
{
	uint8_t msg[64];
	size_t ll = strlen(label);
	if (ll + n > sizeof(msg))
		return -EINVAL;
	memcpy(msg, label, ll);
	memcpy(msg + ll, data, n);
	unsigned int olen = 32;
	if (!HMAC(EVP_sha256(), key, SSE_KEY_BYTES, msg, ll + n, out, &olen) || olen != 32)
		return -EIO;
	return 0;
}

int sse_stream_key(const uint8_t base[SSE_KEY_BYTES], const uint8_t oid[SSE_OID_BYTES],
		   uint8_t out[SSE_KEY_BYTES])
{
	return hmac(base, STREAM_LABEL, oid, SSE_OID_BYTES, out);
}

int sse_key_check_make(const uint8_t key[SSE_KEY_BYTES], uint8_t out[SSE_CHECK_BYTES])
{
	if (RAND_bytes(out, SSE_CHECK_SALT_BYTES) != 1)
		return -EIO;
	return hmac(key, CHECK_LABEL, out, SSE_CHECK_SALT_BYTES, out + SSE_CHECK_SALT_BYTES);
}

bool sse_key_check_ok(const uint8_t key[SSE_KEY_BYTES], const uint8_t *check, size_t len)
{
	uint8_t mac[32];
	if (len != SSE_CHECK_BYTES || hmac(key, CHECK_LABEL, check, SSE_CHECK_SALT_BYTES, mac))
		return false;
	return CRYPTO_memcmp(mac, check + SSE_CHECK_SALT_BYTES, 32) == 0;
}

/* ------------------------------------------------------------ chunks */

struct sse_ctx {
	EVP_CIPHER_CTX *enc, *dec;
};

struct sse_ctx *sse_ctx_new(const uint8_t key[SSE_KEY_BYTES])
{
	const EVP_CIPHER *ciph = gcm();
	struct sse_ctx *c = calloc(1, sizeof(*c));
	if (!c || !ciph)
		goto fail;
	c->enc = EVP_CIPHER_CTX_new();
	c->dec = EVP_CIPHER_CTX_new();
	if (!c->enc || !c->dec ||
	    EVP_EncryptInit_ex2(c->enc, ciph, key, NULL, NULL) != 1 ||
	    EVP_DecryptInit_ex2(c->dec, ciph, key, NULL, NULL) != 1)
		goto fail;
	return c;
fail:
	sse_ctx_free(c);
	return NULL;
}

void sse_ctx_free(struct sse_ctx *c)
{
	if (!c)
		return;
	EVP_CIPHER_CTX_free(c->enc);
	EVP_CIPHER_CTX_free(c->dec);
	free(c);
}

static void nonce(uint64_t idx, bool last, uint8_t iv[12])
{
	for (int i = 0; i < 8; i++)
		iv[i] = (uint8_t)(idx >> (56 - 8 * i));
	iv[8] = iv[9] = iv[10] = 0;
	iv[11] = last ? 1 : 0;
}

int sse_seal_chunk(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t len,
		   uint8_t *out)
{
	uint8_t iv[12];
	int n = 0, f = 0;
	if (!len || len > INT32_MAX)
		return -EINVAL;
	nonce(idx, last, iv);
	if (EVP_EncryptInit_ex2(c->enc, NULL, NULL, iv, NULL) != 1 ||
	    EVP_EncryptUpdate(c->enc, out, &n, in, (int)len) != 1 ||
	    EVP_EncryptFinal_ex(c->enc, out + n, &f) != 1 || (size_t)(n + f) != len ||
	    EVP_CIPHER_CTX_ctrl(c->enc, EVP_CTRL_GCM_GET_TAG, SSE_TAG_BYTES, out + len) != 1)
		return -EIO;
	return 0;
}

int sse_open_chunk(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t n,
		   uint8_t *out)
{
	uint8_t iv[12], tag[SSE_TAG_BYTES];
	int o = 0, f = 0;
	if (n <= SSE_TAG_BYTES || n > INT32_MAX)
		return -EINVAL;
	size_t len = n - SSE_TAG_BYTES;
	memcpy(tag, in + len, SSE_TAG_BYTES);
	nonce(idx, last, iv);
	if (EVP_DecryptInit_ex2(c->dec, NULL, NULL, iv, NULL) != 1 ||
	    EVP_DecryptUpdate(c->dec, out, &o, in, (int)len) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c->dec, EVP_CTRL_GCM_SET_TAG, SSE_TAG_BYTES, tag) != 1)
		return -EIO;
	if (EVP_DecryptFinal_ex(c->dec, out + o, &f) != 1) {
		explicit_bzero(out, len);
		return -EBADMSG;
	}
	return 0;
}

/* ------------------------------------------------------------ streams */

/* Plaintext bytes of chunk idx of an object of plain bytes. */
static uint32_t chunk_len(uint64_t plain, uint32_t cb, uint64_t idx)
{
	uint64_t start = idx * cb;
	return (uint32_t)(plain - start < cb ? plain - start : cb);
}

int sse_enc_init(struct sse_enc *e, const uint8_t key[SSE_KEY_BYTES], uint64_t plain,
		 uint32_t chunk_bytes)
{
	memset(e, 0, sizeof(*e));
	if (!chunk_bytes)
		return -EINVAL;
	e->plain = plain;
	e->chunk_bytes = chunk_bytes;
	e->want = plain ? chunk_len(plain, chunk_bytes, 0) : 0;
	e->ctx = sse_ctx_new(key);
	e->in = malloc(chunk_bytes);
	e->out = malloc((size_t)chunk_bytes + SSE_TAG_BYTES);
	if (!e->ctx || !e->in || !e->out) {
		sse_enc_fini(e);
		return -ENOMEM;
	}
	return 0;
}

void sse_enc_fini(struct sse_enc *e)
{
	sse_ctx_free(e->ctx);
	if (e->in)
		explicit_bzero(e->in, e->chunk_bytes);
	free(e->in);
	free(e->out);
	memset(e, 0, sizeof(*e));
}

size_t sse_enc_put(struct sse_enc *e, const uint8_t *in, size_t len)
{
	size_t room = e->want - e->fill;
	size_t n = len < room ? len : room;
	memcpy(e->in + e->fill, in, n);
	e->fill += (uint32_t)n;
	e->fed += n;
	return n;
}

bool sse_enc_full(const struct sse_enc *e)
{
	return e->want && e->fill == e->want;
}

int sse_enc_seal(struct sse_enc *e, const uint8_t **out, size_t *out_len)
{
	if (!sse_enc_full(e))
		return -EINVAL;
	bool last = e->fed == e->plain;
	int rc = sse_seal_chunk(e->ctx, e->chunk, last, e->in, e->fill, e->out);
	if (rc)
		return rc;
	*out = e->out;
	*out_len = (size_t)e->fill + SSE_TAG_BYTES;
	e->chunk++;
	e->fill = 0;
	e->want = last ? 0 : chunk_len(e->plain, e->chunk_bytes, e->chunk);
	return 0;
}

int sse_dec_init(struct sse_dec *d, const uint8_t key[SSE_KEY_BYTES], uint64_t plain,
		 uint32_t chunk_bytes, uint64_t off, uint64_t len)
{
	memset(d, 0, sizeof(*d));
	if (!chunk_bytes || !len || off + len > plain || off + len < off)
		return -EINVAL;
	struct sse_range r;
	sse_map_range(plain, chunk_bytes, off, len, &r);
	d->plain = plain;
	d->chunk_bytes = chunk_bytes;
	d->chunk = r.first_chunk;
	d->skip = r.skip;
	d->left = len;
	d->want = chunk_len(plain, chunk_bytes, d->chunk) + SSE_TAG_BYTES;
	d->ctx = sse_ctx_new(key);
	d->in = malloc((size_t)chunk_bytes + SSE_TAG_BYTES);
	d->out = malloc(chunk_bytes);
	if (!d->ctx || !d->in || !d->out) {
		sse_dec_fini(d);
		return -ENOMEM;
	}
	return 0;
}

void sse_dec_fini(struct sse_dec *d)
{
	sse_ctx_free(d->ctx);
	if (d->out)
		explicit_bzero(d->out, d->chunk_bytes);
	free(d->in);
	free(d->out);
	memset(d, 0, sizeof(*d));
}

size_t sse_dec_put(struct sse_dec *d, const uint8_t *in, size_t len)
{
	if (!d->left)
		return 0;
	size_t room = d->want - d->fill;
	size_t n = len < room ? len : room;
	memcpy(d->in + d->fill, in, n);
	d->fill += (uint32_t)n;
	return n;
}

bool sse_dec_full(const struct sse_dec *d)
{
	return d->left && d->fill == d->want;
}

int sse_dec_open_to(struct sse_dec *d, uint8_t *dst, size_t *skip, size_t *len)
{
	if (!sse_dec_full(d))
		return -EINVAL;
	uint64_t nch = sse_nchunks(d->plain, d->chunk_bytes);
	bool last = d->chunk + 1 == nch;
	int rc = sse_open_chunk(d->ctx, d->chunk, last, d->in, d->fill, dst);
	if (rc)
		return rc;
	size_t plen = d->fill - SSE_TAG_BYTES;
	size_t n = plen - d->skip;
	if (n > d->left)
		n = (size_t)d->left;
	*skip = d->skip;
	*len = n;
	d->left -= n;
	d->skip = 0;
	d->fill = 0;
	d->chunk++;
	d->want = d->left ? chunk_len(d->plain, d->chunk_bytes, d->chunk) + SSE_TAG_BYTES : 0;
	return 0;
}

int sse_dec_open(struct sse_dec *d, const uint8_t **out, size_t *out_len)
{
	size_t skip;
	int rc = sse_dec_open_to(d, d->out, &skip, out_len);
	if (!rc)
		*out = d->out + skip;
	return rc;
}
