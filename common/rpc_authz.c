/*
 * rpc_authz.c — node roles (contract in rpc_authz.h): the SAN URI parser
 * and the one table of which roles call which method or op.
 *
 * Owns: the table, the denial counter and its log limiter. Does not own:
 * reading certificates (common/rpc_tls.c fills struct rpc_ident after a
 * handshake), where the checks run (the h2 server before dispatch, meta's
 * handlers for ops and OSD ids), the Raft port (meta/raft_tls.c requires
 * the meta role itself).
 *
 * Adding a method or an op: add its row here (and to docs/security.md).
 * A method not listed is refused to every role (test_rpc_authz fails on
 * one: it walks every generated service); an op not listed defaults to
 * meta+gw (the data path; ops are fields of one message, not methods).
 */
#include "common/rpc_authz.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "common/rpc_internal.h"

#define M RPC_ROLE_META
#define O RPC_ROLE_OSD
#define G RPC_ROLE_GW
#define A RPC_ROLE_ADMIN
#define U RPC_ROLE_USER
#define ANY RPC_ROLE_ANY

/* ------------------------------------------------------------ roles */

static const struct {
	unsigned bit;
	const char *name;
} roles[] = {
#define RPC_ROLE_ROW(name, bit, text) { RPC_ROLE_##name, text },
	RPC_ROLES(RPC_ROLE_ROW)
#undef RPC_ROLE_ROW
};
#define N_ROLES (sizeof(roles) / sizeof(roles[0]))

const char *rpc_role_name(unsigned role)
{
	for (size_t i = 0; i < N_ROLES; i++)
		if (roles[i].bit == role)
			return roles[i].name;
	return "?";
}

unsigned rpc_role_parse(const char *name, size_t len)
{
	for (size_t i = 0; i < N_ROLES; i++)
		if (strlen(roles[i].name) == len && memcmp(roles[i].name, name, len) == 0)
			return roles[i].bit;
	return 0;
}

void rpc_roles_format(unsigned r, char *buf, size_t cap)
{
	size_t off = 0;
	if (cap)
		buf[0] = 0;
	for (size_t i = 0; i < N_ROLES; i++)
		if (r & roles[i].bit) {
			int n = snprintf(buf + off, cap > off ? cap - off : 0, "%s%s", off ? "," : "",
					 roles[i].name);
			if (n > 0)
				off += (size_t)n;
		}
	if (!off && cap)
		snprintf(buf, cap, "none");
}

/* ------------------------------------------------------------ URIs */

