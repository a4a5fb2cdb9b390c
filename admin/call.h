/*
 * call.h — one meta call at a time for iolake-admin's command files: start
 * it, run the loop until it answers, keep an owned copy of the answer.
 * Owns nothing past a call; the commands own what they print.
 */
#ifndef ADMIN_CALL_H
#define ADMIN_CALL_H

#include <stdbool.h>
#include <uv.h>

#include "meta/client.h"

/* One call in flight: done once answered, err the client's (0 or
 * negative), resp an owned copy of the answer (NULL on error). */
struct admin_wait {
	bool done;
	int err;
	ProtobufCMessage *resp;
	Iolake__Meta__Status status;   /* a submit's */
};

/* A meta_client_cb that fills the struct admin_wait given as ud. */
void admin_on_call(void *ud, int err, const ProtobufCMessage *resp);
/* The same for meta_client_submit: err and the op's status. */
void admin_on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index);
/* rc, the start of a call made with w, if it failed; else run loop until
 * w is answered and return w's err. */
int admin_run(uv_loop_t *loop, struct admin_wait *w, int rc);

/* The answer of method(req), routed like meta_client_call_direct, in *out
 * (owned: free with protobuf_c_message_free_unpacked; NULL on error).
 * Returns the client's error. */
int admin_call(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
	       ProtobufCMessage **out);

/* The same asked of member i only (no redirect, no retry). */
int admin_call_member(struct meta_client *c, size_t i, unsigned method,
		      const ProtobufCMessage *req, ProtobufCMessage **out);

#endif
