/*
 * s3_util.h — small helpers the S3 handlers share that know no request
 * state: protobuf message copies, clocks and date formats, request headers
 * and query parameters.
 *
 * Pure apart from the clock; any thread.
 *
 * Owns nothing. Knows no request state and makes no meta call.
 */
#ifndef GATEWAY_S3_UTIL_H
#define GATEWAY_S3_UTIL_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_server.h"

/* A deep copy of a protobuf message (pack + unpack); NULL on no memory. */
ProtobufCMessage *s3u_copy_msg(const ProtobufCMessage *m);
/* Free an unpacked message (a copy); NULL is fine. */
void s3u_free_msg(void *m);
/* The sub-message in *field (a message pointer field of a call's answer),
 * to keep past the callback: detached from the answer (*field cleared)
 * when the caller took the answer (own: rpc_answer_take gave it), else a
 * copy. Free it with s3u_free_msg. NULL when *field is NULL or memory ran
 * out. */
void *s3u_keep_sub(bool own, void *field);

/* src into dst[cap] (cap > 0), cut to cap - 1 bytes and terminated:
 * snprintf's "%s" without printf's cost on the request path. */
void s3u_copy_str(char *dst, size_t cap, const char *src);

/* Unix milliseconds now. */
uint64_t s3u_wall_ms(void);
/* RFC 7231 date (Last-Modified) and ISO 8601 with milliseconds (XML). */
void s3u_http_date(uint64_t ms, char out[40]);
void s3u_iso_date(uint64_t ms, char out[40]);

/* A request header, or NULL. */
const struct sigv4_header *s3u_hdr(struct s3_call *c, const char *name);
/* A request header's value copied NUL-terminated (truncated to cap) into
 * buf; buf, or NULL when the header is absent. */
char *s3u_hdr_str(struct s3_call *c, const char *name, char *buf, size_t cap);

/* A query parameter's value, or NULL when absent or valueless. */
const char *s3u_qval(const struct s3_req *r, const char *name);
/* A non-negative integer query parameter: def when absent, -1 when it is
 * not one. */
long s3u_qnum(const struct s3_req *r, const char *name, long def);

/* The body's length: x-amz-decoded-content-length (aws-chunked) or
 * Content-Length, into *size. S3E_OK, InvalidArgument (a malformed
 * decoded length) or MissingContentLength (no length, when one is needed:
 * always with need_length, else only for a request with a body). */
enum s3_err s3u_body_size(struct s3_call *c, bool need_length, uint64_t *size);

/* The request's uploadId is one of ours (16 lower-case hex digits). */
bool s3u_upload_id_ok(const struct s3_req *r);

/* The S3 error for a data PUT that failed with STATUS (gw_data_put's
 * on_done status, or what gw_data_put_finish returned), and its message
 * (NULL: the code's own): a body that ended short of its length is the
 * client's (400 IncompleteBody); shards that could not reach their write
 * quorum are the cluster's (503, which clients retry); anything else 500. */
enum s3_err s3u_data_put_err(int status, const char **msg);

/* <tag><ID>owner's canonical id</ID><DisplayName>owner</DisplayName></tag>
 * (listings' Owner and Initiator); no owner (written anonymously): S3's
 * anonymous principal. */
void s3u_owner_elems(struct xml_w *w, const char *tag, const char *owner);

#endif
