/*
 * osd_call.c — see osd_call.h. The response is packed in the callback and
 * unpacked again with the method's output descriptor, so it outlives it.
 */
#include "tests/lib/osd_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pending {
	struct osd_call *c;
	const ProtobufCMessageDescriptor *out;
	uv_loop_t *loop;
};

static void on_answer(void *ud, const struct rpc_result *r)
{
	struct pending *p = ud;
	struct osd_call *c = p->c;
	c->status = r->status;
	snprintf(c->message, sizeof(c->message), "%s", r->message);
	if (r->resp) {
		size_t n = protobuf_c_message_get_packed_size(r->resp);
		uint8_t *b = malloc(n ? n : 1);
		protobuf_c_message_pack(r->resp, b);
		c->resp = protobuf_c_message_unpack(p->out, NULL, n, b);
		free(b);
	}
	if (r->payload.buf) {
		c->payload = r->payload;
		buf_ref(r->payload.buf);
	}
	c->done = 1;
	/* The answer may come in the timer phase of a UV_RUN_ONCE turn: stop
	 * the loop so the poll phase that follows does not block. */
	uv_stop(p->loop);
	free(p);
	if (c->then)
		c->then(c);
}

void osd_call_start(uv_loop_t *loop, struct rpc_channel *ch, unsigned method, const ProtobufCMessage *req,
		    const struct buf_slice *payload, uint32_t timeout_ms, struct osd_call *c)
{
	struct pending *p = calloc(1, sizeof(*p));
	p->c = c;
	p->out = OSD_SVC->methods[method].output;
	p->loop = loop;
	c->done = 0;
	c->resp = NULL;
	c->payload = (struct buf_slice){ 0 };
	struct rpc_call_opts o = { .timeout_ms = timeout_ms ? timeout_ms : 30000 };
	rpc_call(ch, OSD_SVC, method, req, payload, &o, on_answer, p);
}

void osd_call_wait(uv_loop_t *loop, struct osd_call *c)
{
	while (!c->done)
		uv_run(loop, UV_RUN_ONCE);
}

int osd_call_sync(uv_loop_t *loop, struct rpc_channel *ch, unsigned method,
		  const ProtobufCMessage *req, const struct buf_slice *payload,
		  struct osd_call *c)
{
	memset(c, 0, sizeof(*c));
	osd_call_start(loop, ch, method, req, payload, 0, c);
	osd_call_wait(loop, c);
	return c->status;
}

void osd_call_clear(struct osd_call *c)
{
	if (c->resp)
		protobuf_c_message_free_unpacked(c->resp, NULL);
	buf_unref(c->payload.buf);
	memset(c, 0, sizeof(*c));
}

void osd_key(Iolake__Osd__ShardKey *k, uint32_t pg, const char *oid, uint32_t shard)
{
	iolake__osd__shard_key__init(k);
	k->pg = pg;
	k->object_id.data = (uint8_t *)oid;
	k->object_id.len = strlen(oid);
	k->shard = shard;
}
