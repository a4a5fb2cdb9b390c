/*
 * s3_put.h — the PUT pipeline: a body (the request's, or a copy pump's)
 * goes inline into the request (at most inline_max bytes) or through
 * gw_data to the PG's OSDs; once it is whole, verified and durable the
 * pipeline computes the ETag and calls the operation's commit. PutObject's
 * own commit (the default) reads the current record, checks If-Match /
 * If-None-Match against it and commits the new record conditioned on that
 * record's generation (or on there being none), reading again on CONFLICT;
 * the writer that replaced a version deletes its shards after the commit.
 *
 * Used by PutObject (s3_put.c), UploadPart (s3_part.c: a part commit) and
 * the copies (s3_copy.c: their own body source and answer).
 *
 * The new shards: until a commit takes them they are the request's; if the
 * request ends without a commit having taken them (failure, client gone)
 * they are deleted (s3_put_drop_new, and at the latest s3_put_fini). A
 * commit whose outcome is unknown (a retryable meta failure: meta may have
 * applied it) leaves them: they may be named by a record now.
 *
 * Thread: the gateway loop; no blocking call.
 */
#ifndef GATEWAY_S3_PUT_H
#define GATEWAY_S3_PUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/gw_data.h"
#include "gateway/gw_md5b.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_sse.h"

/* The state of a request built on the pipeline; an operation that needs
 * more embeds it first: struct copy_rq { struct s3_put put; ... }. */
struct s3_put {
	struct s3_rq rq;
	uint64_t size;              /* the body's length, announced */
	bool is_inline;             /* the body goes into the record */
	bool body_done;             /* the body is whole and its verdict OK */
	bool data_done;             /* inline bytes all in, or gw_data PUT durable */
	bool committing;            /* the commit has begun */
	bool new_settled;           /* the new shards' fate is decided */
	bool end_deferred;          /* body end seen while bytes were spilled */
	uint8_t *inl;               /* inline body (size bytes) */
	size_t inl_len;
	struct gw_data_put *put;    /* the data PUT (not inline) */
	struct gw_data_target target;
	/* Body bytes gw_data could not take yet (its window was full): the
	 * body is paused and they go in first when it is writable again. */
	uint8_t *spill;
	size_t spill_len, spill_cap;
	uint32_t pg;
	Iolake__Meta__ObjectRecord *cur;   /* the record being replaced */
	bool cur_read;              /* a condition needed it: cur was read (NULL: none) */
	char etag[33];
	uint64_t mtime_ms;
	/* An inline body's ETag (its MD5), hashed with the loop's other
	 * ETags at the end of the turn (gateway/gw_md5b.h). */
	struct gw_md5b_item etag_md5;
	/* CopyObject with the COPY directive: the source's headers, user
	 * metadata, checksums and (by default) tags go into the record. */
	const Iolake__Meta__ObjectRecord *meta_from;
	/* The operation's steps: commit once the data is durable (NULL:
	 * PutObject's record commit), and PutObject's commit's answer (NULL:
	 * 200 with the ETag). */
	void (*commit)(struct s3_put *p);
	void (*respond)(struct s3_put *p);
	void *commit_ud;            /* the commit's own state (s3_part) */
	/* A browser POST: the object's headers (Content-Type, Cache-Control,
	 * x-amz-meta-*, x-amz-acl, ...) come from these form fields instead
	 * of the request's headers; NULL: the request's. */
	const struct sigv4_header *form_hdrs;
	size_t n_form_hdrs;
	/* Server-side encryption (s3_sse.h): the body is encrypted on its
	 * way to gw_data (never inline); NULL: stored as sent. */
	struct s3_sse_put *sse;
};

static inline struct s3_put *s3_put_of(struct s3_rq *rq)
{
	return container_of(rq, struct s3_put, rq);
}

/* Size checks (Content-Length / x-amz-decoded-content-length, 5 GiB,
 * x-amz-tagging), the request of size bytes (at least sizeof(struct
 * s3_put)), is_inline (size <= inline_max when allow_inline, else only an
 * empty body), the body paused until s3_put_stream. NULL when it already
 * answered. */
struct s3_put *s3_put_begin(struct s3_call *c, size_t size, bool allow_inline);

/* Stream the request body (after the caller's checks): the gw_data PUT
 * started, the body read, the commit when it is whole and durable.
 * Answers errors itself. */
void s3_put_stream(struct s3_put *p);

