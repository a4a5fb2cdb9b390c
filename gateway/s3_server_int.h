/*
 * s3_server_int.h — private to the S3 front end's files (s3_server.c: the
 * call pool, routing, authentication, the exchange; s3_server_body.c: the
 * request body's framing and verification): a call and the server.
 */
#ifndef GATEWAY_S3_SERVER_INT_H
#define GATEWAY_S3_SERVER_INT_H

#include "common/hash.h"
#include "common/hash_async.h"
#include "common/metrics.h"
#include "gateway/chunked.h"
#include "gateway/gw_trace.h"
#include "gateway/s3_checksum.h"
#include "gateway/s3_server.h"

#define S3S_HA_QUEUE 8

struct s3_call {
	struct s3_server *srv;
	struct http_stream *s;        /* NULL once the exchange is over */
	struct s3_call *next_free;
	struct s3_req req;
	struct s3_auth_req auth;
	bool auth_pending;
	bool limited_user;            /* admitted by the per-user limits: charge its response */
	bool dead;                    /* exchange over while auth pending */
	void *user;
	s3_body_fn on_data;
	s3_body_end_fn on_end;
	s3_body_buf_fn on_buf;        /* s3_call_body_buf: NULL none */
	s3_finish_fn on_finish;
	/* body verification */
	bool reading_body;
	bool chunked_mode;
	bool dec_live;
	bool want_sha, want_md5, has_decoded_len;
	enum s3_err body_err;
	uint64_t decoded, decoded_expected;
	uint8_t content_md5[16];
	struct hash_stream *sha, *md5;
	/* A large body's x-amz-content-sha256 and Content-MD5 on the hash
	 * pool (s3_server_body.c): its bytes are copied into stage buffers
	 * that go to ha a buffer at a time; the verdict waits for the last. */
	struct hash_async *ha;        /* made on first use, kept */
	bool ha_on;                   /* this body's digests go through ha */
	bool ha_end_wait;             /* body ended; the verdict after the jobs */
	bool ha_release_wait;         /* the exchange is over; the call goes back
				       * to the pool after the jobs (srv->hash_waits) */
	struct buf *ha_stage;         /* being filled */
	struct buf *ha_queue[S3S_HA_QUEUE];   /* full, no hash slot yet */
	unsigned ha_nq;
	/* The additional checksum (x-amz-checksum-*): computed as the body
	 * streams, matched at its end against the header's value (claimed)
	 * or the trailer's; the result is what the object stores. */
	struct s3_ck ck;
	enum s3_ck_algo ck_algo;      /* NONE: the request asked for none */
	bool ck_claimed, ck_trailer;
	/* Set by the handler before the body is read: the algorithm the body
	 * must use (an upload's, for its parts; computed when the request
	 * names none), and whether x-amz-checksum-* headers describe
	 * something other than the body (CompleteMultipartUpload's object). */
	enum s3_ck_algo ck_want;
	bool ck_not_body;
	struct s3_ck_value ck_expect, ck_result;
	/* Detail for the error body of the body's verdict (s3_call_error
	 * with a NULL message and this error uses it). */
	enum s3_err msg_err;
	const char *msg;
	char msg_buf[128];
	struct chunked_dec dec;
	struct xml_w xml;
	char scratch[S3_REQ_SCRATCH(HTTP_URL_MAX)];
	/* The exchange's trace and figures (an S3 request: traced). */
	struct gw_trace trace;
	bool traced;
	uint64_t auth_t0_ns;
	uint64_t bytes_in;            /* request body bytes as received */
};

struct s3_server {
	uv_loop_t *loop;
	struct s3_server_cfg cfg;
	struct s3_req_cfg route;
	struct http_server *http;
	struct s3_auth *auth;
	struct s3_call *calls;
	size_t n_calls;
	struct s3_call *free_calls;
	unsigned pending_lookups;
	uint64_t creds_gen;           /* last cfg.creds_generation seen */
	struct user_limit *ulimit;    /* NULL: no per-user limits */
	pthread_mutex_t *ulimit_mu;  /* set: ulimit is shared by several loops (cfg) */
	struct metrics_counter *m_user_rate, *m_user_bytes;
	bool closing, http_closed;
	void (*close_cb)(void *);
	void *close_arg;
	/* Per operation: latency, errors by class; body bytes both ways.
	 * NULL when there is no registry (cfg.http.metrics). */
	struct metrics_histogram *m_lat[S3_OP__COUNT];
	struct metrics_counter *m_err[S3_OP__COUNT][2];   /* 4xx, 5xx */
	struct metrics_counter *m_bytes_in, *m_bytes_out;
	struct workpool_port *hash_port;   /* cfg.hash_pool's; made on first use */
	unsigned hash_waits;          /* calls whose release waits for hash jobs */
};

/* s3_server_body.c */
bool s3s_hdr_has(const struct http_request *hr, const char *name, const char *token);
void s3s_on_body(struct http_stream *s, const char *data, size_t len);
void s3s_on_body_end(struct http_stream *s);
size_t s3s_body_buf(struct http_stream *s, size_t want, char **buf);
/* Before a call goes back to the pool: true when hash jobs of its body
 * are still out (the body file calls s3s_call_put when they are done). */
bool s3s_body_release(struct s3_call *c);
/* Free the call's body state (server teardown). */
void s3s_body_free(struct s3_call *c);

/* s3_server.c: put a call back in the pool (after s3s_body_release said
 * it had to wait), and finish a close that waited for it. */
void s3s_call_put(struct s3_call *c);

#endif
