/*
 * main.c — iolake-admin: flags, and dispatch of each command to the file
 * of its group (each a client of the services, through meta/client.h and
 * the OSDs' own RPC; none includes a service's internals):
 *
 *   iolake-admin (--meta ADDR,... | --data-dir AIO_DIR) [--json] [--timeout DUR] COMMAND
 *     cluster status | wait-healthy [S]        admin/cluster.c (health.c)
 *     osd ls | df | scrub-status | out|in|rm ID admin/osd.c
 *     pg ls | check                            admin/pg.c
 *     user add|rm|ls|show|grant|revoke|admin|rekey, cluster init-key
 *                                              admin/user.c
 *     quota set|get|clear                      admin/quota.c
 *     bucket ls                                admin/bucket.c
 *     range ls | split | merge                 admin/range.c
 *     member add ID@HOST:PORT | member rm ID   admin/member.c
 *     ca init | issue | revoke | crl           admin/ca.c (no meta)
 *     api METHOD PATH [BODY]                   admin/api.c (--data-dir only)
 *
 * --data-dir finds a local iolake-aio by AIO_DIR/aio.json (admin/aio.h):
 * its meta admin address stands for --meta; a missing or stale file (aio
 * not running) is exit 2 with a line saying which.
 *
 * Output is a table for people, or JSON with --json. Exit 0 on success,
 * 1 when the cluster refused or could not be reached (one line on stderr
 * says why), 2 on bad usage or an unknown command. Secrets are printed
 * only by `user add`, once.
 *
 * Single-threaded: calls are started on the main loop and the loop is run
 * until each answers (admin/cmd.h; one call at a time, except cluster
 * status).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "admin/aio.h"
#include "admin/api.h"
#include "admin/bucket.h"
#include "admin/ca.h"
#include "admin/cluster.h"
#include "admin/cmd.h"
#include "admin/member.h"
#include "admin/osd.h"
#include "admin/pg.h"
#include "admin/quota.h"
#include "admin/range.h"
#include "admin/user.h"
#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/rpc_fault.h"
#include "common/rpc_tls.h"
#include "meta/client.h"

static const char synopsis[] =
	"COMMAND\n\ncommands:\n"
	"  cluster status            each member: id, address, role, term, commit index,\n"
	"                            state digest; map epoch; the Raft configuration;\n"
	"                            the shard GC queue length; PGs per state, recovery\n"
	"                            left, rate and ETA\n"
	"  cluster wait-healthy [S]  wait (up to S seconds, default 600) until every\n"
	"                            member answers with a leader, every OSD is up and\n"
	"                            in, every PG active+clean: exit 0, else 1 (what a\n"
	"                            rolling restart waits for between nodes)\n"
	"  osd ls                    the OSDs of the map (IN says out(admin) while an\n"
	"                            operator holds one out)\n"
	"  osd out ID | osd in ID    take an OSD out and hold it out (its beats bring it\n"
	"                            up, not in) / clear that and take it in\n"
	"  osd rm ID                 remove a down and out OSD from the map\n"
	"  osd expect N              a new cluster's PGs wait for N OSDs to be in\n"
	"                            (iolake-meta --expect-osds), then are placed in\n"
	"                            rank order: change N while they wait; 0 places\n"
	"                            them now\n"
	"  pg ls                     one line per PG: state, OSDs (7*: down), primary,\n"
	"                            stripes and bytes left, rate, ETA (the map alone\n"
	"                            from a meta without PG states)\n"
	"  osd df                    each OSD's space (its Status: total, used, free,\n"
	"                            inline bytes), asked directly; an aio's (--data-dir)\n"
	"                            through its admin API, as scrub-status\n"
	"  osd scrub-status          each OSD's scrubber (rate, passes, shards, bytes,\n"
	"                            position, errors), its deep scrub (PGs, stripes,\n"
	"                            repaired, inconsistent) and the bad shards it recorded\n"
	"  pg check                  asks each PG's up OSDs for their shards: stripes\n"
	"                            lacking a shard on an up slot (exit 3 if any)\n"
	"  user add NAME [--access-key K --secret-key S]\n"
	"                            prints the new access key and secret (generated,\n"
	"                            or the ones given: a deployment's known keys)\n"
	"  user ls | user show NAME | user rm NAME\n"
	"                            names, admin flag, key ids and grants (never secrets)\n"
	"  user grant NAME --bucket B (--read|--write|--full) | user revoke NAME --bucket B\n"
	"                            per-bucket access beyond the user's own buckets\n"
	"  user admin NAME on|off    an admin may do everything, as root\n"
	"  user rekey                seal every secret still stored in clear\n"
	"  cluster init-key --out FILE\n"
	"                            a new cluster key (mode 0600) for --secret-key-file\n"
	"  quota set (--bucket B | --user U) [--max-bytes N] [--max-objects N]\n"
	"                            a bucket's, or a user's over its buckets (0: no limit);\n"
	"                            writes past it get 403 QuotaExceeded\n"
	"  quota get (--bucket B | --user U) | quota clear (--bucket B | --user U)\n"
	"  bucket ls\n"
	"  range ls [--bucket B]     key ranges: id, bucket, start, end, group, its leader,\n"
	"                            objects, bytes, uploads (from the group)\n"
	"  range split BUCKET KEY    split the range holding KEY at KEY, moving the records\n"
	"                            of the right half to the group holding the fewest ranges\n"
	"  range merge BUCKET KEY    merge the range holding KEY with its right neighbour\n"
	"                            (into the left one's group)\n"
	"  member add ID@HOST:PORT | member rm ID\n"
	"  ca init --dir DIR | ca issue --dir DIR --name N --role R[,R..] [--node ID]\n"
	"        [--ip A,..] [--dns H,..] --out PREFIX | ca revoke --dir DIR CERT.pem |\n"
	"        ca crl --dir DIR    the cluster CA, node certificates with their roles\n"
	"                            (meta, osd, gw, admin) and the revocation list for\n"
	"                            --rpc-tls-* (`iolake-admin ca` for details)\n"
	"  api METHOD PATH [BODY]    one call to the admin HTTP API (with --data-dir:\n"
	"                            the URL from aio.json, signed with the root key);\n"
	"                            PATH \"cluster\" is /api/v1/cluster\n";

/* quota and range keep the (client, loop, ..., out, err) form they were
 * written with; these adapt them to a group's entry point. */
