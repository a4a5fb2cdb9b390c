/*
 * call.c — one meta call at a time for iolake-admin (contracts in call.h).
 */
#include "admin/call.h"

#include <errno.h>

void admin_on_call(void *ud, int err, const ProtobufCMessage *resp)
{
	struct admin_wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err && !(w->resp = meta_client_copy_msg(resp)))
		w->err = -ENOMEM;
}

void admin_on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct admin_wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err)
		w->status = res->status;
}

int admin_run(uv_loop_t *loop, struct admin_wait *w, int rc)
{
	if (rc)
		return rc;
	while (!w->done)
		uv_run(loop, UV_RUN_ONCE);
	return w->err;
}

static int await(struct meta_client *c, struct admin_wait *w, int rc, ProtobufCMessage **out)
{
	*out = NULL;
	if (rc)
		return rc;
	while (!w->done)
		uv_run(meta_client_loop(c), UV_RUN_ONCE);
	*out = w->resp;
	return w->err;
}

int admin_call(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
	       ProtobufCMessage **out)
{
	struct admin_wait w = { 0 };
	return await(c, &w, meta_client_call_direct(c, method, req, admin_on_call, &w), out);
}

int admin_call_member(struct meta_client *c, size_t i, unsigned method,
		      const ProtobufCMessage *req, ProtobufCMessage **out)
{
	struct admin_wait w = { 0 };
	return await(c, &w, meta_client_call_member(c, i, method, req, admin_on_call, &w), out);
}
