/*
 * test_rpc_authz.c — node roles (common/rpc_authz.c): the SAN URI parser,
 * the role table for methods and meta's Submit ops, and the roles read
 * back from a certificate made by iolake-admin ca issue
 * (rpc_tls_cert_peer).
 */
#include <check.h>
#include <errno.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/ca.h"
#include "common/log.h"
#include "common/rpc_authz.h"
#include "common/rpc_tls.h"

static int parse(const char *uri, struct rpc_ident *id)
{
	return rpc_authz_parse_uri(uri, strlen(uri), id);
}

START_TEST(uris)
{
	struct rpc_ident id = { 0 };
	ck_assert_int_eq(parse("iolake:role:meta", &id), 0);
	ck_assert_int_eq(parse("iolake:role:admin", &id), 0);
	ck_assert_uint_eq(id.roles, RPC_ROLE_META | RPC_ROLE_ADMIN);
	ck_assert_int_eq(parse("iolake:node:4294967295", &id), 0);
	ck_assert_uint_eq(id.node_id, 4294967295u);
	/* The same node again is fine, another one is not. */
	ck_assert_int_eq(parse("iolake:node:4294967295", &id), 0);
	ck_assert_int_eq(parse("iolake:node:7", &id), -EINVAL);
	/* Not ours: ignored. */
	ck_assert_int_eq(parse("https://x/iolake:role:osd", &id), 1);
	ck_assert_int_eq(parse("IOLAKE:role:osd", &id), 1);
	ck_assert_int_eq(parse("", &id), 1);
	/* Ours but wrong: refused, identity unchanged. */
	static const char *const bad[] = {
		"iolake:", "iolake:role:", "iolake:role:root", "iolake:role:Meta", "iolake:role:meta ",
		"iolake:node:", "iolake:node:0", "iolake:node:01", "iolake:node:4294967296",
		"iolake:node:-1", "iolake:node:1x", "iolake:host:a",
		"iolake:role:metaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};
	struct rpc_ident fresh = { 0 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rpc_ident before = fresh;
		ck_assert_msg(parse(bad[i], &fresh) == -EINVAL, "%s accepted", bad[i]);
		ck_assert_msg(!memcmp(&before, &fresh, sizeof(fresh)), "%s changed the identity", bad[i]);
	}
	/* An embedded NUL is part of the URI, not its end. */
	ck_assert_int_eq(rpc_authz_parse_uri("iolake:role:gw\0x", 16, &fresh), -EINVAL);
	char buf[64];
	rpc_roles_format(RPC_ROLE_GW | RPC_ROLE_OSD, buf, sizeof(buf));
	ck_assert_str_eq(buf, "osd,gw");
	rpc_roles_format(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "none");
	ck_assert_uint_eq(rpc_role_parse("osd", 3), RPC_ROLE_OSD);
	ck_assert_uint_eq(rpc_role_parse("os", 2), 0);
}
END_TEST

START_TEST(table)
{
	const char *M = "iolake.meta.Meta", *O = "iolake.osd.Osd";
	/* Members only. */
	ck_assert_uint_eq(rpc_authz_method_roles(M, "FetchSnapshot"), RPC_ROLE_META);
	ck_assert_uint_eq(rpc_authz_method_roles(M, "ConfirmLeader"), RPC_ROLE_META);
	/* The administrator's: not an OSD, not a gateway without the admin role. */
	unsigned add = rpc_authz_method_roles(M, "AddMember");
	ck_assert(!rpc_authz_allows(RPC_ROLE_OSD, add));
	ck_assert(!rpc_authz_allows(RPC_ROLE_GW, add));
	ck_assert(rpc_authz_allows(RPC_ROLE_ADMIN, add));
	ck_assert(rpc_authz_allows(RPC_ROLE_GW | RPC_ROLE_ADMIN, add));
	ck_assert(!rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_method_roles(M, "ListUsers")));
	/* OSD reports: OSDs (and meta), not gateways. */
	ck_assert(rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_method_roles(M, "Heartbeat")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_GW, rpc_authz_method_roles(M, "Heartbeat")));
	/* Everyone reads the map. */
	ck_assert_uint_eq(rpc_authz_method_roles(M, "WatchMap"), RPC_ROLE_ANY);
	/* Shards: gateways and OSDs, not admin or meta. */
	unsigned put = rpc_authz_method_roles(O, "PutShard");
	ck_assert(rpc_authz_allows(RPC_ROLE_GW, put) && rpc_authz_allows(RPC_ROLE_OSD, put));
	ck_assert(!rpc_authz_allows(RPC_ROLE_ADMIN, put) && !rpc_authz_allows(RPC_ROLE_META, put));
	/* Unlisted: open to any role. */
	ck_assert_uint_eq(rpc_authz_method_roles("iolake.test.Echo", "Echo"), RPC_ROLE_ANY);
	ck_assert_uint_eq(rpc_authz_method_roles(M, "NoSuchMethod"), RPC_ROLE_ANY);
	/* Submit ops. */
	ck_assert(rpc_authz_allows(RPC_ROLE_GW, rpc_authz_op_roles("put_object")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_op_roles("put_object")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_ADMIN, rpc_authz_op_roles("put_object")));
	ck_assert(rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_op_roles("register_osd")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_GW, rpc_authz_op_roles("register_osd")));
	static const char *const admin_ops[] = { "put_user", "delete_user", "put_access_key",
		"delete_access_key", "set_user_admin", "set_quota", "remove_osd", "set_osd_state",
		"split_range", "move_range", "init_map", "set_group_members", "group_reconciled" };
	for (size_t i = 0; i < sizeof(admin_ops) / sizeof(admin_ops[0]); i++) {
		unsigned need = rpc_authz_op_roles(admin_ops[i]);
		ck_assert_msg(rpc_authz_allows(RPC_ROLE_ADMIN, need), "%s", admin_ops[i]);
		ck_assert_msg(rpc_authz_allows(RPC_ROLE_META, need), "%s", admin_ops[i]);
		ck_assert_msg(!rpc_authz_allows(RPC_ROLE_GW, need), "%s", admin_ops[i]);
		ck_assert_msg(!rpc_authz_allows(RPC_ROLE_OSD, need), "%s", admin_ops[i]);
	}
}
END_TEST

