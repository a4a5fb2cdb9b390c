/*
 * s3_sse.h — server-side encryption as S3 shows it (issue 18): the
 * request's SSE headers (x-amz-server-side-encryption, the SSE-C trio and
 * its x-amz-copy-source- twin) checked with AWS's errors, the encryption a
 * write gets (its headers, else the bucket's default), the key a read
 * needs (the customer's, checked against the record's salted HMAC; or the
 * object's data key, unwrapped with the master key), the record fields,
 * and the response headers. The cipher itself is sse_crypt.h; the data
 * paths (s3_put, s3_get, s3_copy) call the stream helpers below.
 *
 * Keys: the master key (--sse-master-key-file; aio makes DATA/sse.key) is
 * a meta/secret.h key file, given once at start (s3_sse_configure); an
 * SSE-S3 object's random data key is sealed with it by meta_secret_seal
 * (its key id in the blob and in the record). A customer key lives only
 * in the request.
 *
 * SSE-C needs TLS as AWS does, unless the client is on loopback or
 * --sse-c-allow-http was given.
 *
 * Thread: the gateway loop (the master key is set before any loop runs).
 */
#ifndef GATEWAY_S3_SSE_H
#define GATEWAY_S3_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "gateway/gw_data.h"
#include "gateway/s3_err.h"
#include "gateway/s3_server.h"
#include "gateway/sse_crypt.h"
#include "meta/secret.h"
#include "proto/meta.pb-c.h"

/* The master key (NULL: SSE-S3 refused with a clear error) and whether
 * SSE-C is accepted over plain HTTP from other hosts. Once, at start. */
void s3_sse_configure(const struct meta_secret *master, bool sse_c_allow_http);

/* One object's (or upload's) encryption, for a write or a read. */
struct s3_sse_obj {
	Iolake__Meta__SseKind kind;        /* SSE_NONE: none */
	uint8_t base[SSE_KEY_BYTES];       /* customer key, or the data key */
	uint8_t check[SSE_CHECK_BYTES];    /* SSE_C: the record's check value */
	uint8_t wrapped[META_SECRET_BLOB_MAX];   /* SSE_S3: the sealed data key */
	size_t wrapped_len;
	char key_id[9];                    /* SSE_S3: the master key's id */
	char key_md5[32];                  /* SSE_C: base64 MD5 of the key, as sent */
};

/* Wipe o's key bytes. */
void s3_sse_obj_wipe(struct s3_sse_obj *o);

/* The encryption a write asks for: its x-amz-server-side-encryption /
 * SSE-C headers, else bkt's default (bkt may be NULL). S3E_OK with *o
 * (kind SSE_NONE: none), or the error with *msg (AWS's words). */
enum s3_err s3_sse_for_write(struct s3_call *c, const Iolake__Meta__Bucket *bkt,
			     struct s3_sse_obj *o, const char **msg);

/* The key to read r (or to write a part of an upload whose meta is r):
 * copy_source reads the x-amz-copy-source-server-side-encryption-
 * customer-* headers. S3E_OK with *o (kind SSE_NONE when r is not
 * encrypted), or InvalidRequest (no key for an SSE-C object, a key for
 * one that is not), AccessDenied (another key), InvalidArgument (the
 * headers themselves), InternalError (the master key cannot open it). */
enum s3_err s3_sse_for_read(struct s3_call *c, const Iolake__Meta__ObjectRecord *r,
			    bool copy_source, struct s3_sse_obj *o, const char **msg);

/* o's record fields into r (pointing into o: o must outlive r's use). */
void s3_sse_to_record(const struct s3_sse_obj *o, Iolake__Meta__ObjectRecord *r);

/* The response headers of o (x-amz-server-side-encryption: AES256, or
 * the SSE-C algorithm and key MD5). */
void s3_sse_headers(struct s3_call *c, const struct s3_sse_obj *o);

/* The same from a record alone (no customer key at hand: the SSE-C
 * algorithm without the key MD5), as CompleteMultipartUpload answers. */
void s3_sse_record_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r);

/* The stored length of an encrypted run of plain bytes (r's chunking). */
uint64_t s3_sse_stored_len(const Iolake__Meta__ObjectRecord *r, uint64_t plain);

/* ------------------------------------------------------------ streams */

/* A PUT's encryptor: the object id its gw_data PUT must use, plaintext in,
 * stored bytes out, the plaintext MD5 (SSE-S3's ETag). */
struct s3_sse_put;
struct s3_sse_put *s3_sse_put_new(const struct s3_sse_obj *o, uint64_t plain);
void s3_sse_put_free(struct s3_sse_put *sp);
const struct s3_sse_obj *s3_sse_put_obj(const struct s3_sse_put *sp);
const uint8_t *s3_sse_put_oid(const struct s3_sse_put *sp);
uint64_t s3_sse_put_stored_len(const struct s3_sse_put *sp);
/* The stored bytes of len more plaintext bytes: *out a new buffer
 * (NULL when no chunk completed), or -ENOMEM / -EIO. */
int s3_sse_put_feed(struct s3_sse_put *sp, const uint8_t *in, size_t len, struct buf **out);
/* The ETag, once every byte was fed: SSE-S3 the plaintext's MD5 (as
 * AWS); SSE-C the MD5 of the chunks' GCM tags (AWS: not the MD5 of the
 * object data). The PUT's gw_data computes no MD5 of its own
 * (gw_data_put_no_etag). */
void s3_sse_put_etag(struct s3_sse_put *sp, char out[33]);

/* A GET's decryptor: for each run (a layout: the object, or one segment
 * of a multipart object) s3_sse_get_run maps the plaintext range to the
 * stored range to ask gw_data for, then s3_sse_get_read is
 * gw_data_get_read's twin handing out plaintext (IOL_ECORRUPT when a
 * chunk does not authenticate). */
struct s3_sse_get;
struct s3_sse_get *s3_sse_get_new(const struct s3_sse_obj *o);
void s3_sse_get_free(struct s3_sse_get *sg);
int s3_sse_get_run(struct s3_sse_get *sg, const struct gw_data_layout *l, uint64_t plain,
		   uint64_t off, uint64_t len, uint64_t *stored_off, uint64_t *stored_len);
int s3_sse_get_read(struct s3_sse_get *sg, struct gw_data_get *get, struct buf_slice *out);

#endif
