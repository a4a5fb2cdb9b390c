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
};

/* A meta_client_cb that fills the struct admin_wait given as ud. */
void admin_on_call(void *ud, int err, const ProtobufCMessage *resp);

/* The answer of method(req), routed like meta_client_call_direct, in *out
 * (owned: free with protobuf_c_message_free_unpacked; NULL on error).
 * Returns the client's error. */
int admin_call(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
	       ProtobufCMessage **out);

/* The same asked of member i only (no redirect, no retry). */
int admin_call_member(struct meta_client *c, size_t i, unsigned method,
		      const ProtobufCMessage *req, ProtobufCMessage **out);

#endif