int rpc_authz_parse_uri(const char *uri, size_t len, struct rpc_ident *p)
{
	static const char pfx[] = RPC_AUTHZ_URI_PREFIX;
	static const char role[] = "role:", node[] = "node:";
	const size_t pl = sizeof(pfx) - 1;
	if (len < pl || memcmp(uri, pfx, pl) != 0)
		return 1;
	if (len > RPC_AUTHZ_URI_MAX)
		return -EINVAL;
	const char *s = uri + pl;
	size_t n = len - pl;
	if (n > sizeof(role) - 1 && memcmp(s, role, sizeof(role) - 1) == 0) {
		unsigned bit = rpc_role_parse(s + sizeof(role) - 1, n - (sizeof(role) - 1));
		if (!bit)
			return -EINVAL;
		p->roles |= bit;
		return 0;
	}
	if (n > sizeof(node) - 1 && memcmp(s, node, sizeof(node) - 1) == 0) {
		const char *d = s + sizeof(node) - 1;
		size_t dl = n - (sizeof(node) - 1);
		if (dl > 10 || (dl > 1 && d[0] == '0'))
			return -EINVAL;   /* 2^32-1 has 10 digits; no leading zeros */
		uint64_t v = 0;
		for (size_t i = 0; i < dl; i++) {
			if (d[i] < '0' || d[i] > '9')
				return -EINVAL;
			v = v * 10 + (uint64_t)(d[i] - '0');
		}
		if (v == 0 || v > UINT32_MAX)
			return -EINVAL;
		if (p->node_id && p->node_id != v)
			return -EINVAL;   /* one certificate, one node */
		p->node_id = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

/* ------------------------------------------------------------ the table */

/* By service and method; deny by default: a method without a row is
 * refused to every role (a certificate from the cluster CA is not enough:
 * a user's certificate, ca issue --role user, comes from the same CA).
 * Who calls what was read from the callers (admin/, gateway/, osd/,
 * meta/ itself, lib/ and bench/ for the native protocol). */
static const struct method_row {
	const char *service, *method;
	unsigned roles;
} methods[] = {
	/* meta: the data path (the gateway; meta forwarding to its leader;
	 * iolake-admin's reads) */
	{ "iolake.meta.Meta", "Submit", M | G | A | O },   /* then per op: rpc_authz_op */
	{ "iolake.meta.Meta", "GetBucket", M | G | A },
	{ "iolake.meta.Meta", "ListBuckets", M | G | A },
	{ "iolake.meta.Meta", "HeadObject", M | G | A },
	{ "iolake.meta.Meta", "ListObjects", M | G | A },
	{ "iolake.meta.Meta", "GetAccessKey", M | G | A },
	{ "iolake.meta.Meta", "ListUsers", M | G | A },
	{ "iolake.meta.Meta", "GetUpload", M | G | A },
	{ "iolake.meta.Meta", "ListParts", M | G | A },
	{ "iolake.meta.Meta", "ListUploads", M | G | A },
	{ "iolake.meta.Meta", "ListGc", M | G | A },
	{ "iolake.meta.Meta", "GetRanges", M | G | A },
	{ "iolake.meta.Meta", "GetVersion", M | G | A },
	{ "iolake.meta.Meta", "ListVersions", M | G | A },
	{ "iolake.meta.Meta", "ReadRange", M | G | A },
	{ "iolake.meta.Meta", "GetPartRows", M | G | A },
	/* meta: every node reads the map and a member's status */
	{ "iolake.meta.Meta", "GetMap", M | O | G | A },
	{ "iolake.meta.Meta", "WatchMap", M | O | G | A },
	{ "iolake.meta.Meta", "Status", M | O | G | A },
	{ "iolake.meta.Meta", "Metrics", M | O | G | A },
	{ "iolake.meta.Meta", "PgStats", M | O | G | A },
	/* meta: OSDs report (their id checked by rpc_authz_osd_id) */
	{ "iolake.meta.Meta", "Heartbeat", M | O },
	{ "iolake.meta.Meta", "ReportPgs", M | O },
	{ "iolake.meta.Meta", "CheckShards", M | O },
	{ "iolake.meta.Meta", "FlagPgs", M | O | G },
	/* meta: membership is the administrator's (a gateway serving the
	 * admin API holds the admin role too) */
	{ "iolake.meta.Meta", "AddMember", M | A },
	{ "iolake.meta.Meta", "RemoveMember", M | A },
	/* meta: members only */
	{ "iolake.meta.Meta", "ConfirmLeader", M },
	{ "iolake.meta.Meta", "FetchSnapshot", M },
	/* OSD: shards are the gateway's and other OSDs' (recovery) */
	{ "iolake.osd.Osd", "PutShard", O | G },
	{ "iolake.osd.Osd", "GetShard", O | G },
	{ "iolake.osd.Osd", "DeleteShard", O | G },
	{ "iolake.osd.Osd", "StatShard", O | G },
	{ "iolake.osd.Osd", "StatShards", O | G },
	{ "iolake.osd.Osd", "ListShards", O | G | A },   /* iolake-admin reads an OSD's shards */
	{ "iolake.osd.Osd", "ListBadShards", O | G | A },
	{ "iolake.osd.Osd", "Status", M | O | G | A },
	/* The native protocol (gateway/native_srv.c): its callers are users,
	 * each call signed with the user's S3 keys and checked there as S3
	 * checks a request; the certificate (when the port runs mutual TLS)
	 * only admits the client: role user, or a node's (tools, benches). */
	{ "iolake.native.Native", "Put", U | ANY },
	{ "iolake.native.Native", "PutBegin", U | ANY },
	{ "iolake.native.Native", "PutAppend", U | ANY },
	{ "iolake.native.Native", "PutCommit", U | ANY },
	{ "iolake.native.Native", "PutAbort", U | ANY },
	{ "iolake.native.Native", "Get", U | ANY },
	{ "iolake.native.Native", "Head", U | ANY },
	{ "iolake.native.Native", "Delete", U | ANY },
	{ "iolake.native.Native", "List", U | ANY },
	{ "iolake.native.Native", "Hello", U | ANY },
	{ "iolake.native.Native", "Login", U | ANY },
	/* The RPC layer's test service (common/proto/echo.proto): served by
	 * tests and bench_rpctls only, never by a binary. */
	{ "iolake.test.Echo", "Echo", ANY },
	{ "iolake.test.Echo", "Hang", ANY },
	{ "iolake.test.Echo", "Unset", ANY },
	{ "iolake.test.Nobody", "Nope", ANY },
};

/* Who serves each service: what a client wants in the server's
 * certificate (rpc_authz_server_check). */
static const struct service_row {
	const char *service;
	unsigned roles;
} services[] = {
	{ "iolake.meta.Meta", M },
	{ "iolake.osd.Osd", O },
	{ "iolake.native.Native", G },
	{ "iolake.test.Echo", ANY },
	{ "iolake.test.Nobody", ANY },
};

/* Ops of meta's Submit that are not the data path. */
static const struct op_row {
	const char *op;
	unsigned roles;
} ops[] = {
	/* an OSD joins the map (its id checked by rpc_authz_osd_id) */
	{ "register_osd", M | O },
	/* users, keys, quotas: the administrator (iolake-admin, or a gateway
	 * whose certificate adds the admin role for its admin API) */
	{ "put_user", M | A },
	{ "delete_user", M | A },
	{ "put_access_key", M | A },
	{ "delete_access_key", M | A },
	{ "reseal_access_key", M | A },
	{ "set_user_grant", M | A },
	{ "set_user_admin", M | A },
	{ "set_quota", M | A },
	/* the map and the groups */
	{ "init_map", M | A },
	{ "set_osd_state", M | A },
	{ "remove_osd", M | A },
	{ "set_expect_osds", M | A },
	{ "create_group", M | A },
	{ "delete_group", M | A },
	{ "open_range", M | A },
	{ "seal_range", M | A },
	{ "split_range", M | A },
	{ "move_range", M | A },
	{ "move_range_step", M | A },
	{ "ingest_range", M | A },
	{ "drop_range", M | A },
	/* member changes' bookkeeping (meta/group_members.c, issue 13) */
	{ "set_group_members", M | A },
	{ "group_reconciled", M | A },
};

unsigned rpc_authz_method_roles(const char *service, const char *method)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(methods[i].service, service) && !strcmp(methods[i].method, method))
			return methods[i].roles;
	return 0;
}

