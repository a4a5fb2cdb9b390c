/*
 * admin_api_members.c — changes of the cluster's shape (issue 20), as
 * `iolake-admin member add|rm` and `osd rm` make them:
 *   POST   /api/v1/members        {"id": N, "address": "host:port"}: meta's
 *                                 AddMember (the new member joins the root
 *                                 group's Raft configuration; start it with
 *                                 --join first)
 *   DELETE /api/v1/members/{id}   RemoveMember
 *   DELETE /api/v1/osds/{id}      RemoveOsd: only an OSD that is down and
 *                                 out (409 otherwise); its PG slots go to
 *                                 others
 * Meta decides; this file only asks.
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/admin_api_int.h"

static void on_member(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	(void)resp;
	const struct admin_route *rt = admin_call_route(c);
	const struct admin_member_add *m = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	if (rt->id == ADMIN_R_MEMBER_ADD) {
		jsonw_ku64(&w, "added", m->id);
		jsonw_kstr(&w, "address", m->address);
	} else {
		jsonw_ku64(&w, "removed", rt->member_id);
	}
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_member_add(struct admin_call *c)
{
	struct admin_member_add *m = calloc(1, sizeof(*m));
	if (!m) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, m, NULL);
	size_t len;
	const char *body = admin_call_body(c, &len);
	const char *why = "";
	int rc = admin_parse_member_add(body, len, m, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	Iolake__Meta__MemberChangeRequest q = IOLAKE__META__MEMBER_CHANGE_REQUEST__INIT;
	q.id = m->id;
	q.address = m->address;
	rc = admin_meta_call(c, META_M_ADD_MEMBER, &q.base, on_member, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

void admin_h_member_rm(struct admin_call *c)
{
	Iolake__Meta__MemberChangeRequest q = IOLAKE__META__MEMBER_CHANGE_REQUEST__INIT;
	q.id = admin_call_route(c)->member_id;
	int rc = admin_meta_call(c, META_M_REMOVE_MEMBER, &q.base, on_member, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void on_osd_removed(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	uint32_t id = admin_call_route(c)->osd_id;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		admin_reply_error(c, 409, "Conflict", "only a down and out OSD can be removed "
				  "(POST osds/{id}/out, then stop it)");
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, "no such OSD");
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "removed", id);
	jsonw_ku64(&w, "epoch", res->epoch);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_osd_rm(struct admin_call *c)
{
	Iolake__Meta__RemoveOsd ro = IOLAKE__META__REMOVE_OSD__INIT;
	ro.id = admin_call_route(c)->osd_id;
	ro.time_ms = admin_wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_REMOVE_OSD;
	op.remove_osd = &ro;
	int rc = admin_meta_submit(c, &op, on_osd_removed);
	if (rc)
		admin_reply_meta_error(c, rc);
}
