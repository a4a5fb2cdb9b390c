/*
 * http_refuse.c — the HTTP server's own answers, given before or instead
 * of a handler: a malformed head (4xx, an S3 XML body saying what was
 * wrong), a request the per-address rate limit refuses (503 SlowDown, an
 * S3 XML body), and plain HTTP on a TLS port (a plain 400). A refused
 * bodiless keep-alive request keeps its connection, and conn_refusal_done
 * goes on with the next request once the answer is written (http_resp.c's
 * write completion calls it); every other answer here closes the
 * connection after a linger.
 *
 * Owns no state of its own: the connection's (http_int.h). Does not
 * decide what is refused: http.c's ev_head (limits) and http_parse (bad
 * heads) do.
 *
 * Thread: the server's loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/http.h"
#include "gateway/http_int.h"
#include "common/tls.h"

/* Plain HTTP on a TLS port: say so in plain text, then linger. */
void conn_plain_on_tls(struct conn *c)
{
	static char msg[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
			    "Content-Length: 35\r\nConnection: close\r\n\r\n"
			    "This port speaks HTTPS (TLS) only.\n";
	struct http_server *srv = c->srv;
	conn_count(srv->m_plain_on_tls, &srv->stats.plain_on_tls);
	srv->stats.bad_requests++;
	tls_conn_free(c->tc); /* not a TLS failure worth counting twice */
	c->tc = NULL;
	c->rpos = c->rlen = 0;
	uv_buf_t b = uv_buf_init(msg, sizeof(msg) - 1);
	if (conn_submit(c, &b, 1, NULL, NULL, true, NULL))
		return;
	conn_stop_timer(c);
	c->reading = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
}

/* A malformed head, or one refused by the rate limit (503: an S3
 * SlowDown error, as S3 answers throttling): answer it ourselves and
 * close; a refusal with c->limited_keep keeps the connection (ev_head),
 * and conn_refusal_done goes on once the answer is written. */
void conn_reply_error(struct conn *c, int status)
{
	struct http_server *srv = c->srv;
	if (status != 503)
		srv->stats.bad_requests++;
	if (c->active) { /* bad body framing after the handler took over */
		conn_close(c, -EPROTO);
		return;
	}
	conn_new_request_id(c);
	/* An S3 error document either way, so that a client prints why: a
	 * head refused by the parser says what was wrong with it
	 * (http_parse_error_msg: static sentences, nothing to escape). */
	const char *code = "SlowDown", *msg = "Please reduce your request rate.";
	if (status != 503) {
		code = status == 431 ? "RequestHeaderSectionTooLarge"
		     : status == 414 ? "InvalidURI" : "InvalidRequest";
		msg = http_parse_error_msg(&c->hp);
		if (!msg)
			msg = "The request could not be parsed.";
	}
	char body[512];
	snprintf(body, sizeof(body),
		 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
		 "<Message>%s</Message><RequestId>%s</RequestId></Error>", code, msg,
		 c->request_id);
	size_t blen = strlen(body);
	bool keep = status == 503 && c->limited_keep && c->hp.msg_done;
	c->limited_keep = keep;
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: %s\r\n%s: %s\r\nx-amz-id-2: %s\r\n"
			 "Content-Type: application/xml\r\nContent-Length: %zu\r\n%s\r\n%s",
			 status, http_reason(status), conn_date(srv), srv->cfg.server_name,
			 srv->cfg.request_id_header, c->request_id, srv->host_id, blen,
			 keep ? "" : "Connection: close\r\n",
			 c->hp.req.method == HTTP_HEAD ? "" : body);
	if (n < 0 || (size_t)n >= sizeof(c->head)) {   /* a configured server name too long */
		conn_close(c, -EOVERFLOW);
		return;
	}
	srv->stats.responses[status / 100]++;
	uv_buf_t b = uv_buf_init(c->head, (unsigned)n);
	if (conn_submit(c, &b, 1, NULL, NULL, true, NULL)) {
		conn_close(c, 0);
		return;
	}
	conn_stop_timer(c);
	if (keep) {
		/* Pipelined bytes stay in rbuf; reading waits for the write
		 * (conn_update_reading), then conn_refusal_done. */
		c->limited = false;
		conn_update_reading(c);
		return;
	}
	/* Nothing more is parsed; the write's completion starts lingering. */
	c->rpos = c->rlen = 0;
	c->reading = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
}

void conn_refusal_done(struct conn *c)
{
	c->limited_keep = false;
	http_parse_next(&c->hp);
	conn_kick(c); /* the next request may be in rbuf already */
}
