/*
 * s3_ops_int.h — what the S3 operation modules share inside the gateway:
 * struct s3_ops (one per gateway loop), struct opx (one per request in
 * flight) and the helpers every handler uses. Not an API outside gateway/.
 *
 * Modules: s3_ops.c (helpers, credentials, buckets, listings, lifecycle),
 * s3_object.c (PutObject, GetObject, HeadObject, DeleteObject; the PUT
 * pipeline the others reuse), s3_multipart.c (the multipart upload ops),
 * s3_copy.c (CopyObject, UploadPartCopy: the server-side copy pump),
 * s3_delete_multi.c (DeleteObjects), s3_tagging.c (object and bucket
 * tagging, small XML bodies), s3_cond_ops.c (conditional headers),
 * s3_attrs.c (checksums in records and responses, GetObjectAttributes). Each
 * module that serves operations has a bind function that fills its
 * entries of the server's ops table, called from s3_ops_bind.
 *
 * Thread: the gateway loop, like everything in s3_ops.
 */
#ifndef GATEWAY_S3_OPS_INT_H
#define GATEWAY_S3_OPS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_data.h"
#include "gateway/gw_gc.h"
#include "gateway/gw_rec.h"
#include "gateway/gw_heal.h"
#include "gateway/s3_ops.h"
#include "gateway/s3_server.h"
#include "meta/client.h"
#include "proto/meta.pb-c.h"

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define COMMIT_TRIES 8
#define MAX_WRITES 4            /* response writes in flight per GET */
#define USER_CACHE 64

struct user_ent {
	char key[S3_AUTH_SECRET_MAX];
	char user[64];
};

struct s3_ops {
	uv_loop_t *loop;
	struct meta_client *mc;
	struct gw_map *map;
	struct gw_data *data;
	char region[64];
	uint32_t inline_max;
	unsigned quorum;
	struct metrics_registry *reg;
	bool own_reg;
	struct gw_gc *gc;               /* shard GC worker; NULL: disabled */
	struct gw_heal *heal;           /* FlagPgs batcher (degraded PGs seen) */
	struct metrics_counter *m_req[S3_OP__COUNT];
	struct metrics_counter *m_unavail;
	struct user_ent users[USER_CACHE]; /* access key -> user (owners) */
	unsigned users_next;
};

/* One request in flight. */
struct opx {
	struct s3_ops *o;
	struct s3_call *c;          /* NULL once the exchange is over */
	unsigned pending;           /* meta calls and data callbacks owed */
	unsigned writes;            /* response writes in flight */
	struct buf *wbufs[MAX_WRITES];
	unsigned whead;
	char bucket[S3_BUCKET_MAX + 1];
	char *key;
	int tries;
	/* PutObject */
	uint64_t size;
	bool is_inline, body_done, data_done, bucket_checked, cur_checked, committing;
	uint8_t *inl;
	size_t inl_len;
	struct gw_data_put *put;
	struct gw_data_target target;
	/* Body bytes gw_data could not take yet (its window was full): the
	 * body is paused and they go in first when it is writable again. */
	uint8_t *spill;
	size_t spill_len, spill_cap;
	bool end_deferred;          /* body end seen while bytes were spilled */
	uint32_t pg;
	Iolake__Meta__ObjectRecord *cur;   /* record being replaced / deleted */
	char etag[33];
	uint64_t mtime_ms;
	/* GetObject / HeadObject */
	Iolake__Meta__ObjectRecord *rec;
	struct gw_data_get *get;
	struct gw_data_layout lay;  /* the GET's layout: outlives get */
	uint64_t off, len;
	bool partial, started, ended, head;
	/* s3_multipart.c / s3_copy.c: hooks into the PUT pipeline, and the
	 * multipart GET (s3_object.c) */
	void (*commit)(struct opx *x);     /* data durable: commit (NULL: PutObject's) */
	void (*respond)(struct opx *x);    /* PutObject commit done: answer (NULL: ETag) */
	const Iolake__Meta__ObjectRecord *meta_from; /* CopyObject COPY: metadata source */
	void *ext;                         /* the module's own per-request state */
	void (*ext_free)(void *ext);       /* releases ext with the opx */
	void *part;                        /* s3_multipart's part commit state */
	void (*part_free)(void *part);     /* (beside a copy's ext in UploadPartCopy) */
	uint32_t mseg;                     /* multipart GET: segment being read */
	uint64_t mpos, mend;               /* object bytes [mpos, mend) still to read */
	bool mpu_get;                      /* the GET walks rec->segments */
};