static int quota_group(const struct admin_ctx *x, int nargs, char **args)
{
	return admin_quota(x->cli, x->loop, nargs, args, x->json, x->out, x->err);
}

static int range_group(const struct admin_ctx *x, int nargs, char **args)
{
	const char *verb = args[0];
	if (!strcmp(verb, "ls") &&
	    (nargs == 1 || (nargs == 3 && !strcmp(args[1], "--bucket"))))
		return meta_range_admin_ls(x->cli, x->loop, nargs == 3 ? args[2] : NULL, x->json,
					   x->out, x->err);
	if (!strcmp(verb, "split") && nargs == 3)
		return meta_range_admin_split(x->cli, x->loop, args[1], args[2], x->out, x->err);
	if (!strcmp(verb, "merge") && nargs == 3)
		return meta_range_admin_merge(x->cli, x->loop, args[1], args[2], x->out, x->err);
	return ADMIN_UNKNOWN;
}

/* The command groups that ask meta: each gets the words after its name. */
static const struct {
	const char *name;
	int (*run)(const struct admin_ctx *x, int nargs, char **args);
} groups[] = {
	{ "cluster", admin_cluster },
	{ "osd", admin_osd },
	{ "pg", admin_pg },
	{ "user", admin_user },
	{ "quota", quota_group },
	{ "bucket", admin_bucket },
	{ "range", range_group },
	{ "member", admin_member },
};

