/*
 * s3_sse.c — server-side encryption as S3 shows it (contracts in
 * s3_sse.h): the SSE request headers and AWS's answers to bad ones, the
 * choice of a write's encryption (headers, else the bucket's default),
 * the key of a read (SSE-C checked against the record's salted HMAC,
 * SSE-S3 unwrapped with the master key), the record fields, the response
 * headers, and the PUT / GET stream helpers over sse_crypt.
 *
 * Does not: stream bodies itself (s3_put, s3_get and s3_copy feed the
 * helpers), store bucket configurations (s3_sse_config.c), keep any
 * customer key past the request.
 *
 * Thread: the gateway loop; the master key is set before loops start.
 */
#include "gateway/s3_sse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "common/err.h"
#include "common/hash.h"
#include "gateway/http.h"
#include "gateway/s3_util.h"

#define SEAL_LABEL "iolake-sse-s3"   /* associated data of a sealed data key */

static const struct meta_secret *master;
static bool c_allow_http;

void s3_sse_configure(const struct meta_secret *m, bool sse_c_allow_http)
{
	master = m;
	c_allow_http = sse_c_allow_http;
}

void s3_sse_obj_wipe(struct s3_sse_obj *o)
{
	explicit_bzero(o->base, sizeof(o->base));
}

/* ------------------------------------------------------------ headers */

#define H_SSE "x-amz-server-side-encryption"
#define H_C_ALG "x-amz-server-side-encryption-customer-algorithm"
#define H_C_KEY "x-amz-server-side-encryption-customer-key"
#define H_C_MD5 "x-amz-server-side-encryption-customer-key-md5"
#define H_CS_ALG "x-amz-copy-source-server-side-encryption-customer-algorithm"
#define H_CS_KEY "x-amz-copy-source-server-side-encryption-customer-key"
#define H_CS_MD5 "x-amz-copy-source-server-side-encryption-customer-key-md5"

static bool loopback(const char *a)
{
	return !strncmp(a, "127.", 4) || !strcmp(a, "::1") || !strncmp(a, "::ffff:127.", 11);
}

/* base64 of exactly n bytes (s of sl chars) into out; false if not. */
static bool unb64(const char *s, size_t sl, uint8_t *out, size_t n)
{
	size_t want = 4 * ((n + 2) / 3);
	uint8_t tmp[64];
	if (sl != want || want > 4 * sizeof(tmp) / 3)
		return false;
	int got = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)sl);
	size_t pad = (sl && s[sl - 1] == '=') + (sl > 1 && s[sl - 2] == '=');
	if (got < 0 || (size_t)got - pad != n) {
		explicit_bzero(tmp, sizeof(tmp));
		return false;
	}
	memcpy(out, tmp, n);
	explicit_bzero(tmp, sizeof(tmp));
	return true;
}

/* The SSE-C trio (copy: the copy-source one). 1 with o's key and key_md5
 * set, 0 when none of the three is there, or -1 with *e / *msg. */