/* ------------------------------------------------------------ helpers (s3_ops.c) */

/* A deep copy of a protobuf message (pack + unpack); NULL on no memory. */
ProtobufCMessage *s3o_copy_msg(const ProtobufCMessage *m);
/* Free an unpacked message; NULL is fine. */
void s3o_free_msg(void *m);
/* Unix milliseconds now. */
uint64_t s3o_wall_ms(void);
/* RFC 7231 date (Last-Modified) and ISO 8601 with milliseconds (XML). */
void s3o_http_date(uint64_t ms, char out[40]);
void s3o_iso_date(uint64_t ms, char out[40]);
/* A request header, or NULL; s3o_hdr_str copies its value NUL-terminated
 * (truncated to cap) into buf. */
const struct sigv4_header *s3o_hdr(struct s3_call *c, const char *name);
char *s3o_hdr_str(struct s3_call *c, const char *name, char *buf, size_t cap);
/* <name>v</name>, v percent-encoded when url (encoding-type=url in the
 * listings). */
void s3o_key_elem(struct xml_w *w, const char *name, const char *v, bool url);
/* A query parameter's value, or NULL when absent or valueless. */
const char *s3o_qval(const struct s3_req *r, const char *name);

/* The request's opx (bucket and key copied, finish hook set); NULL on no
 * memory (answer InternalError yourself). */
struct opx *opx_new(struct s3_call *c);
/* Take back one owed callback; false when the request is gone (the opx
 * may have been freed: touch nothing). */
bool opx_back(struct opx *x);
/* Free when the exchange is over and nothing is owed. */
void opx_maybe_free(struct opx *x);

/* A meta RPC / a submitted op on behalf of x (counted in x->pending; the
 * callback must call opx_back or decrement pending). 0 or an error (then
 * nothing is owed). */
int s3o_mcall(struct opx *x, unsigned method, const ProtobufCMessage *req, meta_client_cb cb);
int s3o_msubmit(struct opx *x, Iolake__Meta__Op *op, meta_client_submit_cb cb);
/* A meta client failure as the S3 error to answer with. */
enum s3_err s3o_meta_err(int err);
/* Answer the S3 error (no-op when the exchange is over). */
void s3o_fail(struct opx *x, enum s3_err e, const char *msg);
/* The user owning the request's access key (falls back to the key). */
const char *s3o_owner_of(struct s3_ops *o, struct s3_call *c);

/* ------------------------------------------------------------ small XML bodies (s3_tagging.c) */

/* Read the request body (at most max bytes, else
 * MaxMessageLengthExceeded) into x->inl / x->inl_len (x->size = the
 * announced length), then on_end(c, verdict); a request without a body
 * calls on_end at once. S3E_OK, or the error to answer with (nothing
 * started). */
enum s3_err s3o_small_body(struct opx *x, size_t max, s3_body_end_fn on_end);
/* The s3_body_fn of s3o_small_body. */
void s3o_body_collect(struct s3_call *c, const char *data, size_t len);

/* ------------------------------------------------------------ tagging (s3_tagging.c) */

/* x-amz-tagging-count when the record has tags. */
void s3o_tagging_count_header(struct http_stream *s, const Iolake__Meta__ObjectRecord *r);
/* The request's x-amz-tagging header checked and, when r is not NULL, set
 * as r's tags (*mem holds them: s3o_tagging_mem_free after use). S3E_OK
 * (also without the header), InvalidTag / InvalidArgument with *msg, or
 * InternalError (no memory). */
enum s3_err s3o_tagging_from_header(struct s3_call *c, Iolake__Meta__ObjectRecord *r, void **mem,
				    const char **msg);
void s3o_tagging_mem_free(void *mem);

/* ------------------------------------------------------------ conditionals (s3_cond_ops.c) */

/* GET/HEAD: evaluate the conditional headers against r; true when the
 * request was answered (304 Not Modified or 412), false to go on. */
bool s3o_cond_get(struct opx *x, const Iolake__Meta__ObjectRecord *r);
/* GET/HEAD with a Range: whether to serve it — true without If-Range or
 * when If-Range matches r (ETag or Last-Modified), false to ignore the
 * Range and answer the whole object (RFC 7233 section 3.2). */
