/*
 * test_raft.c — the replicated meta service end to end in one process:
 * members (meta/node.h) on their own loop_threads over loopback TCP (RPC
 * and Raft), data under /dev/shm, driven through meta/client.h from a
 * load loop_thread.
 *
 *   single      one voter: its root log segments META_NODE_SEGMENT_BYTES;
 *               writes, barrier reads, OSD down/out by missed
 *               heartbeats, WatchMap wakes on the epoch change
 *   pg_health   PgStats before any report (unknown); FlagPgs handed to the
 *               PG's primary once, in its ReportPgs answer; a report's state
 *               in PgStats and the PG gauges; an unknown reporter NOT_FOUND;
 *               an operator's out (admin_out) holds against heartbeats
 *   status_digest_changes  Status's state_digest is meta_state_digest's
 *               hex at the index it names; asked twice, the same; after
 *               one more write, another
 *   read_index  reads write nothing: 3,000 reads leave the Raft log as it
 *               was (ReadIndex rounds, no barrier); read-your-writes
 *               through every member across a leader change
 *   failover    3 voters under a steady write load; the leader's member is
 *               closed (its sockets vanish as if killed); a new leader is
 *               elected, the load resumes; every acknowledged put is present
 *               with the generation it was acknowledged with, none applied
 *               twice (each put has if_none_match: a second apply would
 *               answer CONFLICT); the old leader rejoins; digests agree;
 *               all three restart with the same digest
 *   snapshot_catch_up  a follower is down while 10,000 ops commit
 *               (snapshot threshold 64 entries, trailing 16); restarted, it
 *               installs one file snapshot (a checkpoint fetched with
 *               FetchSnapshot: restore counter 1, fetched bytes > 0) and its
 *               digest equals the others'; then all three restart: each
 *               restores its own snapshot without loading anything
 *               (restore counter 0, nothing fetched)
 *   snapshot_by_bytes  one voter, entry threshold 1024 but 32 KiB of
 *               commands: ~750 small entries take a snapshot (by bytes),
 *               more rounds until two are done, and a restart loads none
 *               of them
 *   snapshot_resume  as above, but the member's in-cp-<A>-<M> directories already
 *               hold half of every file of the newest checkpoint of each
 *               running member (the leader's, and the other's in case the
 *               leadership moves before the restart) and one whole file
 *               with a flipped byte: it fetches exactly the rest of the one
 *               it installs and that file again, and ends with the
 *               leader's digest; then snap_fetch directly: a dead first
 *               source (a port held bound, not listening) and one that
 *               lacks the checkpoint (NOT_FOUND) cost a switch each and the
 *               leader serves it whole; a checkpoint nobody has times out
 *               (-ETIMEDOUT) at its deadline
 *
 * The load's window and the kill point come from a seed, printed;
 * RAFT_TEST_SEED=<n> replays one.
 */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <raft.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/log.h"
#include "common/loop.h"
#include "meta/client.h"
#include "common/crc.h"
#include "meta/node.h"
#include "meta/snap.h"
#include "meta_test_util.h"
#include "raft_cluster.h"

/* The size of the root group's first prepared Raft segment, waiting for
 * raft_uv to make it (it prepares them on libuv's pool); 0 if none in 5 s. */
static off_t root_segment_bytes(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/raft/open-1", dir);
	struct stat st;
	for (int t = 0; t < 250; t++) {
		if (stat(path, &st) == 0 && st.st_size > 0)
			return st.st_size;
		usleep(20000);
	}
	return 0;
}