static int customer_key(struct s3_call *c, bool copy, struct s3_sse_obj *o, enum s3_err *e,
			const char **msg)
{
	const struct sigv4_header *alg = s3u_hdr(c, copy ? H_CS_ALG : H_C_ALG);
	const struct sigv4_header *key = s3u_hdr(c, copy ? H_CS_KEY : H_C_KEY);
	const struct sigv4_header *md5 = s3u_hdr(c, copy ? H_CS_MD5 : H_C_MD5);
	if (!alg && !key && !md5)
		return 0;
	*e = S3E_InvalidArgument;
	if (!alg) {
		*msg = "Requests specifying Server Side Encryption with Customer provided keys must "
		       "provide a valid encryption algorithm.";
		return -1;
	}
	if (alg->value_len != 6 || strncmp(alg->value, "AES256", 6) != 0) {
		*msg = "The encryption algorithm specified is not valid. The valid value is AES256.";
		return -1;
	}
	if (!key) {
		*msg = "Requests specifying Server Side Encryption with Customer provided keys must "
		       "provide an appropriate secret key.";
		return -1;
	}
	if (!md5) {
		*msg = "Requests specifying Server Side Encryption with Customer provided keys must "
		       "provide the client calculated MD5 of the secret key.";
		return -1;
	}
	if (!unb64(key->value, key->value_len, o->base, SSE_KEY_BYTES)) {
		*msg = "The secret key was invalid for the specified algorithm.";
		return -1;
	}
	uint8_t want[16], got[16];
	hash_md5(o->base, SSE_KEY_BYTES, want);
	if (!unb64(md5->value, md5->value_len, got, 16) || CRYPTO_memcmp(want, got, 16) != 0) {
		s3_sse_obj_wipe(o);
		*msg = "The calculated MD5 hash of the key did not match the hash that was provided.";
		return -1;
	}
	const struct http_stream *s = s3_call_stream(c);
	if (!http_stream_is_tls(s) && !c_allow_http && !loopback(http_stream_peer_addr(s))) {
		s3_sse_obj_wipe(o);
		*e = S3E_InvalidRequest;
		*msg = "Requests specifying Server Side Encryption with Customer provided keys must be "
		       "made over a secure connection.";
		return -1;
	}
	memcpy(o->key_md5, md5->value, md5->value_len);   /* 24 chars, checked above */
	o->key_md5[md5->value_len] = '\0';
	return 1;
}

/* A new random data key for an SSE-S3 object, sealed. */
static enum s3_err new_data_key(struct s3_sse_obj *o, const char **msg)
{
	if (!master) {
		*msg = "Server-side encryption with SSE-S3 needs a master key (--sse-master-key-file).";
		return S3E_NotImplemented;
	}
	if (RAND_bytes(o->base, SSE_KEY_BYTES) != 1)
		return S3E_InternalError;
	/* Sealed as hex: meta_secret's blobs hold text (an open refuses a NUL). */
	char hex[2 * SSE_KEY_BYTES + 1];
	hash_hex(o->base, SSE_KEY_BYTES, hex);
	int n = meta_secret_seal(master, SEAL_LABEL, hex, 2 * SSE_KEY_BYTES, o->wrapped);
	explicit_bzero(hex, sizeof(hex));
	if (n < 0)
		return S3E_InternalError;
	o->wrapped_len = (size_t)n;
	meta_secret_id_str(master->key_id, o->key_id);
	return S3E_OK;
}

enum s3_err s3_sse_for_write(struct s3_call *c, const Iolake__Meta__Bucket *bkt,
			     struct s3_sse_obj *o, const char **msg)
{
	memset(o, 0, sizeof(*o));
	*msg = NULL;
	enum s3_err e = S3E_OK;
	int ck = customer_key(c, false, o, &e, msg);
	if (ck < 0)
		return e;
	const struct sigv4_header *h = s3u_hdr(c, H_SSE);
	if (h) {
		if (ck) {
			s3_sse_obj_wipe(o);
			*msg = "Server Side Encryption with Customer provided key is incompatible with "
			       "the encryption method specified";
			return S3E_InvalidArgument;
		}
		if (h->value_len == 7 && strncmp(h->value, "aws:kms", 7) == 0) {
			*msg = "Server-side encryption with AWS KMS keys (aws:kms) is not supported; "
			       "use AES256.";
			return S3E_NotImplemented;
		}
		if (h->value_len != 6 || strncmp(h->value, "AES256", 6) != 0) {
			*msg = "The encryption method specified is not supported";
			return S3E_InvalidArgument;
		}
		o->kind = IOLAKE__META__SSE_KIND__SSE_S3;
		return new_data_key(o, msg);
	}
	if (ck) {
		o->kind = IOLAKE__META__SSE_KIND__SSE_C;
		return sse_key_check_make(o->base, o->check) ? S3E_InternalError : S3E_OK;
	}
	if (bkt && bkt->default_sse == IOLAKE__META__SSE_KIND__SSE_S3) {
		o->kind = IOLAKE__META__SSE_KIND__SSE_S3;
		return new_data_key(o, msg);
	}
	return S3E_OK;
}

