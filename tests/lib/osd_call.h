/*
 * osd_call.h — test helper: calls to the OSD service (iolake.osd.Osd) that
 * keep their answer past the RPC callback, so tests can start many calls,
 * run the client loop, and check results afterwards.
 *
 * Thread: the channel's loop (the test's). Not for production use: it
 * copies every response (pack + unpack).
 */
#ifndef TESTS_LIB_OSD_CALL_H
#define TESTS_LIB_OSD_CALL_H

#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/proto/osd_methods.h"
#include "common/rpc.h"
#include "proto/osd.pb-c.h"

struct osd_call {
	int done;
	int status;               /* enum rpc_status */
	char message[600];
	ProtobufCMessage *resp;   /* a copy (free with osd_call_clear); NULL unless OK */
	struct buf_slice payload; /* a reference, or .buf NULL */
	void *ud;                 /* the caller's */
	void (*then)(struct osd_call *c); /* optional, run after the answer */
};

/* Start a call; c must stay valid until c->done. timeout_ms 0: 30 s. */
void osd_call_start(uv_loop_t *loop, struct rpc_channel *ch, unsigned method, const ProtobufCMessage *req,
		    const struct buf_slice *payload, uint32_t timeout_ms, struct osd_call *c);

/* Run loop until c->done. */
void osd_call_wait(uv_loop_t *loop, struct osd_call *c);

/* Start, wait, return the status. */
int osd_call_sync(uv_loop_t *loop, struct rpc_channel *ch, unsigned method,
		  const ProtobufCMessage *req, const struct buf_slice *payload,
		  struct osd_call *c);

/* Release the response copy and payload reference; zero c. */
void osd_call_clear(struct osd_call *c);

/* Fill a wire key (oid points at the caller's string). */
void osd_key(Iolake__Osd__ShardKey *k, uint32_t pg, const char *oid, uint32_t shard);

#endif