/* ca issue --role osd,gw --node 12 reads back as those roles and node. */
START_TEST(cert_roles)
{
	char dir[128], cdir[160], pfx[160], pem[170], why[256];
	snprintf(dir, sizeof(dir), "/dev/shm/test_rpc_authz.%d", (int)getpid());
	snprintf(cdir, sizeof(cdir), "%s/ca", dir);
	snprintf(pfx, sizeof(pfx), "%s/node", dir);
	snprintf(pem, sizeof(pem), "%s.pem", pfx);
	ck_assert_msg(ca_init(cdir, 1, why, sizeof(why)) == 0, "%s", why);
	static const char *const ips[] = { "127.0.0.1" };
	struct ca_issue_req r = { .name = "o12", .ips = ips, .n_ips = 1, .days = 1,
				  .roles = RPC_ROLE_OSD | RPC_ROLE_GW, .node_id = 12 };
	ck_assert_msg(ca_issue(cdir, &r, pfx, why, sizeof(why)) == 0, "%s", why);
	FILE *f = fopen(pem, "r");
	ck_assert_ptr_nonnull(f);
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(x);
	struct rpc_ident id;
	ck_assert_msg(rpc_tls_cert_peer(x, &id, why, sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(id.roles, RPC_ROLE_OSD | RPC_ROLE_GW);
	ck_assert_uint_eq(id.node_id, 12);
	ck_assert_str_eq(id.cn, "o12");
	ck_assert_int_gt((int)strlen(id.serial), 0);
	X509_free(x);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	Suite *s = suite_create("rpc_authz");
	TCase *tc = tcase_create("rpc_authz");
	tcase_add_test(tc, uris);
	tcase_add_test(tc, table);
	tcase_add_test(tc, cert_roles);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