enum s3_err s3_sse_for_read(struct s3_call *c, const Iolake__Meta__ObjectRecord *r,
			    bool copy_source, struct s3_sse_obj *o, const char **msg)
{
	memset(o, 0, sizeof(*o));
	*msg = NULL;
	enum s3_err e = S3E_OK;
	int ck = customer_key(c, copy_source, o, &e, msg);
	if (ck < 0)
		return e;
	switch (r->sse) {
	case IOLAKE__META__SSE_KIND__SSE_C:
		if (!ck) {
			*msg = copy_source
				? "The source object was stored using a form of Server Side Encryption. "
				  "The correct parameters must be provided to retrieve the object."
				: "The object was stored using a form of Server Side Encryption. The "
				  "correct parameters must be provided to retrieve the object.";
			return S3E_InvalidRequest;
		}
		if (!sse_key_check_ok(o->base, r->sse_key_check.data, r->sse_key_check.len)) {
			s3_sse_obj_wipe(o);
			*msg = "Access Denied: the SSE-C key does not match the object's key.";
			return S3E_AccessDenied;
		}
		o->kind = IOLAKE__META__SSE_KIND__SSE_C;
		return S3E_OK;
	case IOLAKE__META__SSE_KIND__SSE_S3: {
		if (ck) {
			s3_sse_obj_wipe(o);
			*msg = "The encryption parameters are not applicable to this object.";
			return S3E_InvalidRequest;
		}
		char hex[2 * SSE_KEY_BYTES + 1];
		uint32_t kid = 0;
		int n = meta_secret_open(master, SEAL_LABEL, r->sse_wrapped_key.data,
					 r->sse_wrapped_key.len, hex, sizeof(hex), &kid);
		if (n != 2 * SSE_KEY_BYTES || hash_unhex(hex, SSE_KEY_BYTES, o->base)) {
			explicit_bzero(hex, sizeof(hex));
			s3_sse_obj_wipe(o);
			*msg = n == -ENOKEY ? "The object's data key was sealed by another master key."
					    : "The object's data key does not open.";
			return S3E_InternalError;
		}
		explicit_bzero(hex, sizeof(hex));
		o->kind = IOLAKE__META__SSE_KIND__SSE_S3;
		return S3E_OK;
	}
	default:
		if (ck) {
			s3_sse_obj_wipe(o);
			*msg = "The encryption parameters are not applicable to this object.";
			return S3E_InvalidRequest;
		}
		return S3E_OK;
	}
}

void s3_sse_to_record(const struct s3_sse_obj *o, Iolake__Meta__ObjectRecord *r)
{
	r->sse = o->kind;
	if (o->kind == IOLAKE__META__SSE_KIND__SSE_NONE)
		return;
	r->sse_chunk_bytes = SSE_CHUNK_BYTES;
	if (o->kind == IOLAKE__META__SSE_KIND__SSE_C) {
		r->sse_key_check.data = (uint8_t *)o->check;
		r->sse_key_check.len = SSE_CHECK_BYTES;
	} else {
		r->sse_wrapped_key.data = (uint8_t *)o->wrapped;
		r->sse_wrapped_key.len = o->wrapped_len;
		r->sse_key_id = (char *)o->key_id;
	}
}

void s3_sse_headers(struct s3_call *c, const struct s3_sse_obj *o)
{
	struct http_stream *s = s3_call_stream(c);
	if (o->kind == IOLAKE__META__SSE_KIND__SSE_S3) {
		http_add_header(s, "x-amz-server-side-encryption", "AES256");
	} else if (o->kind == IOLAKE__META__SSE_KIND__SSE_C) {
		http_add_header(s, "x-amz-server-side-encryption-customer-algorithm", "AES256");
		http_add_header(s, "x-amz-server-side-encryption-customer-key-MD5", o->key_md5);
	}
}

void s3_sse_record_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r)
{
	struct http_stream *s = s3_call_stream(c);
	if (r->sse == IOLAKE__META__SSE_KIND__SSE_S3)
		http_add_header(s, "x-amz-server-side-encryption", "AES256");
	else if (r->sse == IOLAKE__META__SSE_KIND__SSE_C)
		http_add_header(s, "x-amz-server-side-encryption-customer-algorithm", "AES256");
}