/* For an operation that reads the body itself (browser POST, whose file
 * is one part of a form): s3_put_open starts the data path for p->size
 * bytes (is_inline set by the caller), 0 or after answering;
 * s3_put_feed hands on body bytes (back-pressure as s3_put_stream's: the
 * request's HTTP stream is paused while gw_data's window is full);
 * s3_put_feed_end says the body is whole and verified. */
int s3_put_open(struct s3_put *p);
void s3_put_feed(struct s3_put *p, const char *data, size_t len);
void s3_put_feed_end(struct s3_put *p);

/* A read callback for the check before the body (the bucket, the upload):
 * the body streams when it passed, else e is answered. */
void s3_put_on_checked(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp);

/* The storage class (s3_put_storage_class) and ACL headers of an object
 * write (PutObject, POST, CopyObject) against the bucket the gate read
 * (s3_access_for_object): S3E_OK or the error to answer before any body
 * is read. */
enum s3_err s3_put_check_headers(struct s3_rq *rq);

/* Encrypt the body as o says (kind SSE_NONE: nothing to do): a body
 * that is not empty is then never inline. Before the data path starts.
 * 0, or -ENOMEM after answering. */
int s3_put_encrypt(struct s3_put *p, const struct s3_sse_obj *o);

/* Start p's gw_data PUT (p->target set): p->size bytes, or their stored
 * length and the encryptor's object id when encrypted. As
 * gw_data_put_start. */
int s3_put_data_start(struct s3_put *p, const struct gw_data_put_cbs *cbs, void *ud);

/* The data is whole and durable (a copy pump fed it): commit. */
void s3_put_ready(struct s3_put *p);

/* Delete the new body's shards unless a commit took them or they are gone
 * already; no-op for an inline body. */
void s3_put_drop_new(struct s3_put *p);

/* A commit of the new body answered (e and res as s3_rq_submit's
 * callback got them). S3_PUT_COMMITTED: the record took the new shards
 * (the caller frees what it replaced and, while the exchange is live,
 * answers). S3_PUT_RETRY: CONFLICT with the exchange live and tries left
 * (the caller reads again and commits again). S3_PUT_FAILED: the new
 * shards are deleted unless the commit may have been applied anyway
 * (s3_rq_in_doubt), and e is answered. */
enum s3_put_outcome { S3_PUT_COMMITTED, S3_PUT_RETRY, S3_PUT_FAILED };
enum s3_put_outcome s3_put_committed(struct s3_put *p, enum s3_err e,
				     const Iolake__Meta__OpResult *res);

/* The pipeline's stop and fini hooks (s3_put_begin sets them; an
 * operation with more state calls them from its own). */
void s3_put_stop(struct s3_rq *rq);
void s3_put_fini(struct s3_rq *rq);

/* The request's x-amz-meta-* headers, as record entries (malloc'd, freed
 * with s3_put_user_meta_free); 0 or -ENOMEM. */
struct s3_put_user_meta {
	Iolake__Meta__ObjectRecord__UserMetaEntry *ents, **pents;
	char *names, *vals;
	size_t n;
};
void s3_put_user_meta_free(struct s3_put_user_meta *um);

/* The request's Content-Type, -Encoding (aws-chunked removed),
 * -Disposition, -Language, Cache-Control, Expires and x-amz-meta-* into
 * r's fields, pointing into b (release with s3_put_user_meta_free(&b->um)).
 * 0 or -ENOMEM. */
struct s3_put_hdrs {
	char ct[256], ce[256], cd[512], cc[256], ex[128], cl[64];
	struct s3_put_user_meta um;
};
int s3_put_rec_from_headers(struct s3_call *c, Iolake__Meta__ObjectRecord *r,
			    struct s3_put_hdrs *b);
/* The same from a list of headers (a browser POST's form fields). */
int s3_put_rec_from_list(const struct sigv4_header *h, size_t n, Iolake__Meta__ObjectRecord *r,
			 struct s3_put_hdrs *b);

/* x-amz-storage-class among the n headers (or form fields) h: absent or
 * STANDARD, this store's one class (what records and listings say), is
 * S3E_OK; any other value is InvalidStorageClass, so a GLACIER or
 * STANDARD_IA write is refused rather than stored as STANDARD behind the
 * client's back (MinIO and Ceph answer the same for a class they do not
 * have). */
enum s3_err s3_put_storage_class(const struct sigv4_header *h, size_t n);

#endif