unsigned rpc_authz_server_roles(const char *service)
{
	for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
		if (!strcmp(services[i].service, service))
			return services[i].roles;
	return 0;
}

int rpc_authz_server_check(const struct rpc_ident *server, const char *service, char *why,
			   size_t cap)
{
	unsigned need = rpc_authz_server_roles(service);
	if (rpc_authz_allows(server->roles, need))
		return 0;
	char has[64], want[64];
	rpc_roles_format(server->roles, has, sizeof(has));
	rpc_roles_format(need, want, sizeof(want));
	snprintf(why, cap, "server certificate %s (CN %s) holds roles %s; %s is served by %s",
		 server->serial, server->cn, has, service, want);
	return -EACCES;
}

unsigned rpc_authz_op_roles(const char *op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(ops[i].op, op))
			return ops[i].roles;
	return M | G;
}

/* ------------------------------------------------------------ on a call */

static atomic_uint_fast64_t g_denied;
static atomic_uint_fast64_t g_last_log_ms, g_not_logged;

uint64_t rpc_authz_denied(void)
{
	return atomic_load(&g_denied);
}

const struct rpc_ident *rpc_req_ident(const struct rpc_req *r)
{
	return r->ident;
}

static int deny(struct rpc_req *r, const char *what, const char *why)
{
	const struct rpc_ident *p = r->ident;
	char rs[64];
	rpc_roles_format(p->roles, rs, sizeof(rs));
	atomic_fetch_add(&g_denied, 1);
	/* At most one line a second; the rest are counted in the next. */
	uint64_t now = loop_now_ms(), last = atomic_load(&g_last_log_ms);
	if (!last || now - last >= 1000) {
		if (atomic_compare_exchange_strong(&g_last_log_ms, &last, now ? now : 1)) {
			LOG_WARN_REQ(rpc_req_id(r), "rpc-authz: call refused by role",
				     "call=%s why=%s peer_cn=%s roles=%s node=%u serial=%s not_logged=%llu",
				     what, why, LOG_Q(p->cn), rs, (unsigned)p->node_id, p->serial,
				     (unsigned long long)atomic_exchange(&g_not_logged, 0));
		} else {
			atomic_fetch_add(&g_not_logged, 1);
		}
	} else {
		atomic_fetch_add(&g_not_logged, 1);
	}
	rpc_fail(r, RPC_PERMISSION_DENIED, "%s: %s (certificate roles: %s)", what, why, rs);
	return -EACCES;
}

