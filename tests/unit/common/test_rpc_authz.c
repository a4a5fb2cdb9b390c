/*
 * test_rpc_authz.c — node roles (common/rpc_authz.c): the SAN URI parser,
 * the role table for methods and meta's Submit ops, and the roles read
 * back from a certificate made by iolake-admin ca issue
 * (rpc_tls_cert_peer).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>

#include "admin/ca.h"
#include "common/log.h"
#include "common/rpc_authz.h"
#include "common/rpc_tls.h"
#include "proto/echo.pb-c.h"
#include "proto/meta.pb-c.h"
#include "proto/native.pb-c.h"
#include "proto/osd.pb-c.h"
#include "tests/lib/scratch.h"

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
	/* Unlisted: nobody (deny by default). */
	ck_assert_uint_eq(rpc_authz_method_roles("iolake.test.Echo", "Echo"), RPC_ROLE_ANY);
	ck_assert_uint_eq(rpc_authz_method_roles(M, "NoSuchMethod"), 0);
	ck_assert_uint_eq(rpc_authz_method_roles("iolake.x.New", "Put"), 0);
	ck_assert(!rpc_authz_allows(RPC_ROLE_ANY | RPC_ROLE_USER,
				    rpc_authz_method_roles(M, "NoSuchMethod")));
	/* A user's certificate: the native port, nothing of a node's. */
	ck_assert(rpc_authz_allows(RPC_ROLE_USER,
				   rpc_authz_method_roles("iolake.native.Native", "Get")));
	ck_assert(rpc_authz_allows(RPC_ROLE_GW,
				   rpc_authz_method_roles("iolake.native.Native", "Get")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_USER, rpc_authz_method_roles(M, "Status")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_USER, rpc_authz_method_roles(M, "GetAccessKey")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_USER, rpc_authz_method_roles(O, "GetShard")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_USER, rpc_authz_op_roles("put_object")));
	/* Submit ops. */
	ck_assert(rpc_authz_allows(RPC_ROLE_GW, rpc_authz_op_roles("put_object")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_op_roles("put_object")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_ADMIN, rpc_authz_op_roles("put_object")));
	ck_assert(rpc_authz_allows(RPC_ROLE_OSD, rpc_authz_op_roles("register_osd")));
	ck_assert(!rpc_authz_allows(RPC_ROLE_GW, rpc_authz_op_roles("register_osd")));
	static const char *const admin_ops[] = { "put_user", "delete_user", "put_access_key",
		"delete_access_key", "set_user_admin", "set_quota", "remove_osd", "set_osd_state",
		"set_expect_osds",
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

/* The services every binary and test serves, from the generated code. */
static const ProtobufCServiceDescriptor *const all_services[] = {
	&iolake__meta__meta__descriptor, &iolake__osd__osd__descriptor,
	&iolake__native__native__descriptor, &iolake__test__echo__descriptor,
	&iolake__test__nobody__descriptor,
};
#define N_SERVICES (sizeof(all_services) / sizeof(all_services[0]))

/* Deny by default needs a row for every method: walk every method of every
 * generated service; each has roles, and each service a server role. */
START_TEST(every_method_listed)
{
	for (size_t i = 0; i < N_SERVICES; i++) {
		const ProtobufCServiceDescriptor *d = all_services[i];
		ck_assert_msg(rpc_authz_server_roles(d->name) != 0,
			      "service %s has no server role in common/rpc_authz.c", d->name);
		for (unsigned m = 0; m < d->n_methods; m++)
			ck_assert_msg(rpc_authz_method_roles(d->name, d->methods[m].name) != 0,
				      "%s/%s is not in common/rpc_authz.c's role table: every "
				      "method needs a row (docs/security.md, Node roles)", d->name,
				      d->methods[m].name);
	}
}
END_TEST

/* The repository's directory, from this file's path (the build passes it
 * relative to the root, where tests run, or absolute). */
static void repo_path(const char *rel, char *out, size_t cap)
{
	const char *me = __FILE__, *tail = strstr(me, "tests/unit/common/");
	snprintf(out, cap, "%.*s%s", tail ? (int)(tail - me) : 0, me, rel);
}

static bool service_known(const char *pkg, const char *name)
{
	char full[260];   /* two names of up to 127 bytes (the callers' buffers), a dot */
	snprintf(full, sizeof(full), "%s.%s", pkg, name);
	for (size_t i = 0; i < N_SERVICES; i++)
		if (!strcmp(all_services[i]->name, full))
			return true;
	return false;
}

/* A .proto file's `service` that all_services above does not hold would
 * escape every_method_listed: read them all. */
START_TEST(every_service_walked)
{
	char dir[PATH_MAX];
	repo_path("common/proto", dir, sizeof(dir));
	DIR *dp = opendir(dir);
	ck_assert_msg(dp != NULL, "cannot open %s", dir);
	int services = 0;
	for (struct dirent *e; (e = readdir(dp));) {
		size_t n = strlen(e->d_name);
		if (n < 7 || strcmp(e->d_name + n - 6, ".proto"))
			continue;
		char path[PATH_MAX + 256], line[512], pkg[128] = "";
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f)) {
			char name[128];
			if (sscanf(line, "package %127[A-Za-z0-9_.];", pkg) == 1)
				continue;
			if (sscanf(line, "service %127[A-Za-z0-9_]", name) == 1) {
				services++;
				ck_assert_msg(service_known(pkg, name), "%s: service %s.%s is not walked "
					      "by test_rpc_authz (add its descriptor)", e->d_name, pkg,
					      name);
			}
		}
		fclose(f);
	}
	closedir(dp);
	ck_assert_int_eq(services, (int)N_SERVICES);
}
END_TEST

/* What a client wants of its server. */
START_TEST(server_roles)
{
	struct rpc_ident gw = { .roles = RPC_ROLE_GW }, osd = { .roles = RPC_ROLE_OSD };
	char why[256];
	ck_assert_int_eq(rpc_authz_server_check(&osd, "iolake.osd.Osd", why, sizeof(why)), 0);
	ck_assert_int_eq(rpc_authz_server_check(&gw, "iolake.osd.Osd", why, sizeof(why)), -EACCES);
	ck_assert_msg(strstr(why, "holds roles gw") && strstr(why, "served by osd"), "%s", why);
	ck_assert_int_eq(rpc_authz_server_check(&osd, "iolake.meta.Meta", why, sizeof(why)),
			 -EACCES);
	ck_assert_int_eq(rpc_authz_server_check(&gw, "iolake.native.Native", why, sizeof(why)),
			 0);
	ck_assert_int_eq(rpc_authz_server_check(&gw, "iolake.x.Unknown", why, sizeof(why)),
			 -EACCES);
}
END_TEST

/* ca issue --role osd,gw --node 12 reads back as those roles and node. */
START_TEST(cert_roles)
{
	char dir[128], cdir[160], pfx[160], pem[170], why[256];
	test_scratch_path(dir, sizeof(dir), "test_rpc_authz.%d", (int)getpid());
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
	tcase_add_test(tc, every_method_listed);
	tcase_add_test(tc, every_service_walked);
	tcase_add_test(tc, server_roles);
	tcase_add_test(tc, cert_roles);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
