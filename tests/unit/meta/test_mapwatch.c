/*
 * test_mapwatch.c — the map cache's calls (meta/mapwatch.c) and their
 * attempt timeouts in meta/client.c, against one real meta member over
 * loopback:
 *
 *   get_map_not_held: the first GetMap is dropped on its way (rpc_fault:
 *     the member never answers it); the mapwatch asks again once a normal
 *     attempt (3 s) has passed and has its map in seconds. Before, the
 *     watch's client gave every attempt the long poll's 40 s, so a GetMap
 *     one member sat on kept a gateway loop without a map (never ready)
 *     for longer than its readiness probe waited.
 *   watch_outlives_attempt: a WatchMap held 4 s, on a client whose
 *     attempts last 1 s, is answered "unchanged" after the hold in one
 *     attempt (its attempt is its hold + 10 s), not retried until the
 *     call's budget runs out.
 *   refresh_beside_held_watch: with every WatchMap answer held 20 s
 *     (rpc_fault), a map change reaches the mapwatch only through
 *     meta_mapwatch_refresh: its GetMap goes out beside the parked watch
 *     and the new epoch is installed (on_change) at once. One before
 *     any map asks for nothing; a second while the first is out waits
 *     for it (a third then adds nothing).
 *   late_watch_never_goes_back: every WatchMap answer held 2 s; an OSD
 *     registers (e2: the parked watch is answered with it, held), a
 *     refresh installs e2, a second OSD registers and a refresh installs
 *     e3; then the held e2 answer arrives and must not replace e3 (it
 *     did before, and a gateway then placed shards with e2 again: the
 *     fresh-clone run of fed7dcb failed test_stale_map on it).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>

#include "common/err.h"
#include "common/rpc_fault.h"
#include "meta/mapwatch.h"
#include "raft_cluster.h"

/* One member leading, with the map it initialises on election. */
static void up_one(struct cluster *c, uv_loop_t *loop, struct meta_client **cli, uint64_t *epoch)
{
	cluster_init(c, 1, 0, 0);
	m_start(c, 0);
	ck_assert_int_eq(wait_leader(c, 5000), 0);
	uv_loop_init(loop);
	const char *members[] = { c->m[0].addr };
	struct meta_client_opts o = { .members = members, .n_members = 1,
				      .attempt_timeout_ms = 1000 };
	ck_assert_int_eq(meta_client_new(loop, &o, cli), 0);
	Iolake__Meta__GetMapRequest gm = IOLAKE__META__GET_MAP_REQUEST__INIT;
	for (int t = 0; t < 250; t++) {
		Iolake__Meta__GetMapResponse *r = (void *)run_call(loop, *cli, META_M_GET_MAP, &gm.base);
		bool ok = r->status == IOLAKE__META__STATUS__STATUS_OK && r->map;
		if (ok)
			*epoch = r->map->epoch;
		protobuf_c_message_free_unpacked(&r->base, NULL);
		if (ok)
			return;
		usleep(20000);
	}
	ck_abort_msg("no map in 5 s");
}

static void down(struct cluster *c, uv_loop_t *loop, struct meta_client *cli)
{
	meta_client_close(cli);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	cluster_free(c);
}

START_TEST(get_map_not_held)
{
	struct cluster c;
	uv_loop_t loop;
	struct meta_client *cli;
	uint64_t epoch;
	up_one(&c, &loop, &cli, &epoch);

	char err[128];
	ck_assert_int_eq(rpc_fault_set("drop,method=GetMap,count=1", err, sizeof(err)), 0);
	const char *members[] = { c.m[0].addr };
	struct meta_mapwatch_opts o = { .members = members, .n_members = 1, .watch_ms = 30000,
					.log_name = "test" };
	struct meta_mapwatch *w;
	uint64_t t0 = loop_now_ms();
	ck_assert_int_eq(meta_mapwatch_start(&loop, &o, &w), 0);
	while (!meta_mapwatch_map(w) && loop_now_ms() - t0 < 20000)
		uv_run(&loop, UV_RUN_ONCE);
	uint64_t took = loop_now_ms() - t0;
	struct rpc_fault_stats fs;
	rpc_fault_stats(&fs);
	rpc_fault_set(NULL, err, sizeof(err));
	printf("get_map_not_held: the first GetMap dropped (%llu dropped); the map (epoch %llu) "
	       "came after %llu ms\n", (unsigned long long)fs.dropped, (unsigned long long)epoch,
	       (unsigned long long)took);
	ck_assert_uint_eq(fs.dropped, 1);
	/* A 40-s attempt would still be waiting; a 3-s one has asked again. */
	ck_assert_ptr_nonnull(meta_mapwatch_map(w));
	ck_assert_uint_ge(meta_mapwatch_map(w)->epoch, epoch);
	meta_mapwatch_close(w);
	down(&c, &loop, cli);
}
END_TEST