int rpc_authz_call(struct rpc_req *r, const char *service, const char *method)
{
	const struct rpc_ident *p = r->ident;
	if (!p)
		return 0;
	/* A legacy certificate holds RPC_ROLE_ANY: it passes every row but
	 * a user-only one, and no certificate passes a method without one. */
	unsigned need = rpc_authz_method_roles(service, method);
	if (rpc_authz_allows(p->roles, need))
		return 0;
	char what[128], want[64];
	snprintf(what, sizeof(what), "%s/%s", service, method);
	rpc_roles_format(need, want, sizeof(want));
	char why[96];
	if (need)
		snprintf(why, sizeof(why), "needs role %s", want);
	else
		snprintf(why, sizeof(why), "not in the role table: no role may call it");
	return deny(r, what, why);
}

int rpc_authz_op(struct rpc_req *r, const char *op)
{
	const struct rpc_ident *p = r->ident;
	if (!p || p->legacy)
		return 0;
	unsigned need = rpc_authz_op_roles(op);
	if (rpc_authz_allows(p->roles, need))
		return 0;
	char what[96], want[64], why[96];
	snprintf(what, sizeof(what), "Submit op %s", op);
	rpc_roles_format(need, want, sizeof(want));
	snprintf(why, sizeof(why), "needs role %s", want);
	return deny(r, what, why);
}

int rpc_authz_osd_id(struct rpc_req *r, uint32_t osd_id)
{
	const struct rpc_ident *p = r->ident;
	if (!p || p->legacy || (p->roles & (RPC_ROLE_META | RPC_ROLE_ADMIN)))
		return 0;
	if (p->node_id == osd_id)
		return 0;
	char what[64], why[96];
	snprintf(what, sizeof(what), "osd %u", (unsigned)osd_id);
	if (p->node_id)
		snprintf(why, sizeof(why), "the certificate is OSD %u's", (unsigned)p->node_id);
	else
		snprintf(why, sizeof(why), "the certificate names no node (ca issue --node)");
	return deny(r, what, why);
}