int main(int argc, char **argv)
{
	static uv_loop_t loop;
	struct meta_client *cli;
	bool json = false;
	struct flag_list members = { 0 };
	uint64_t timeout_ms = 10000;
	const char *aio_dir = NULL;
	const char *debug_fault = NULL;
	struct rpc_tls_files tlsf = { 0 };
	const struct flag_spec specs[] = {
		RPC_TLS_FLAGS(tlsf),
		{ .name = "meta", .type = FLAG_LIST, .dst = &members,
		  .metavar = "ADDR,...", .help = "meta members (any of them)" },
		{ .name = "data-dir", .type = FLAG_STRING, .dst = &aio_dir, .metavar = "AIO_DIR",
		  .help = "a local iolake-aio's data dir: its meta, from AIO_DIR/aio.json" },
		{ .name = "json", .type = FLAG_BOOL, .dst = &json, .help = "JSON output" },
		{ .name = "timeout", .type = FLAG_DURATION, .dst = &timeout_ms, .min = 100,
		  .max = 3600000, .help = "give up on a command after this long" },
		RPC_FAULT_FLAG(debug_fault),
		{ 0 }
	};
	char err[256];
	int pos;
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, argv[0], synopsis, specs);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	int nargs = argc - pos;
	char **a = argv + pos;
	if (nargs < 2) {
		flags_usage(stderr, argv[0], synopsis, specs);
		return 2;
	}
	if (!strcmp(a[0], "ca")) {
		rc = admin_ca(nargs - 1, a + 1, stdout, stderr);
		flags_free(specs);
		return rc;
	}
	if (!strcmp(a[0], "cluster") && !strcmp(a[1], "init-key")) {
		rc = admin_cluster_init_key(nargs - 2, a + 2, stdout, stderr);
		flags_free(specs);
		return rc;
	}
	if (!members.n == !aio_dir) {
		fprintf(stderr, "%s: give --meta ADDR,... or --data-dir AIO_DIR (one of them)\n",
			argv[0]);
		return 2;
	}
	struct admin_aio_info aio;
	const char *aio_meta[1] = { aio.meta_admin };
	if (aio_dir) {
		char why[8192];
		if (admin_aio_find(aio_dir, &aio, why, sizeof(why))) {
			fprintf(stderr, "iolake-admin: error: %s\n", why);
			return 2;
		}
	}
	if (!strcmp(a[0], "api")) {
		if (!aio_dir) {
			fprintf(stderr, "%s: api needs --data-dir AIO_DIR\n", argv[0]);
			return 2;
		}
		rc = admin_api(aio_dir, &aio, nargs, a, stdout, stderr);
		flags_free(specs);
		return rc;
	}
	log_set_level(LOG_LEVEL_ERROR);
	if (rpc_fault_flag_apply(argv[0], debug_fault))
		return 2;
	if (rpc_tls_setup(&tlsf, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	uv_loop_init(&loop);
	struct meta_client_opts o = {
		.members = aio_dir ? aio_meta : (const char *const *)members.items,
		.n_members = aio_dir ? 1 : members.n,
		.attempt_timeout_ms = 2000,
		.retry_for_ms = (uint32_t)timeout_ms,
	};
	rc = meta_client_new(&loop, &o, &cli);
	if (rc) {
		fprintf(stderr, "%s: flag --meta: %s\n", argv[0], iol_strerror(rc));
		return 2;
	}
	const struct admin_ctx x = { .cli = cli, .loop = &loop, .json = json, .out = stdout,
				     .err = stderr, .aio_dir = aio_dir, .aio = aio_dir ? &aio : NULL };
	rc = ADMIN_UNKNOWN;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (!strcmp(a[0], groups[i].name))
			rc = groups[i].run(&x, nargs - 1, a + 1);
	if (rc == ADMIN_UNKNOWN) {
		fprintf(stderr, "%s: unknown command:", argv[0]);
		for (int i = 0; i < nargs; i++)
			fprintf(stderr, " %s", a[i]);
		fprintf(stderr, "\n");
		rc = 2;
	}
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	flags_free(specs);
	return rc;
}
