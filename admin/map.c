/*
 * map.c — the cluster map and the OSDs' own RPC for iolake-admin's
 * commands (contracts in map.h).
 */
#include "admin/map.h"

#include <stdlib.h>
#include <string.h>

#include "common/proto/osd_methods.h"
#include "osd/client.h"

Iolake__Meta__ClusterMap *admin_get_map(const struct admin_ctx *x,
					Iolake__Meta__GetMapResponse **holder)
{
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	*holder = (Iolake__Meta__GetMapResponse *)admin_must_call(x, META_M_GET_MAP, &req.base);
	if ((*holder)->status != IOLAKE__META__STATUS__STATUS_OK || !(*holder)->map) {
		fprintf(x->err, "iolake-admin: error: no cluster map yet (%s)\n",
			admin_status_name((*holder)->status));
		exit(1);
	}
	return (*holder)->map;
}

struct rpc_channel *admin_osd_open(const struct admin_ctx *x, const char *addr)
{
	static bool told;
	if (!strncmp(addr, "local:", 6)) {
		if (!told)
			fprintf(x->err, "iolake-admin: the OSDs of an iolake-aio run inside its "
				"process and answer only there; ask its admin API: iolake-admin "
				"--data-dir DIR api GET osds\n");
		told = true;
		return NULL;
	}
	return rpc_channel_open(x->loop, addr, NULL);
}

struct osd_wait {
	bool done;
	int status;
	ProtobufCMessage *resp;  /* owned copy; NULL unless OK */
};

static void on_osd_call(void *ud, const struct rpc_result *res)
{
	struct osd_wait *w = ud;
	w->done = true;
	w->status = res->status;
	if (res->status == RPC_OK)
		w->resp = meta_client_copy_msg(res->resp);
}

int admin_osd_call(const struct admin_ctx *x, struct rpc_channel *ch, int method,
		   const ProtobufCMessage *req, ProtobufCMessage **resp)
{
	struct osd_wait w = { 0 };
	struct rpc_call_opts co = { .timeout_ms = 3000 };
	rpc_call(ch, OSD_SVC, method, req, NULL, &co, on_osd_call, &w);
	while (!w.done)
		uv_run(x->loop, UV_RUN_ONCE);
	*resp = w.resp;
	return w.status;
}

void admin_shard_key_after(Iolake__Osd__ShardKey *after, uint8_t *after_oid,
			   const Iolake__Osd__ShardKey *lk)
{
	after->pg = lk->pg;
	after->shard = lk->shard;
	after->object_id.len = lk->object_id.len < OSD_OID_MAX ? lk->object_id.len : OSD_OID_MAX;
	memcpy(after_oid, lk->object_id.data, after->object_id.len);
	after->object_id.data = after_oid;
}