static uint32_t chunk_of(const Iolake__Meta__ObjectRecord *r)
{
	return r->sse_chunk_bytes ? r->sse_chunk_bytes : SSE_CHUNK_BYTES;
}

uint64_t s3_sse_stored_len(const Iolake__Meta__ObjectRecord *r, uint64_t plain)
{
	return sse_stored_len(plain, chunk_of(r));
}

/* ------------------------------------------------------------ PUT */

struct s3_sse_put {
	struct s3_sse_obj obj;
	uint8_t oid[SSE_OID_BYTES];
	uint64_t stored;
	struct sse_enc enc;
	/* The ETag's MD5: SSE-S3 of the plaintext (as AWS); SSE-C of the
	 * chunks' GCM tags (opaque, as AWS's, and bound to the content
	 * without a second pass over it). */
	struct hash_stream *md5;
};

struct s3_sse_put *s3_sse_put_new(const struct s3_sse_obj *o, uint64_t plain)
{
	struct s3_sse_put *sp = calloc(1, sizeof(*sp));
	uint8_t key[SSE_KEY_BYTES];
	if (!sp)
		return NULL;
	sp->obj = *o;
	sp->stored = sse_stored_len(plain, SSE_CHUNK_BYTES);
	if (RAND_bytes(sp->oid, sizeof(sp->oid)) != 1 || sse_stream_key(o->base, sp->oid, key) ||
	    sse_enc_init(&sp->enc, key, plain, SSE_CHUNK_BYTES))
		goto fail;
	explicit_bzero(key, sizeof(key));
	if (!(sp->md5 = hash_stream_new(HASH_MD5)))
		goto fail;
	return sp;
fail:
	explicit_bzero(key, sizeof(key));
	s3_sse_put_free(sp);
	return NULL;
}

void s3_sse_put_free(struct s3_sse_put *sp)
{
	if (!sp)
		return;
	s3_sse_obj_wipe(&sp->obj);
	if (sp->enc.in)
		sse_enc_fini(&sp->enc);
	if (sp->md5)
		hash_stream_free(sp->md5);
	free(sp);
}

const struct s3_sse_obj *s3_sse_put_obj(const struct s3_sse_put *sp)
{
	return &sp->obj;
}

const uint8_t *s3_sse_put_oid(const struct s3_sse_put *sp)
{
	return sp->oid;
}

uint64_t s3_sse_put_stored_len(const struct s3_sse_put *sp)
{
	return sp->stored;
}

int s3_sse_put_feed(struct s3_sse_put *sp, const uint8_t *in, size_t len, struct buf **out)
{
	*out = NULL;
	bool tags = sp->obj.kind == IOLAKE__META__SSE_KIND__SSE_C;
	if (!tags)
		hash_stream_update(sp->md5, in, len);
	/* Room for every chunk this input can complete. */
	size_t cap = (len / SSE_CHUNK_BYTES + 2) * ((size_t)SSE_CHUNK_BYTES + SSE_TAG_BYTES);
	struct buf *b = NULL;
	while (len) {
		size_t n = sse_enc_put(&sp->enc, in, len);
		in += n;
		len -= n;
		if (!sse_enc_full(&sp->enc)) {
			if (!n)
				break;   /* past the announced size: the body's verdict says so */
			continue;
		}
		const uint8_t *sealed;
		size_t sl;
		int rc = sse_enc_seal(&sp->enc, &sealed, &sl);
		if (rc || (!b && !(b = buf_new(cap)))) {
			if (b)
				buf_unref(b);
			return rc ? rc : -ENOMEM;
		}
		memcpy(b->data + b->len, sealed, sl);
		b->len += sl;
		if (tags)
			hash_stream_update(sp->md5, sealed + sl - SSE_TAG_BYTES, SSE_TAG_BYTES);
	}
	*out = b;
	return 0;
}

void s3_sse_put_etag(struct s3_sse_put *sp, char out[33])
{
	uint8_t d[16];
	hash_stream_final(sp->md5, d);
	hash_hex(d, 16, out);
}

/* ------------------------------------------------------------ GET */

struct s3_sse_get {
	uint8_t base[SSE_KEY_BYTES];
	struct sse_dec dec;
	bool live;                    /* dec is set up */
	struct buf_slice held;        /* a stored piece not all fed yet */
	bool holding;
};

