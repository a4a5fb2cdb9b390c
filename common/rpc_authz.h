/*
 * rpc_authz.h — node roles under mutual TLS (issue 16): what a peer's
 * certificate says it is, and which roles may call which RPC method.
 *
 * A node certificate made by `iolake-admin ca issue --role R[,R...]
 * [--node ID]` carries, in its subjectAltName, one URI per role and at
 * most one node id:
 *
 *   iolake:role:meta | iolake:role:osd | iolake:role:gw | iolake:role:admin
 *   | iolake:role:user (a client of the native port: not a node)
 *   iolake:node:<decimal id, 1..2^32-1>
 *
 * Other URIs (and other SAN kinds) are ignored; a URI under "iolake:"
 * that is not one of these makes the certificate invalid (a typo must not
 * silently drop a role). A certificate with no role (issued before roles)
 * is refused when TLS is on, unless the process runs with
 * --rpc-tls-legacy-any-role: it is then treated as holding every role.
 *
 * The table (rpc_authz.c, documented in docs/security.md) is the one place
 * naming which roles call what: by service and method, and for meta's
 * Submit by op. It denies by default: a method or service without a row
 * is refused to every role (test_rpc_authz walks every generated service
 * descriptor and fails on a method without a row). A second table names
 * which role serves each service: RPC clients under TLS refuse a server
 * whose certificate lacks it (a gateway dialling an OSD wants "osd"). Servers consult it once per call on TLS connections
 * (common/rpc_h2_server.c before dispatch; meta's Submit, Heartbeat and
 * ReportPgs handlers for the op and OSD id checks). Calls without TLS
 * (plain HTTP/2 clusters, in-process "local:" calls in iolake-aio) carry
 * no peer and are not checked: the port itself is the trust boundary
 * there.
 *
 * Pure except rpc_authz_call / rpc_authz_op / rpc_authz_osd_id, which
 * answer a refused call. Thread-safe (the table is constant).
 */
#ifndef COMMON_RPC_AUTHZ_H
#define COMMON_RPC_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rpc_req;

#define RPC_ROLES(X)                 \
	X(META, 0, "meta")           \
	X(OSD, 1, "osd")             \
	X(GW, 2, "gw")               \
	X(ADMIN, 3, "admin")         \
	X(USER, 4, "user")

enum rpc_role {
#define RPC_ROLE_ENUM(name, bit, text) RPC_ROLE_##name = 1u << (bit),
	RPC_ROLES(RPC_ROLE_ENUM)
#undef RPC_ROLE_ENUM
};

/* Every cluster role: what a legacy (role-less) certificate is taken for
 * and what the table's "any role" rows allow. Not RPC_ROLE_USER: a user's
 * certificate (ca issue --role user) reaches only the methods whose
 * callers are users, each call signed with the user's S3 keys (the native
 * protocol, gateway/native_srv.c), never a node's methods. */
#define RPC_ROLE_ANY (RPC_ROLE_META | RPC_ROLE_OSD | RPC_ROLE_GW | RPC_ROLE_ADMIN)
/* Every valid bit (what ca issue accepts). */
#define RPC_ROLE_ALL (RPC_ROLE_ANY | RPC_ROLE_USER)
#define RPC_AUTHZ_URI_PREFIX "iolake:"
#define RPC_AUTHZ_URI_MAX 64   /* longer URIs under iolake: are invalid */

/* Who a TLS peer is, from its certificate. */
struct rpc_ident {
	unsigned roles;        /* RPC_ROLE_* bits; 0 before parsing */
	uint32_t node_id;      /* iolake:node:<id>, 0 when absent */
	bool legacy;           /* no role in the certificate; accepted as any
				* (--rpc-tls-legacy-any-role) */
	char serial[48];       /* the certificate's serial, hex (logs) */
	char cn[64];           /* its subject CN (logs) */
};

/* "meta", ... for one bit; "?" otherwise. */
const char *rpc_role_name(unsigned role);

/* Parse one role name ("meta", "osd", "gw", "admin"; exact, lower case).
 * The bit, or 0 when unknown. */
unsigned rpc_role_parse(const char *name, size_t len);

/* Write the role set as "meta,osd" (or "none") into buf. */
void rpc_roles_format(unsigned roles, char *buf, size_t cap);

/*
 * Fold one SAN URI (len bytes, not NUL-terminated, any bytes) into p.
 * Returns 1 when the URI is not ours (no "iolake:" prefix: ignored), 0
 * when it was a role or node id and is now in p, -EINVAL when it starts
 * with "iolake:" but is not a valid role or node URI, or names a second,
 * different node id.
 */
int rpc_authz_parse_uri(const char *uri, size_t len, struct rpc_ident *p);

/* Which roles may call method of service ("iolake.meta.Meta", "Submit"):
 * a bit set. A method without a row: 0 (nobody). */
unsigned rpc_authz_method_roles(const char *service, const char *method);

/* Which roles may serve service: the roles a client wants in the server's
 * certificate. 0 for a service the table does not name (refused). */
unsigned rpc_authz_server_roles(const char *service);

/* A client's check of its TLS server before calling service: 0 when the
 * peer holds a role serving it, else -EACCES with why ("server ...
 * holds roles gw; iolake.osd.Osd is served by osd"). */
int rpc_authz_server_check(const struct rpc_ident *server, const char *service, char *why,
			   size_t cap);

/* Which roles may submit meta's op (the Op body's field name, e.g.
 * "put_object", "register_osd"). Ops not named: meta and gw (data path). */
unsigned rpc_authz_op_roles(const char *op);

/* True when a peer holding roles may call what needs allowed. */
static inline bool rpc_authz_allows(unsigned roles, unsigned allowed)
{
	return (roles & allowed) != 0;
}

/* ------------------------------------------------------------ on a call */

/* The TLS peer of a call, or NULL (no TLS, in-process). */
const struct rpc_ident *rpc_req_ident(const struct rpc_req *r);

/* Check r's method against the table. 0: allowed (or no peer); else the
 * call was answered PERMISSION_DENIED (logged, counted) and -EACCES is
 * returned: the caller must not touch r again. */
int rpc_authz_call(struct rpc_req *r, const char *service, const char *method);

/* The same for one op of meta's Submit. */
int rpc_authz_op(struct rpc_req *r, const char *op);

/* An OSD names itself (Heartbeat, ReportPgs, RegisterOsd): a peer whose
 * certificate names a node id must name that one; a peer without one
 * (an admin cert, meta forwarding, a legacy cert) passes. 0, or the call
 * was answered PERMISSION_DENIED and -EACCES is returned. */
int rpc_authz_osd_id(struct rpc_req *r, uint32_t osd_id);

/* Calls refused by roles since start (any thread). */
uint64_t rpc_authz_denied(void);

#endif