START_TEST(watch_outlives_attempt)
{
	struct cluster c;
	uv_loop_t loop;
	struct meta_client *cli;
	uint64_t epoch;
	up_one(&c, &loop, &cli, &epoch);

	struct meta_client_stats st0, st;
	meta_client_stats(cli, &st0);
	Iolake__Meta__WatchMapRequest w = IOLAKE__META__WATCH_MAP_REQUEST__INIT;
	w.epoch = epoch;
	w.timeout_ms = 4000;
	uint64_t t0 = loop_now_ms();
	Iolake__Meta__WatchMapResponse *wr = (void *)run_call(&loop, cli, META_M_WATCH_MAP, &w.base);
	uint64_t took = loop_now_ms() - t0;
	meta_client_stats(cli, &st);
	printf("watch_outlives_attempt: WatchMap held %llu ms on a client of 1-s attempts; "
	       "changed=%d, %llu retries\n", (unsigned long long)took, wr->changed,
	       (unsigned long long)(st.retries - st0.retries));
	ck_assert(!wr->changed);
	ck_assert_uint_ge(took, 3500);
	ck_assert_uint_eq(st.retries, st0.retries);
	protobuf_c_message_free_unpacked(&wr->base, NULL);
	down(&c, &loop, cli);
}
END_TEST

struct seen {
	unsigned changes;
	uint64_t epoch;
};

static void on_change(void *arg, const Iolake__Meta__ClusterMap *map)
{
	struct seen *s = arg;
	s->changes++;
	s->epoch = map->epoch;
}

START_TEST(refresh_beside_held_watch)
{
	struct cluster c;
	uv_loop_t loop;
	struct meta_client *cli;
	uint64_t epoch;
	up_one(&c, &loop, &cli, &epoch);

	char err[128];
	ck_assert_int_eq(rpc_fault_set("delay-answer=20000,method=WatchMap", err, sizeof(err)), 0);
	const char *members[] = { c.m[0].addr };
	struct seen seen = { 0 };
	struct meta_mapwatch_opts o = { .members = members, .n_members = 1, .watch_ms = 30000,
					.on_change = on_change, .arg = &seen, .log_name = "test" };
	struct meta_mapwatch *w;
	ck_assert_int_eq(meta_mapwatch_start(&loop, &o, &w), 0);
	ck_assert(!meta_mapwatch_refresh(w));   /* no map yet: the GetMap is out */
	uint64_t t0 = loop_now_ms();
	while (!meta_mapwatch_map(w) && loop_now_ms() - t0 < 5000)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_ptr_nonnull(meta_mapwatch_map(w));
	uint64_t e1 = meta_mapwatch_map(w)->epoch;
	/* Let the watch park, then move the map: an OSD registers. */
	t0 = loop_now_ms();
	while (loop_now_ms() - t0 < 200)
		uv_run(&loop, UV_RUN_NOWAIT);
	Iolake__Meta__OpResult *r = register_osd_sync(&loop, cli, 7, "127.0.0.1:1", "h7", 1);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	uint64_t e2 = r->epoch;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	ck_assert_uint_gt(e2, e1);
	/* The watch's answer is held: no change in a second. */
	t0 = loop_now_ms();
	while (loop_now_ms() - t0 < 1000)
		uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(meta_mapwatch_map(w)->epoch, e1);
	unsigned before = seen.changes;
	t0 = loop_now_ms();
	ck_assert(meta_mapwatch_refresh(w));
	ck_assert(meta_mapwatch_refresh(w));    /* one out: this one waits for it */
	ck_assert(!meta_mapwatch_refresh(w));   /* one waits already */
	while (meta_mapwatch_map(w)->epoch < e2 && loop_now_ms() - t0 < 5000)
		uv_run(&loop, UV_RUN_ONCE);
	uint64_t took = loop_now_ms() - t0;
	printf("refresh_beside_held_watch: epoch %llu -> %llu (meta had %llu) in %llu ms through "
	       "the refresh, the watch's answer held; on_change %u time(s)\n",
	       (unsigned long long)e1, (unsigned long long)meta_mapwatch_map(w)->epoch,
	       (unsigned long long)e2, (unsigned long long)took, seen.changes - before);
	/* e2 or later (the OSD never beats: it may be down by then). */
	ck_assert_uint_ge(meta_mapwatch_map(w)->epoch, e2);
	ck_assert_uint_eq(seen.epoch, meta_mapwatch_map(w)->epoch);
	ck_assert_uint_eq(seen.changes, before + 1);
	ck_assert_uint_lt(took, 3000);
	rpc_fault_set(NULL, err, sizeof(err));
	meta_mapwatch_close(w);
	down(&c, &loop, cli);
}
END_TEST