struct s3_sse_get *s3_sse_get_new(const struct s3_sse_obj *o)
{
	struct s3_sse_get *sg = calloc(1, sizeof(*sg));
	if (sg)
		memcpy(sg->base, o->base, SSE_KEY_BYTES);
	return sg;
}

static void get_reset(struct s3_sse_get *sg)
{
	if (sg->live)
		sse_dec_fini(&sg->dec);
	sg->live = false;
	if (sg->holding)
		buf_unref(sg->held.buf);
	sg->holding = false;
}

void s3_sse_get_free(struct s3_sse_get *sg)
{
	if (!sg)
		return;
	get_reset(sg);
	explicit_bzero(sg->base, sizeof(sg->base));
	free(sg);
}

int s3_sse_get_run(struct s3_sse_get *sg, const struct gw_data_layout *l, uint64_t plain,
		   uint64_t off, uint64_t len, uint64_t *stored_off, uint64_t *stored_len)
{
	uint8_t key[SSE_KEY_BYTES];
	struct sse_range r;
	get_reset(sg);
	if (!len || off + len > plain || l->size != sse_stored_len(plain, SSE_CHUNK_BYTES))
		return IOL_ECORRUPT;
	sse_map_range(plain, SSE_CHUNK_BYTES, off, len, &r);
	if (sse_stream_key(sg->base, l->object_id, key))
		return -EIO;
	int rc = sse_dec_init(&sg->dec, key, plain, SSE_CHUNK_BYTES, off, len);
	explicit_bzero(key, sizeof(key));
	if (rc)
		return rc;
	sg->live = true;
	*stored_off = r.stored_off;
	*stored_len = r.stored_len;
	return 0;
}

/* Chunks decrypted into one buffer handed out: fewer, larger response
 * writes (as gw_data's shard-sized pieces), at most this much plaintext
 * held per GET. */
#define GET_BATCH_CHUNKS 16

int s3_sse_get_read(struct s3_sse_get *sg, struct gw_data_get *get, struct buf_slice *out)
{
	if (!sg->live)
		return IOL_ECORRUPT;
	struct buf *b = NULL;
	size_t first = 0, end = 0;   /* the range's bytes in b: [first, end) */
	int rc = 0;
	for (;;) {
		if (sse_dec_full(&sg->dec)) {
			size_t skip, n;
			if (!b && !(b = buf_new((size_t)GET_BATCH_CHUNKS * SSE_CHUNK_BYTES)))
				return -ENOMEM;
			/* Chunks after the first start at their first byte: the
			 * range's bytes stay contiguous in b. */
			if (sse_dec_open_to(&sg->dec, b->data + end, &skip, &n)) {
				buf_unref(b);
				return IOL_ECORRUPT;   /* a chunk that does not authenticate */
			}
			if (end == 0)
				first = skip;
			else if (skip)
				memmove(b->data + end, b->data + end + skip, n);
			end += (end == 0 ? skip : 0) + n;
			if (end + SSE_CHUNK_BYTES > b->cap || !sg->dec.left)
				break;
			continue;
		}
		if (!sg->holding) {
			rc = gw_data_get_read(get, &sg->held);
			if (rc == 0 && sg->dec.left)
				rc = IOL_ECORRUPT;   /* the stored range ended early */
			if (rc <= 0)
				break;
			rc = 0;
			sg->holding = true;
		}
		size_t n = sse_dec_put(&sg->dec, sg->held.buf->data + sg->held.off, sg->held.len);
		sg->held.off += n;
		sg->held.len -= n;
		if (!sg->held.len) {
			buf_unref(sg->held.buf);
			sg->holding = false;
		} else if (!n) {
			rc = IOL_ECORRUPT;   /* more stored bytes than the range */
			break;
		}
	}
	if (b && end > first && (rc == 0 || rc == -EAGAIN)) {
		b->len = end;
		out->buf = b;
		out->off = first;
		out->len = end - first;
		return 1;   /* verified bytes; what comes next, with the next read */
	}
	if (b)
		buf_unref(b);
	return rc;
}