bool s3o_cond_range_ok(struct opx *x, const Iolake__Meta__ObjectRecord *r);
/* PUT: If-None-Match: * / If-Match against the current record (NULL:
 * none). S3E_OK, PreconditionFailed, NoSuchKey (If-Match, no object) or
 * NotImplemented (If-None-Match other than *). */
enum s3_err s3o_cond_put(struct s3_call *c, const Iolake__Meta__ObjectRecord *cur);
/* ------------------------------------------------------------ the PUT pipeline (s3_object.c)
 * PutObject, UploadPart and the copies share it: a body (the request's or
 * a copy pump's) goes inline into x->inl or through gw_data to x->pg's
 * OSDs; once it is whole and durable, put_maybe_commit computes x->etag
 * and calls x->commit (NULL: PutObject's conditional record commit, then
 * x->respond). */

/* Size checks (Content-Length / x-amz-decoded-content-length, 5 GiB),
 * the opx, x->is_inline (size <= inline_max when allow_inline, else only
 * an empty body), the body paused. NULL when it already answered. */
struct opx *s3o_put_begin(struct s3_call *c, bool allow_inline);
/* Stream the request body (after the caller's checks): gw_data PUT
 * started, body read, commit when done. Answers errors itself. */
void s3o_put_stream(struct opx *x);
/* The data is whole and durable (copy pumps): commit. */
void s3o_put_ready(struct opx *x);
/* The new body's shards, when its record will not be committed. */
void s3o_put_drop_new(struct opx *x);
/* The request's x-amz-meta-* headers, as record entries (malloc'd, freed
 * with s3o_user_meta_free); 0 or -ENOMEM. */
struct s3o_user_meta {
	Iolake__Meta__ObjectRecord__UserMetaEntry *ents, **pents;
	char *names, *vals;
	size_t n;
};
int s3o_user_meta_get(struct s3_call *c, struct s3o_user_meta *um);
void s3o_user_meta_free(struct s3o_user_meta *um);
/* The request's Content-Type, -Encoding (aws-chunked removed),
 * -Disposition, -Language, Cache-Control, Expires and x-amz-meta-* into
 * r's fields, pointing into b (release with s3o_user_meta_free(&b->um)).
 * 0 or -ENOMEM. */
struct s3o_hdr_bufs {
	char ct[256], ce[256], cd[512], cc[256], ex[128], cl[64];
	struct s3o_user_meta um;
};
int s3o_rec_from_headers(struct s3_call *c, Iolake__Meta__ObjectRecord *r, struct s3o_hdr_bufs *b);

/* ------------------------------------------------------------ handlers */

/* s3_object.c */
void s3o_put_object(struct s3_call *c);
void s3o_get_object(struct s3_call *c);
void s3o_delete_object(struct s3_call *c);

/* Bind functions: fill the module's entries of the ops table. */
void s3_delete_multi_bind(struct s3_server_cfg *s);   /* s3_delete_multi.c */
void s3_tagging_bind(struct s3_server_cfg *s);        /* s3_tagging.c */
/* ------------------------------------------------------------ checksums (s3_attrs.c) */

/* The verified body's additional checksum (s3_call_checksum) as a record
 * entry into *out, pointing into the call (valid while it is); false when
 * the request had none. */
bool s3o_record_checksum(const struct s3_call *c, Iolake__Meta__Checksum *out);
/* An upload's response: x-amz-checksum-<algo> of the verified body, when
 * there was one. */
void s3o_put_checksum_header(struct s3_call *c);
/* The request says x-amz-checksum-mode: ENABLED. */
bool s3o_checksum_mode(struct s3_call *c);
/* The record's checksum as response headers (x-amz-checksum-<algo>,
 * x-amz-checksum-type). Only for a response carrying the whole object. */
void s3o_checksum_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r);
/* GetObjectAttributes into the ops table. */
void s3_attrs_bind(struct s3_server_cfg *s);
/* s3_multipart.c, s3_copy.c: fill their entries of the ops table. */
void s3_multipart_bind(struct s3_server_cfg *s);
void s3_copy_bind(struct s3_server_cfg *s);
/* s3_multipart.c: make x's commit a part commit of the request's upload
 * id and part number (state in x->part); UploadPartCopy uses it with the
 * CopyPartResult answer. 0 or -ENOMEM. */
int s3_mpu_part_setup(struct opx *x, bool copy);

#endif