struct epochs {
	uint64_t seen[64];
	unsigned n;
};

static void on_change_log(void *arg, const Iolake__Meta__ClusterMap *map)
{
	struct epochs *e = arg;
	if (e->n < 64)
		e->seen[e->n++] = map->epoch;
}

/* Run the loop until the mapwatch holds at least epoch e (5 s at most). */
static void until_epoch(uv_loop_t *loop, struct meta_mapwatch *w, uint64_t e)
{
	uint64_t t0 = loop_now_ms();
	while (meta_mapwatch_map(w)->epoch < e && loop_now_ms() - t0 < 5000)
		uv_run(loop, UV_RUN_ONCE);
	ck_assert_uint_ge(meta_mapwatch_map(w)->epoch, e);
}

static void run_for(uv_loop_t *loop, uint64_t ms)
{
	uint64_t t0 = loop_now_ms();
	while (loop_now_ms() - t0 < ms)
		uv_run(loop, UV_RUN_NOWAIT);
}

START_TEST(late_watch_never_goes_back)
{
	struct cluster c;
	uv_loop_t loop;
	struct meta_client *cli;
	uint64_t epoch;
	up_one(&c, &loop, &cli, &epoch);

	char err[128];
	ck_assert_int_eq(rpc_fault_set("delay-answer=2000,method=WatchMap", err, sizeof(err)), 0);
	const char *members[] = { c.m[0].addr };
	struct epochs seen = { .n = 0 };
	struct meta_mapwatch_opts o = { .members = members, .n_members = 1, .watch_ms = 30000,
					.on_change = on_change_log, .arg = &seen, .log_name = "test" };
	struct meta_mapwatch *w;
	ck_assert_int_eq(meta_mapwatch_start(&loop, &o, &w), 0);
	uint64_t t0 = loop_now_ms();
	while (!meta_mapwatch_map(w) && loop_now_ms() - t0 < 5000)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_ptr_nonnull(meta_mapwatch_map(w));
	run_for(&loop, 200);   /* the watch parks */
	Iolake__Meta__OpResult *r = register_osd_sync(&loop, cli, 7, "127.0.0.1:1", "h7", 1);
	uint64_t e2 = r->epoch;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	ck_assert(meta_mapwatch_refresh(w));
	until_epoch(&loop, w, e2);
	run_for(&loop, 300);   /* past the refresh spacing */
	r = register_osd_sync(&loop, cli, 8, "127.0.0.1:2", "h8", 1);
	uint64_t e3 = r->epoch;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	ck_assert(meta_mapwatch_refresh(w));
	until_epoch(&loop, w, e3);
	uint64_t held = meta_mapwatch_map(w)->epoch;
	run_for(&loop, 2500);  /* the held answer (e2 or older) arrives */
	printf("late_watch_never_goes_back: e2 %llu, e3 %llu; held %llu after the late answer "
	       "(%llu before); on_change saw", (unsigned long long)e2, (unsigned long long)e3,
	       (unsigned long long)meta_mapwatch_map(w)->epoch, (unsigned long long)held);
	for (unsigned i = 0; i < seen.n; i++)
		printf(" %llu", (unsigned long long)seen.seen[i]);
	printf("\n");
	ck_assert_uint_ge(meta_mapwatch_map(w)->epoch, held);
	for (unsigned i = 1; i < seen.n; i++)
		ck_assert_uint_gt(seen.seen[i], seen.seen[i - 1]);
	rpc_fault_set(NULL, err, sizeof(err));
	meta_mapwatch_close(w);
	down(&c, &loop, cli);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IONBF, 0);
	Suite *s = suite_create("mapwatch");
	TCase *tc = tcase_create("calls");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, get_map_not_held);
	tcase_add_test(tc, watch_outlives_attempt);
	tcase_add_test(tc, refresh_beside_held_watch);
	tcase_add_test(tc, late_watch_never_goes_back);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
