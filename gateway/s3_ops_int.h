/*
 * s3_ops_int.h — what the S3 operation modules share inside the gateway:
 * struct s3_ops (one per gateway loop), struct opx (one per request in
 * flight) and the helpers every handler uses. Not an API outside gateway/.
 *
 * Modules: s3_ops.c (helpers, credentials, buckets, listings, lifecycle),
 * s3_object.c (PutObject, GetObject, HeadObject, DeleteObject; the PUT
 * pipeline the others reuse), s3_multipart.c (the multipart upload ops),
 * s3_copy.c (CopyObject, UploadPartCopy: the server-side copy pump). Each
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

/* ------------------------------------------------------------ records and shards (s3_object.c) */

/* Whether the record's body is inline (no shards). */
bool s3o_rec_is_inline(const Iolake__Meta__ObjectRecord *r);
/* The record's shard layout into *l (release with gw_data_layout_clear):
 * 0, IOL_ECORRUPT (malformed, or not matching the record's size), -ENOMEM. */
int s3o_rec_layout(const Iolake__Meta__ObjectRecord *r, struct gw_data_layout *l);
/* Best effort: delete the shards of a version no record names any more. */
void s3o_drop_shards(struct s3_ops *o, const Iolake__Meta__ObjectRecord *r);
/* gw_data_delete completion that only logs a partial failure. */
void s3o_on_drop_done(void *ud, int status, uint32_t failed);

/* Whether r is a multipart record (its body in rec->segments, each with
 * its own encoded layout). */
bool s3o_rec_is_multipart(const Iolake__Meta__ObjectRecord *r);
/* A segment's layout (multipart records): as s3o_rec_layout, checked
 * against the segment's length. */
int s3o_seg_layout(const Iolake__Meta__Segment *sg, struct gw_data_layout *l);
/* Best effort: delete the shards of one encoded layout (a part's). */
void s3o_drop_layout(struct s3_ops *o, const uint8_t *enc, size_t len);

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

/* s3_multipart.c, s3_copy.c: fill their entries of the ops table. */
void s3_multipart_bind(struct s3_server_cfg *s);
void s3_copy_bind(struct s3_server_cfg *s);
/* s3_multipart.c: make x's commit a part commit of the request's upload
 * id and part number (state in x->part); UploadPartCopy uses it with the
 * CopyPartResult answer. 0 or -ENOMEM. */
int s3_mpu_part_setup(struct opx *x, bool copy);

#endif