START_TEST(single)
{
	struct cluster c;
	cluster_init(&c, 1, 0, 0);
	m_start(&c, 0);
	ck_assert_int_eq(wait_leader(&c, 5000), 0);
	/* The root's log segments are META_NODE_SEGMENT_BYTES, not raft_uv's
	 * 8 MiB: a full segment's close stalls the loop (meta/node.h). */
	ck_assert_int_eq(root_segment_bytes(c.m[0].dir), (off_t)META_NODE_SEGMENT_BYTES);
	uv_loop_t loop;
	uv_loop_init(&loop);
	const char *members[] = { c.m[0].addr };
	struct meta_client *cli;
	struct meta_client_opts o = { .members = members, .n_members = 1 };
	ck_assert_int_eq(meta_client_new(&loop, &o, &cli), 0);

	/* The leader initialises the map on election. */
	Iolake__Meta__GetMapRequest gm = IOLAKE__META__GET_MAP_REQUEST__INIT;
	Iolake__Meta__GetMapResponse *map = NULL;
	for (int t = 0; t < 100; t++) {
		map = (void *)run_call(&loop, cli, META_M_GET_MAP, &gm.base);
		if (map->status == IOLAKE__META__STATUS__STATUS_OK)
			break;
		protobuf_c_message_free_unpacked(&map->base, NULL);
		map = NULL;
		usleep(20000);
	}
	ck_assert_ptr_nonnull(map);
	ck_assert_uint_eq(map->map->pg_count, 16);
	uint64_t epoch0 = map->map->epoch;
	protobuf_c_message_free_unpacked(&map->base, NULL);

	/* Register an OSD; it never beats: down after 300 ms, out after 700. */
	Iolake__Meta__OpResult *r = register_osd_sync(&loop, cli, 7, "127.0.0.1:1", "h7", 1);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	ck_assert_uint_gt(r->epoch, epoch0);
	uint64_t epoch = r->epoch;
	protobuf_c_message_free_unpacked(&r->base, NULL);

	/* A beat keeps it up for a while; then WatchMap sees down, then out. */
	Iolake__Meta__HeartbeatRequest hb = IOLAKE__META__HEARTBEAT_REQUEST__INIT;
	hb.osd_id = 7;
	Iolake__Meta__HeartbeatResponse *hr = (void *)run_call(&loop, cli, META_M_HEARTBEAT, &hb.base);
	ck_assert_int_eq(hr->status, IOLAKE__META__STATUS__STATUS_OK);
	protobuf_c_message_free_unpacked(&hr->base, NULL);
	hb.osd_id = 8;
	hr = (void *)run_call(&loop, cli, META_M_HEARTBEAT, &hb.base);
	ck_assert_int_eq(hr->status, IOLAKE__META__STATUS__STATUS_NOT_FOUND);
	protobuf_c_message_free_unpacked(&hr->base, NULL);

	bool seen_down = false, seen_out = false;
	uint64_t t0 = loop_now_ms();
	while (!seen_out && loop_now_ms() - t0 < 5000) {
		Iolake__Meta__WatchMapRequest w = IOLAKE__META__WATCH_MAP_REQUEST__INIT;
		w.epoch = epoch;
		w.timeout_ms = 2000;
		Iolake__Meta__WatchMapResponse *wr = (void *)run_call(&loop, cli, META_M_WATCH_MAP, &w.base);
		if (wr->changed) {
			ck_assert_uint_gt(wr->map->epoch, epoch);
			epoch = wr->map->epoch;
			for (size_t i = 0; i < wr->map->n_osds; i++)
				if (wr->map->osds[i]->id == 7) {
					if (!wr->map->osds[i]->up)
						seen_down = true;
					if (!wr->map->osds[i]->in) {
						ck_assert(seen_down || !wr->map->osds[i]->up);
						seen_out = true;
					}
				}
		}
		protobuf_c_message_free_unpacked(&wr->base, NULL);
	}
	ck_assert(seen_down);
	ck_assert(seen_out);
	ck_assert_uint_ge(loop_now_ms() - t0, 400);

	/* A beat brings it back up and in. */
	hb.osd_id = 7;
	hr = (void *)run_call(&loop, cli, META_M_HEARTBEAT, &hb.base);
	protobuf_c_message_free_unpacked(&hr->base, NULL);
	Iolake__Meta__WatchMapRequest w = IOLAKE__META__WATCH_MAP_REQUEST__INIT;
	w.epoch = epoch;
	w.timeout_ms = 3000;
	Iolake__Meta__WatchMapResponse *wr = (void *)run_call(&loop, cli, META_M_WATCH_MAP, &w.base);
	ck_assert(wr->changed);
	ck_assert(wr->map->osds[0]->up && wr->map->osds[0]->in);
	epoch = wr->map->epoch;
	protobuf_c_message_free_unpacked(&wr->base, NULL);

	/* An OSD registering long after the election gets the whole grace
	 * period for its first beat: not marked down before 300 ms (it once
	 * was at the next sweep, the leader counting from its election). */
	uint64_t t_reg = loop_now_ms();
	r = register_osd_sync(&loop, cli, 9, "127.0.0.1:2", "h9", 1);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	epoch = r->epoch;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	bool down9 = false;
	while (!down9 && loop_now_ms() - t_reg < 5000) {
		w.epoch = epoch;
		w.timeout_ms = 2000;
		wr = (void *)run_call(&loop, cli, META_M_WATCH_MAP, &w.base);
		if (wr->changed) {
			epoch = wr->map->epoch;
			for (size_t i = 0; i < wr->map->n_osds; i++)
				if (wr->map->osds[i]->id == 9 && !wr->map->osds[i]->up)
					down9 = true;
		}
		protobuf_c_message_free_unpacked(&wr->base, NULL);
	}
	ck_assert(down9);
	ck_assert_uint_ge(loop_now_ms() - t_reg, 300);

	/* Reads go through a barrier and see the writes. */
	Iolake__Meta__ListUsersRequest lu = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	Iolake__Meta__ListUsersResponse *lr = (void *)run_call(&loop, cli, META_M_LIST_USERS, &lu.base);
	ck_assert_uint_eq(lr->n_users, 0);
	protobuf_c_message_free_unpacked(&lr->base, NULL);

	meta_client_close(cli);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/* PG health on the leader: PgStats before any report (unknown), FlagPgs
 * handed to the PG's primary in its ReportPgs answer and only then,
 * a report's state in PgStats and the gauges, an unknown reporter, and an
 * operator's out that a heartbeat does not undo. */
static Iolake__Meta__PgStatsResponse *pg_stats(uv_loop_t *loop, struct meta_client *cli)
{
	Iolake__Meta__PgStatsRequest q = IOLAKE__META__PG_STATS_REQUEST__INIT;
	return (void *)run_call(loop, cli, META_M_PG_STATS, &q.base);
}

static void free_msg(void *m)
{
	protobuf_c_message_free_unpacked(m, NULL);
}

START_TEST(pg_health)
{
	struct cluster c;
	cluster_init(&c, 1, 0, 0);
	c.m[0].o.osd_down_after_ms = 60000;
	c.m[0].o.osd_out_after_ms = 120000;
	m_start(&c, 0);
	ck_assert_int_eq(wait_leader(&c, 5000), 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	const char *members[] = { c.m[0].addr };
	struct meta_client *cli;
	struct meta_client_opts o = { .members = members, .n_members = 1 };
	ck_assert_int_eq(meta_client_new(&loop, &o, &cli), 0);

	/* Six OSDs on six hosts: every 4+2 PG holds all of them. */
	for (uint32_t id = 1; id <= 6; id++) {
		char host[8];
		snprintf(host, sizeof(host), "h%u", id);
		Iolake__Meta__OpResult *r;
		for (int t = 0;; t++) {   /* the map may not exist yet */
			r = register_osd_sync(&loop, cli, id, "127.0.0.1:1", host, 0);
			if (r->status == IOLAKE__META__STATUS__STATUS_OK || t == 100)
				break;
			free_msg(r);
			usleep(20000);
		}
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		free_msg(r);
	}
	/* PgStats answers from the leader's cached map: wait for all six. */
	Iolake__Meta__PgStatsResponse *ps = NULL;
	for (int t = 0; t < 100; t++) {
		ps = pg_stats(&loop, cli);
		if (ps->status == IOLAKE__META__STATUS__STATUS_OK && ps->n_pgs == 16 &&
		    ps->pgs[15]->n_osds == 6 && ps->pgs[15]->osds[5] != 0xFFFFFFFFu &&
		    ps->pgs[15]->up_mask == 0x3f)
			break;
		free_msg(ps);
		ps = NULL;
		usleep(20000);
	}
	ck_assert_ptr_nonnull(ps);
	ck_assert_uint_eq(ps->n_counts, 1);
	ck_assert_str_eq(ps->counts[0]->state, "unknown");
	ck_assert_uint_eq(ps->counts[0]->pgs, 16);
	uint32_t prim0 = ps->pgs[0]->primary, slots0[6];
	uint32_t other = ps->pgs[0]->osds[0] == prim0 ? ps->pgs[0]->osds[1] : ps->pgs[0]->osds[0];
	bool in_set = false;
	for (size_t i = 0; i < ps->pgs[0]->n_osds; i++)
		in_set |= ps->pgs[0]->osds[i] == prim0;
	ck_assert(in_set);
	memcpy(slots0, ps->pgs[0]->osds, sizeof(slots0));
	uint64_t epoch = ps->epoch;
	free_msg(ps);

	/* FlagPgs: PG 0 and every PG with the same primary come back to it. */
	uint32_t flags[2] = { 0, 99 };
	Iolake__Meta__FlagPgsRequest fq = IOLAKE__META__FLAG_PGS_REQUEST__INIT;
	fq.pgs = flags;
	fq.n_pgs = 2;
	fq.reason = "put_partial";
	Iolake__Meta__FlagPgsResponse *fr = (void *)run_call(&loop, cli, META_M_FLAG_PGS, &fq.base);
	ck_assert_int_eq(fr->status, IOLAKE__META__STATUS__STATUS_OK);
	free_msg(fr);

	Iolake__Meta__PgReport rep = IOLAKE__META__PG_REPORT__INIT;
	Iolake__Meta__PgReport *reps[1] = { &rep };
	rep.pg = 0;
	rep.epoch = epoch;
	rep.osds = slots0;
	rep.n_osds = 6;
	rep.up_mask = 0x3f;
	rep.state = "recovering";
	rep.stripes_missing = 7;
	rep.bytes_missing = 4000;
	rep.rate_bytes_per_s = 1000;
	Iolake__Meta__ReportPgsRequest rq = IOLAKE__META__REPORT_PGS_REQUEST__INIT;
	rq.osd_id = 99;   /* unknown OSD */
	rq.epoch = epoch;
	rq.pgs = reps;
	rq.n_pgs = 1;
	Iolake__Meta__ReportPgsResponse *rr = (void *)run_call(&loop, cli, META_M_REPORT_PGS, &rq.base);
	ck_assert_int_eq(rr->status, IOLAKE__META__STATUS__STATUS_NOT_FOUND);
	free_msg(rr);
	/* another OSD's report does not take the primary's flag */
	rq.osd_id = other;
	rq.n_pgs = 0;
	rr = (void *)run_call(&loop, cli, META_M_REPORT_PGS, &rq.base);
	ck_assert_int_eq(rr->status, IOLAKE__META__STATUS__STATUS_OK);
	ck_assert_uint_eq(rr->n_rescan_pgs, 0);
	free_msg(rr);
	rq.osd_id = prim0;
	rq.n_pgs = 1;
	rr = (void *)run_call(&loop, cli, META_M_REPORT_PGS, &rq.base);
	ck_assert_int_eq(rr->status, IOLAKE__META__STATUS__STATUS_OK);
	ck_assert_uint_eq(rr->epoch, epoch);
	ck_assert_uint_eq(rr->n_rescan_pgs, 1);
	ck_assert_uint_eq(rr->rescan_pgs[0], 0);
	free_msg(rr);
	rr = (void *)run_call(&loop, cli, META_M_REPORT_PGS, &rq.base);
	ck_assert_uint_eq(rr->n_rescan_pgs, 0);   /* handed over once */
	free_msg(rr);

	ps = pg_stats(&loop, cli);
	ck_assert_str_eq(ps->pgs[0]->state, "active+recovering");
	ck_assert(ps->pgs[0]->report_valid);
	ck_assert_ptr_nonnull(ps->pgs[0]->report);
	ck_assert_uint_eq(ps->pgs[0]->report->bytes_missing, 4000);
	ck_assert_uint_eq(ps->pgs[0]->eta_s, 4);
	ck_assert_str_eq(ps->pgs[1]->state, "unknown");
	ck_assert_uint_eq(ps->bytes_missing, 4000);
	ck_assert_uint_eq(ps->stripes_missing, 7);
	ck_assert_uint_eq(ps->eta_s, 4);
	ck_assert_uint_eq(ps->n_counts, 2);
	ck_assert_str_eq(ps->counts[0]->state, "active+recovering");
	ck_assert_str_eq(ps->counts[1]->state, "unknown");
	free_msg(ps);

	/* The gauges follow within a second or so. */
	bool seen = false;
	for (int t = 0; t < 40 && !seen; t++) {
		Iolake__Meta__MetricsRequest mq = IOLAKE__META__METRICS_REQUEST__INIT;
		Iolake__Meta__MetricsResponse *mr = (void *)run_call(&loop, cli, META_M_METRICS, &mq.base);
		seen = strstr(mr->text, "iolake_pg_state{member=\"1\",state=\"active+recovering\"} 1\n") &&
		       strstr(mr->text, "iolake_recovery_bytes_missing{member=\"1\"} 4000\n") &&
		       strstr(mr->text, "iolake_pg_flags_total{member=\"1\",reason=\"put_partial\"} 1\n");
		free_msg(mr);
		if (!seen)
			usleep(100000);
	}
	ck_assert_msg(seen, "PG gauges not rendered");

	/* osd out (admin) holds against a heartbeat. */
	Iolake__Meta__SetOsdState ss = IOLAKE__META__SET_OSD_STATE__INIT;
	ss.id = 6;
	ss.set_admin_out = ss.admin_out = true;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	op.set_osd_state = &ss;
	Iolake__Meta__OpResult *r = (void *)run_call(&loop, cli, -1, &op.base);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	free_msg(r);
	Iolake__Meta__HeartbeatRequest hb = IOLAKE__META__HEARTBEAT_REQUEST__INIT;
	hb.osd_id = 6;
	for (int t = 0; t < 15; t++) {
		Iolake__Meta__HeartbeatResponse *hr = (void *)run_call(&loop, cli, META_M_HEARTBEAT, &hb.base);
		free_msg(hr);
		usleep(100000);
	}
	Iolake__Meta__GetMapRequest gm = IOLAKE__META__GET_MAP_REQUEST__INIT;
	Iolake__Meta__GetMapResponse *map = (void *)run_call(&loop, cli, META_M_GET_MAP, &gm.base);
	ck_assert(map->map->osds[5]->id == 6 && map->map->osds[5]->up &&
		  !map->map->osds[5]->in && map->map->osds[5]->admin_out);
	free_msg(map);

	meta_client_close(cli);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/* Status's state_digest is the hex of meta_state_digest at the applied
 * index it names, the same when asked again with no write, another after
 * one more write. */
static void status_digest(uv_loop_t *loop, struct meta_client *cli, struct cluster *c,
			  char hex[65], uint64_t *index)
{
	Iolake__Meta__StatusRequest q = IOLAKE__META__STATUS_REQUEST__INIT;
	Iolake__Meta__StatusResponse *st = (void *)run_call(loop, cli, META_M_STATUS, &q.base);
	uint8_t d[32];
	char want[65];
	m_info(c, 0, d);
	hash_hex(d, 32, want);
	ck_assert_str_eq(st->state_digest, want);
	ck_assert_uint_gt(st->state_applied_index, 0);
	snprintf(hex, 65, "%s", st->state_digest);
	*index = st->state_applied_index;
	protobuf_c_message_free_unpacked(&st->base, NULL);
}

START_TEST(status_digest_changes)
{
	struct cluster c;
	cluster_init(&c, 1, 0, 0);
	m_start(&c, 0);
	ck_assert_int_eq(wait_leader(&c, 5000), 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	const char *members[] = { c.m[0].addr };
	struct meta_client *cli;
	struct meta_client_opts o = { .members = members, .n_members = 1 };
	ck_assert_int_eq(meta_client_new(&loop, &o, &cli), 0);
	/* The map the leader initialises on election is the last write of its own. */
	Iolake__Meta__GetMapRequest gm = IOLAKE__META__GET_MAP_REQUEST__INIT;
	for (int t = 0; t < 100; t++) {
		Iolake__Meta__GetMapResponse *map = (void *)run_call(&loop, cli, META_M_GET_MAP, &gm.base);
		bool ok = map->status == IOLAKE__META__STATUS__STATUS_OK;
		protobuf_c_message_free_unpacked(&map->base, NULL);
		if (ok)
			break;
		usleep(20000);
	}
	char a[65], b[65], c2[65];
	uint64_t ia, ib, ic;
	status_digest(&loop, cli, &c, a, &ia);
	status_digest(&loop, cli, &c, b, &ib);   /* the kept result */
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(ia, ib);

	Iolake__Meta__Bucket bk = IOLAKE__META__BUCKET__INIT;
	bk.name = "digest";
	bk.owner = "tester";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &bk;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	Iolake__Meta__OpResult *r = (void *)run_call(&loop, cli, -1, &op.base);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	status_digest(&loop, cli, &c, c2, &ic);
	ck_assert_uint_gt(ic, ia);
	ck_assert_str_ne(c2, a);

	meta_client_close(cli);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/*
 * read_index: linearizable reads write nothing. 3 voters; after one write,
 * 3,000 HeadObjects through clients that start at each member leave the
 * leader's last log index where it was and take no barrier (ReadIndex
 * rounds only). Then, each put is read back through a client starting at
 * every member, and the leader is closed at a seeded point in the middle:
 * every read returns the generation its put was acknowledged with.
 */
START_TEST(read_index)
{
	uint32_t seed = test_seed("read_index");
	struct cluster c;
	int leader = cluster_up(&c, 0, 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli[NMEMB];
	for (size_t j = 0; j < NMEMB; j++) {
		const char *members[NMEMB];
		for (size_t i = 0; i < NMEMB; i++)
			members[i] = c.m[(j + i) % NMEMB].addr;
		struct meta_client_opts o = { .members = members, .n_members = NMEMB,
					      .attempt_timeout_ms = 1000, .retry_for_ms = 30000 };
		ck_assert_int_eq(meta_client_new(&loop, &o, &cli[j]), 0);
	}
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = "bkt";
	b.owner = "tester";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	free_msg(run_call(&loop, cli[0], -1, &op.base));
	uint64_t g0 = put_sync(&loop, cli[0], "k0");

	wait_converged(&c, 10000);
	leader = wait_leader(&c, 5000);
	struct meta_node_info before = m_info(&c, (size_t)leader, NULL);
	for (unsigned i = 0; i < 3000; i++)
		ck_assert_uint_eq(head_gen(&loop, cli[i % NMEMB], "k0"), g0);
	struct meta_node_info after = m_info(&c, (size_t)leader, NULL);
	printf("read_index: 3000 reads: last index %llu -> %llu, barriers %llu -> %llu, "
	       "rounds %llu -> %llu\n",
	       (unsigned long long)before.last_index, (unsigned long long)after.last_index,
	       (unsigned long long)before.read_barriers, (unsigned long long)after.read_barriers,
	       (unsigned long long)before.read_rounds, (unsigned long long)after.read_rounds);
	ck_assert_int_eq(after.role, RAFT_LEADER);
	ck_assert_uint_eq(after.last_index, before.last_index);
	ck_assert_uint_eq(after.read_barriers, before.read_barriers);
	ck_assert_uint_gt(after.read_rounds, before.read_rounds);

	/* Read your writes through every member, across a leader change. */
	unsigned kill_at = 20 + seed % 60;
	for (unsigned i = 0; i < 150; i++) {
		char key[32];
		key_of(i, key);
		uint64_t g = put_sync(&loop, cli[i % NMEMB], key);
		for (size_t j = 0; j < NMEMB; j++)
			ck_assert_msg(head_gen(&loop, cli[j], key) == g,
				      "read %u through member %zu missed its write", i, j + 1);
		if (i == kill_at) {
			printf("read_index: closing leader %d after put %u\n", leader + 1, i);
			m_stop(&c, (size_t)leader);
		}
	}
	int nl = wait_leader(&c, 10000);
	ck_assert_int_ge(nl, 0);
	ck_assert_int_ne(nl, leader);
	struct meta_node_info ni = m_info(&c, (size_t)nl, NULL);
	printf("read_index: new leader %d: barriers %llu rounds %llu\n", nl + 1,
	       (unsigned long long)ni.read_barriers, (unsigned long long)ni.read_rounds);
	ck_assert_uint_gt(ni.read_rounds, 0);

	for (size_t j = 0; j < NMEMB; j++)
		meta_client_close(cli[j]);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	m_start(&c, (size_t)leader);
	wait_converged(&c, 20000);
	assert_digests_equal(&c, NULL);
	cluster_free(&c);
}
END_TEST

START_TEST(failover)
{
	uint32_t seed = test_seed("failover");
	struct cluster c;
	int leader = cluster_up(&c, 0, 0);

	const unsigned total = 6000;
	unsigned window = 8 + seed % 57;
	unsigned kill_at = 1000 + seed % 1500;
	printf("failover: window=%u kill after %u acks, leader=%d\n", window, kill_at, leader + 1);
	struct load L;
	load_init(&L, &c, total, window);
	while (atomic_load(&L.acked) < kill_at && !atomic_load(&L.done))
		usleep(2000);
	ck_assert_uint_eq(atomic_load(&L.bad) + atomic_load(&L.failed), 0);

	uint64_t old_term = m_info(&c, (size_t)leader, NULL).term;
	m_stop(&c, (size_t)leader);
	int nl = wait_leader(&c, 10000);
	ck_assert_int_ge(nl, 0);
	ck_assert_int_ne(nl, leader);
	ck_assert_uint_gt(m_info(&c, (size_t)nl, NULL).term, old_term);

	load_wait(&L, 60000);
	printf("failover: acked=%u failed=%u bad=%u longest pause=%llu ms\n", atomic_load(&L.acked),
	       atomic_load(&L.failed), atomic_load(&L.bad), (unsigned long long)L.max_gap_ms);
	ck_assert_uint_eq(atomic_load(&L.failed), 0);
	ck_assert_uint_eq(atomic_load(&L.bad), 0);   /* no CONFLICT: nothing applied twice */
	ck_assert_uint_eq(atomic_load(&L.acked), total);

	/* The old leader rejoins and catches up. */
	m_start(&c, (size_t)leader);
	wait_converged(&c, 20000);
	for (size_t i = 0; i < NMEMB; i++)
		verify_member(&c, i, &L, total);
	uint8_t before[32], after[32];
	assert_digests_equal(&c, before);

	/* Restart all three: the same state on each. */
	for (size_t i = 0; i < NMEMB; i++)
		m_stop(&c, i);
	for (size_t i = 0; i < NMEMB; i++)
		m_start(&c, i);
	ck_assert_int_ge(wait_leader(&c, 10000), 0);
	wait_converged(&c, 20000);
	assert_digests_equal(&c, after);
	ck_assert_msg(!memcmp(before, after, 32), "state changed across a restart");
	for (size_t i = 0; i < NMEMB; i++)
		verify_member(&c, i, &L, total);

	load_free(&L);
	cluster_free(&c);
}
END_TEST

/* Stop member `down`, commit 10,000 ops with few per entry (window 4:
 * thousands of entries, far past the threshold and the trailing log). */
static int snapshot_setup(struct cluster *c, struct load *L, const char *name, size_t *down_out)
{
	uint32_t seed = test_seed(name);
	cluster_init(c, NMEMB, 64, 16);
	for (size_t i = 0; i < NMEMB; i++)
		m_start(c, i);
	int leader = wait_leader(c, 10000);
	ck_assert_int_ge(leader, 0);
	size_t down = ((size_t)leader + 1 + seed % 2) % NMEMB;
	wait_converged(c, 10000);
	m_stop(c, down);
	printf("%s: member %zu down during the load\n", name, down + 1);
	const unsigned total = 10000;
	load_init(L, c, total, 4);
	load_wait(L, 60000);
	ck_assert_uint_eq(atomic_load(&L->acked), total);
	leader = wait_leader(c, 10000);
	ck_assert_int_ge(leader, 0);
	struct meta_node_info li = m_info(c, (size_t)leader, NULL);
	printf("%s: leader %d at index %llu, %llu snapshots taken\n", name, leader + 1,
	       (unsigned long long)li.last_index, (unsigned long long)li.snapshots);
	ck_assert_uint_gt(li.last_index, 64 + 16 + 100);
	ck_assert_uint_gt(li.snapshots, 0);
	*down_out = down;
	return leader;
}

/* The newest checkpoint member `id` took, in its DIR/snap: cp-<A>-<id>
 * (path in out); A, 0 if none. */
static unsigned long long newest_cp(const char *dir, unsigned id, char out[256])
{
	char snap[128];
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	DIR *d = opendir(snap);
	unsigned long long best = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		unsigned long long a, who;
		if (sscanf(e->d_name, "cp-%llu-%llu", &a, &who) == 2 && who == id && a > best)
			best = a;
	}
	if (d)
		closedir(d);
	snprintf(out, 256, "%s/cp-%llu-%u", snap, best, id);
	return best;
}

static uint64_t dir_bytes(const char *path)
{
	DIR *d = opendir(path);
	uint64_t sum = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (!stat(p, &st) && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return sum;
}

START_TEST(snapshot_catch_up)
{
	struct cluster c;
	struct load L;
	size_t down;
	int leader = snapshot_setup(&c, &L, "snapshot_catch_up", &down);
	char cp[256];
	ck_assert_uint_gt(newest_cp(c.m[leader].dir, (unsigned)leader + 1, cp), 0);
	uint64_t cp_bytes = dir_bytes(cp);

	uint64_t t0 = loop_now_ms();
	m_start(&c, down);
	wait_converged(&c, 30000);
	struct meta_node_info di = m_info(&c, down, NULL);
	printf("snapshot_catch_up: restarted member installed %llu snapshot(s): fetched %llu bytes "
	       "(leader's checkpoint %llu bytes), install took %llu ms, caught up in "
	       "%llu ms\n", (unsigned long long)di.restores,
	       (unsigned long long)di.snapshot_fetch_bytes, (unsigned long long)cp_bytes,
	       (unsigned long long)di.last_install_ms, (unsigned long long)(loop_now_ms() - t0));
	ck_assert_uint_eq(di.restores, 1);
	ck_assert_uint_gt(di.snapshot_fetch_bytes, 0);
	assert_digests_equal(&c, NULL);
	verify_member(&c, down, &L, L.total);

	/* Every member restarts from its own snapshot: nothing reloaded. */
	uint8_t before[32], after[32];
	assert_digests_equal(&c, before);
	for (size_t i = 0; i < NMEMB; i++)
		m_stop(&c, i);
	for (size_t i = 0; i < NMEMB; i++) {
		uint64_t s0 = loop_now_ms();
		m_start(&c, i);
		uint64_t ms = loop_now_ms() - s0;
		struct meta_node_info ri = m_info(&c, i, NULL);
		printf("snapshot_catch_up: member %zu restarted in %llu ms, installs %llu, fetched %llu\n",
		       i + 1, (unsigned long long)ms, (unsigned long long)ri.restores,
		       (unsigned long long)ri.snapshot_fetch_bytes);
		ck_assert_uint_eq(ri.restores, 0);
		ck_assert_uint_eq(ri.snapshot_fetch_bytes, 0);
		ck_assert_uint_lt(ms, 2000);
	}
	ck_assert_int_ge(wait_leader(&c, 10000), 0);
	wait_converged(&c, 20000);
	assert_digests_equal(&c, after);
	ck_assert_msg(!memcmp(before, after, 32), "state changed across a restart");

	load_free(&L);
	cluster_free(&c);
}
END_TEST

/* The member's info once it has taken `n` snapshots, or at the deadline. */
static struct meta_node_info wait_snapshots(struct cluster *c, uint64_t n, int timeout_ms)
{
	struct meta_node_info i = m_info(c, 0, NULL);
	for (int t = 0; t < timeout_ms && i.snapshots < n; t += 50) {
		usleep(50000);
		i = m_info(c, 0, NULL);
	}
	return i;
}

START_TEST(snapshot_by_bytes)
{
	struct cluster c;
	cluster_init(&c, 1, 0, 0);
	c.m[0].o.snapshot_bytes = 32 << 10;
	m_start(&c, 0);
	ck_assert_int_ge(wait_leader(&c, 10000), 0);
	/* A snapshot's checkpoint runs off the loop, and on a loaded machine
	 * it can outlast the load: the count is waited for, and a snapshot
	 * whose bytes came while one was running waits for the next apply
	 * (hence more rounds). The first round's ~750 entries stay below
	 * the entry threshold (1,024): a snapshot after it was taken by
	 * bytes. */
	struct meta_node_info i;
	for (unsigned round = 0;; round++) {
		struct load L;
		load_init_at(&L, &c, 3000, 4, round * 3000);
		load_wait(&L, 60000);
		ck_assert_uint_eq(atomic_load(&L.acked), 3000);
		load_free(&L);
		i = wait_snapshots(&c, round == 0 ? 1 : 2, 30000);
		printf("snapshot_by_bytes: round %u: %llu entries, %llu snapshots\n", round,
		       (unsigned long long)i.last_index, (unsigned long long)i.snapshots);
		fflush(stdout);
		if (round == 0) {
			ck_assert_uint_lt(i.last_index, 1024);
			ck_assert_uint_ge(i.snapshots, 1);
		}
		if (i.snapshots >= 2 || round == 4)
			break;
	}
	ck_assert_uint_ge(i.snapshots, 2);
	uint8_t d0[32], d1[32];
	m_info(&c, 0, d0);
	m_stop(&c, 0);
	m_start(&c, 0);
	ck_assert_int_ge(wait_leader(&c, 10000), 0);
	i = m_info(&c, 0, d1);
	ck_assert_uint_eq(i.restores, 0);
	ck_assert(!memcmp(d0, d1, 32));
	cluster_free(&c);
}
END_TEST

static void copy_part(const char *from, const char *to, uint64_t len, bool flip)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	char buf[65536];
	uint64_t done = 0;
	while (done < len) {
		size_t want = len - done < sizeof(buf) ? (size_t)(len - done) : sizeof(buf);
		size_t k = fread(buf, 1, want, in);
		ck_assert_uint_gt(k, 0);
		if (flip && done <= len / 2 && len / 2 < done + k)
			buf[len / 2 - done] ^= 0x5a;
		ck_assert_uint_eq(fwrite(buf, 1, k, out), k);
		done += k;
	}
	fclose(in);
	fclose(out);
}

/* A fetch of checkpoint dir cp that stopped midway, in the member's
 * in_dir: half of every file, and the largest one whole but with a flipped
 * byte. *total: the checkpoint's bytes; returns the bytes a resume need
 * not fetch again. */
static uint64_t seed_partial(const char *cp, const char *in_dir, uint64_t *total)
{
	ck_assert_int_eq(mkdir(in_dir, 0700), 0);
	DIR *d = opendir(cp);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	char big[256] = "";
	uint64_t big_size = 0, seeded = 0;
	*total = 0;
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", cp, e->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode))
			continue;
		*total += (uint64_t)st.st_size;
		if ((uint64_t)st.st_size > big_size) {
			big_size = (uint64_t)st.st_size;
			snprintf(big, sizeof(big), "%s", e->d_name);
		}
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		char p[512], q[1024];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", cp, e->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode))
			continue;
		snprintf(q, sizeof(q), "%s/%s", in_dir, e->d_name);
		bool whole = !strcmp(e->d_name, big);
		uint64_t len = whole ? (uint64_t)st.st_size : (uint64_t)st.st_size / 2;
		copy_part(p, q, len, whole);
		if (!whole)
			seeded += len;
	}
	closedir(d);
	printf("snapshot_resume: checkpoint %s of %llu bytes; seeded %llu bytes and %s "
	       "(%llu bytes, corrupt)\n", strrchr(cp, '/') + 1, (unsigned long long)*total,
	       (unsigned long long)seeded, big, (unsigned long long)big_size);
	return seeded;
}

/* The checkpoint member i holds that another member took ("" if none):
 * the one it installed. */
static void installed_cp(struct cluster *c, size_t i, char out[64])
{
	char snap[128];
	snprintf(snap, sizeof(snap), "%s/snap", c->m[i].dir);
	DIR *d = opendir(snap);
	struct dirent *e;
	out[0] = 0;
	while (d && (e = readdir(d))) {
		unsigned long long a, who;
		char tail;
		if (sscanf(e->d_name, "cp-%llu-%llu%c", &a, &who, &tail) == 2 && who != i + 1)
			snprintf(out, 64, "cp-%llu-%llu", a, who);
	}
	if (d)
		closedir(d);
}

START_TEST(snapshot_resume)
{
	struct cluster c;
	struct load L;
	size_t down;
	int leader = snapshot_setup(&c, &L, "snapshot_resume", &down);
	/* The leader's snapshot count settles once its last checkpoint is done. */
	uint64_t snaps = m_info(&c, (size_t)leader, NULL).snapshots;
	for (int k = 0; k < 50; k++) {
		usleep(20000);
		uint64_t now = m_info(&c, (size_t)leader, NULL).snapshots;
		if (now != snaps)
			k = 0;
		snaps = now;
	}
	char cp[256];
	unsigned long long a = newest_cp(c.m[leader].dir, (unsigned)leader + 1, cp);
	ck_assert_uint_gt(a, 0);

	/* The member whose descriptor libraft sends is the leader when the
	 * down member comes back; under load the leadership may move to the
	 * other member meanwhile (300 ms elections): a fetch stopped midway
	 * is seeded for the newest checkpoint of each, and the check below
	 * holds for whichever was installed. */
	char snapdir[256];
	snprintf(snapdir, sizeof(snapdir), "%s/snap", c.m[down].dir);
	mkdir(snapdir, 0700);
	struct {
		char name[64];
		uint64_t total, seeded;
	} seeds[NMEMB];
	size_t n_seeds = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < NMEMB; i++) {
		char icp[256], in[512];
		unsigned long long ia;
		if (i == down || !(ia = newest_cp(c.m[i].dir, (unsigned)i + 1, icp)))
			continue;
		snprintf(seeds[n_seeds].name, sizeof(seeds[n_seeds].name), "%s", strrchr(icp, '/') + 1);
		snprintf(in, sizeof(in), "%s/in-%s", snapdir, seeds[n_seeds].name);
		seeds[n_seeds].seeded = seed_partial(icp, in, &seeds[n_seeds].total);
		if (i == (size_t)leader)
			total = seeds[n_seeds].total;
		n_seeds++;
	}

	m_start(&c, down);
	wait_converged(&c, 30000);
	struct meta_node_info di = m_info(&c, down, NULL);
	char got[64];
	installed_cp(&c, down, got);
	printf("snapshot_resume: installs %llu of %s, fetched %llu bytes, install %llu ms\n",
	       (unsigned long long)di.restores, got, (unsigned long long)di.snapshot_fetch_bytes,
	       (unsigned long long)di.last_install_ms);
	ck_assert_uint_eq(di.restores, 1);
	/* The rest of every file, and the corrupt one again. */
	size_t si = 0;
	while (si < n_seeds && strcmp(seeds[si].name, got))
		si++;
	ck_assert_msg(si < n_seeds, "installed %s, taken after the seeded %s and %s", got,
		      seeds[0].name, n_seeds > 1 ? seeds[1].name : "-");
	ck_assert_uint_eq(di.snapshot_fetch_bytes, seeds[si].total - seeds[si].seeded);
	assert_digests_equal(&c, NULL);
	verify_member(&c, down, &L, L.total);

	DIR *d;
	struct dirent *e;
	/* The fetch on its own: fail-over between sources, and its deadline. */
	struct snap_desc sd = { .member_id = (uint64_t)leader + 1, .applied_index = a };
	snprintf(sd.member_addr, sizeof(sd.member_addr), "%s", c.m[leader].addr);
	snprintf(sd.checkpoint, sizeof(sd.checkpoint), "%s", strrchr(cp, '/') + 1);
	sd.files = calloc(64, sizeof(*sd.files));
	d = opendir(cp);
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", cp, e->d_name);
		if (stat(p, &st) || !S_ISREG(st.st_mode))
			continue;
		ck_assert_uint_lt(sd.n_files, 64);
		struct snap_file *f = &sd.files[sd.n_files++];
		ck_assert_uint_lt(strlen(e->d_name), sizeof(f->name));
		memcpy(f->name, e->d_name, strlen(e->d_name) + 1);
		f->size = (uint64_t)st.st_size;
		FILE *fh = fopen(p, "rb");
		char buf[65536];
		size_t k;
		while ((k = fread(buf, 1, sizeof(buf), fh)) > 0)
			f->crc32c = crc32c(f->crc32c, buf, k);
		fclose(fh);
		sd.bytes += f->size;
	}
	closedir(d);
	size_t other = 3 - (size_t)leader - down;   /* running, has its own cp-<A>-<other> */
	struct snap_fetch_job fj = { .desc = &sd, .n_addrs = 3, .timeout_ms = 20000,
				     .chunk_bytes = 16384 };
	char fdir[128];
	tmpdir(fdir);
	snprintf(fj.dir, sizeof(fj.dir), "%s/snap", fdir);
	/* Dead: bound and not listening, so no other process takes the port. */
	int dead_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in da = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t dl = sizeof(da);
	ck_assert_int_eq(bind(dead_fd, (struct sockaddr *)&da, sizeof(da)), 0);
	ck_assert_int_eq(getsockname(dead_fd, (struct sockaddr *)&da, &dl), 0);
	snprintf(fj.addrs[0], sizeof(fj.addrs[0]), "127.0.0.1:%d", ntohs(da.sin_port));
	snprintf(fj.addrs[1], sizeof(fj.addrs[1]), "%s", c.m[other].addr);
	snprintf(fj.addrs[2], sizeof(fj.addrs[2]), "%s", c.m[leader].addr);
	uint64_t t0 = loop_now_ms();
	ck_assert_int_eq(snap_fetch(&fj), 0);
	printf("snapshot_resume: snap_fetch past a dead source and member %zu: %llu bytes in %llu "
	       "ms, 16 KiB calls\n", other + 1, (unsigned long long)fj.fetched_bytes,
	       (unsigned long long)(loop_now_ms() - t0));
	ck_assert_uint_eq(fj.fetched_bytes, total);
	snprintf(sd.checkpoint, sizeof(sd.checkpoint), "cp-%llu-%d", a + 1000000, leader + 1);
	sd.applied_index = a + 1000000;
	struct snap_fetch_job gone = fj;
	gone.fetched_bytes = 0;
	gone.timeout_ms = 1500;
	t0 = loop_now_ms();
	ck_assert_int_eq(snap_fetch(&gone), -ETIMEDOUT);
	ck_assert_uint_lt(loop_now_ms() - t0, 6000);   /* a deadline timer: ~1.5 s */
	close(dead_fd);
	snap_desc_free(&sd);
	rm_rf(fdir);

	load_free(&L);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_WARN);
	Suite *s = suite_create("raft");
	TCase *tc = tcase_create("raft");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, single);
	tcase_add_test(tc, pg_health);
	tcase_add_test(tc, status_digest_changes);
	tcase_add_test(tc, read_index);
	tcase_add_test(tc, failover);
	tcase_add_test(tc, snapshot_catch_up);
	tcase_add_test(tc, snapshot_by_bytes);
	tcase_add_test(tc, snapshot_resume);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
