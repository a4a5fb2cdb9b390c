/*
 * test_snap_install.c — a member catching up through a file snapshot
 * while the group goes on (issue 15: a healed member that stayed
 * unanswering for over 15 s, its fetch failing "checkpoint gone there").
 * Three members in one process (raft_cluster.h), snapshots every 64
 * entries with 16 kept, fetches in small chunks so that they take a while.
 *
 *   install_under_load  a follower is down while 6,000 puts commit; it is
 *               restarted while 8,000 more go on (the leader takes new
 *               checkpoints and prunes old ones during its fetch). Its loop
 *               answers while the fetch and load of its install run (a
 *               call made while its in-cp-<A>-<M> directory exists returns
 *               while that same directory still exists: the install has
 *               not ended); it ends with the leader's digest and every
 *               acknowledged put of both phases
 *   gone_with_a_dead_source  snap_fetch of a checkpoint no live source
 *               holds, with one dead source among them, gives up (-ENOENT,
 *               so the install asks for a newer checkpoint) instead of
 *               retrying until its deadline; cancelling a fetch ends it
 *               (-ECANCELED)
 *   stop_during_fetch  a member closed in the middle of its install's
 *               fetch closes (its loop is free, the fetch is cancelled) and
 *               leaves the partial in-cp directory; restarted, it resumes
 *               and catches up
 *
 * The load's window and the member stopped come from a seed, printed;
 * RAFT_TEST_SEED=<n> replays one.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "meta/node.h"
#include "meta/snap.h"
#include "meta_test_util.h"
#include "raft_cluster.h"

/* The name of an in-cp-* directory in member i's DIR/snap ("" when none). */
static void in_fetch(struct cluster *c, size_t i, char out[256])
{
	char snap[128];
	snprintf(snap, sizeof(snap), "%s/snap", c->m[i].dir);
	out[0] = 0;
	DIR *d = opendir(snap);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "in-cp-", 6)) {
			snprintf(out, 256, "%s", e->d_name);
			break;
		}
	if (d)
		closedir(d);
}

static bool in_fetch_is(struct cluster *c, size_t i, const char *name)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/snap/%s", c->m[i].dir, name);
	return stat(path, &st) == 0;
}

/* Three members, snapshots every 64 entries (16 kept), fetches of
 * chunk_bytes; member `down` (a follower, from the seed) stopped while
 * `total` puts commit. The leader's index. */
static int setup_down(struct cluster *c, struct load *L, const char *name, uint32_t chunk_bytes,
		      unsigned total, size_t *down_out)
{
	uint32_t seed = test_seed(name);
	cluster_init(c, NMEMB, 64, 16);
	for (size_t i = 0; i < NMEMB; i++) {
		c->m[i].o.snapshot_fetch_chunk_bytes = chunk_bytes;
		c->m[i].o.snapshot_fetch_timeout_ms = 60000;
	}
	for (size_t i = 0; i < NMEMB; i++)
		m_start(c, i);
	int leader = wait_leader(c, 10000);
	ck_assert_int_ge(leader, 0);
	wait_converged(c, 10000);
	size_t down = ((size_t)leader + 1 + seed % 2) % NMEMB;
	m_stop(c, down);
	printf("%s: member %zu down during %u puts\n", name, down + 1, total);
	load_init_at(L, c, total, 2 + seed % 4, 0);
	load_wait(L, 90000);
	ck_assert_uint_eq(atomic_load(&L->acked), total);
	leader = wait_leader(c, 10000);
	ck_assert_int_ge(leader, 0);
	struct meta_node_info li = m_info(c, (size_t)leader, NULL);
	printf("%s: leader %d at index %llu, %llu snapshots taken\n", name, leader + 1,
	       (unsigned long long)li.last_index, (unsigned long long)li.snapshots);
	ck_assert_uint_gt(li.snapshots, 0);
	*down_out = down;
	return leader;
}

START_TEST(install_under_load)
{
	struct cluster c;
	struct load L1, L2;
	size_t down;
	setup_down(&c, &L1, "install_under_load", 2048, 6000, &down);

	/* The load goes on while the member comes back: the leader takes
	 * checkpoints (every 64 entries) and prunes during its fetch. */
	load_init_at(&L2, &c, 8000, 4, 1000000);
	usleep(200000);
	uint64_t t0 = loop_now_ms();
	m_start(&c, down);
	unsigned probes = 0, during = 0, installing = 0;
	uint64_t probe_max_ms = 0;
	while (!atomic_load(&L2.done) && loop_now_ms() - t0 < 90000) {
		char name[256];
		in_fetch(&c, down, name);
		uint64_t p0 = loop_now_ms();
		struct meta_node_info di = m_info(&c, down, NULL);
		uint64_t ms = loop_now_ms() - p0;
		probes++;
		if (name[0] && in_fetch_is(&c, down, name)) {
			during++;   /* answered before that install ended */
			probe_max_ms = ms > probe_max_ms ? ms : probe_max_ms;
		}
		installing += di.installing;
		usleep(5000);
	}
	load_wait(&L2, 60000);
	ck_assert_uint_eq(atomic_load(&L2.acked), L2.total);
	wait_converged(&c, 30000);
	struct meta_node_info di = m_info(&c, down, NULL);
	printf("install_under_load: member %zu: %llu install(s), fetched %llu bytes, last install "
	       "%llu ms; %u probes of its loop, %u answered during an install's fetch or load "
	       "(slowest %llu ms), %u saw installing; caught up %llu ms after its start\n",
	       down + 1, (unsigned long long)di.restores,
	       (unsigned long long)di.snapshot_fetch_bytes, (unsigned long long)di.last_install_ms,
	       probes, during, (unsigned long long)probe_max_ms, installing,
	       (unsigned long long)(loop_now_ms() - t0));
	ck_assert_uint_ge(di.restores, 1);
	ck_assert_uint_gt(di.snapshot_fetch_bytes, 0);
	ck_assert_msg(during > 0, "the member's loop answered no call while it installed");
	assert_digests_equal(&c, NULL);
	verify_member(&c, down, &L1, L1.total);
	verify_member(&c, down, &L2, L2.total);
	load_free(&L2);
	load_free(&L1);
	cluster_free(&c);
}
END_TEST

/* 127.0.0.1:port of a socket bound and not listening (kept until *fd is
 * closed): a connection to it is refused, and no other test can take the
 * port meanwhile. */
static void dead_addr(char out[META_NODE_ADDR_MAX], int *fd)
{
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(*fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = 0,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t l = sizeof(a);
	ck_assert_int_eq(getsockname(*fd, (struct sockaddr *)&a, &l), 0);
	snprintf(out, META_NODE_ADDR_MAX, "127.0.0.1:%d", ntohs(a.sin_port));
}

struct fetch_thread {
	struct snap_fetch_job *j;
	int rc;
	atomic_bool done;
};

static void *fetch_main(void *arg)
{
	struct fetch_thread *t = arg;
	t->rc = snap_fetch(t->j);
	atomic_store(&t->done, true);
	return NULL;
}

START_TEST(gone_with_a_dead_source)
{
	struct cluster c;
	int leader = cluster_up(&c, 64, 16);
	struct load L;
	load_init(&L, &c, 500, 4);
	load_wait(&L, 60000);
	size_t other = ((size_t)leader + 1) % NMEMB;

	/* A checkpoint nobody holds (a pruned one). */
	struct snap_file f = { .name = "000001.sst", .size = 100, .crc32c = 1 };
	struct snap_desc sd = { .member_id = (uint64_t)leader + 1, .applied_index = 5,
				.files = &f, .n_files = 1, .bytes = 100 };
	snprintf(sd.member_addr, sizeof(sd.member_addr), "%s", c.m[leader].addr);
	snprintf(sd.checkpoint, sizeof(sd.checkpoint), "cp-5-%d", leader + 1);
	int dead_fd;
	struct snap_fetch_job fj = { .desc = &sd, .n_addrs = 3, .timeout_ms = 30000,
				     .give_up_when_gone = true };
	char fdir[64];
	tmpdir(fdir);
	snprintf(fj.dir, sizeof(fj.dir), "%s/snap", fdir);
	snprintf(fj.addrs[0], sizeof(fj.addrs[0]), "%s", c.m[leader].addr);
	dead_addr(fj.addrs[1], &dead_fd);
	snprintf(fj.addrs[2], sizeof(fj.addrs[2]), "%s", c.m[other].addr);
	uint64_t t0 = loop_now_ms();
	int rc = snap_fetch(&fj);
	printf("gone_with_a_dead_source: snap_fetch answered %d after %llu ms\n", rc,
	       (unsigned long long)(loop_now_ms() - t0));
	ck_assert_int_eq(rc, -ENOENT);

	/* Every source dead: no "gone" answer, the fetch keeps trying; a
	 * cancel ends it. */
	struct snap_fetch_job dj = fj;
	dj.n_addrs = 1;
	dead_addr(dj.addrs[0], &dead_fd);
	atomic_bool cancel = false;
	dj.cancel = &cancel;
	struct fetch_thread ft = { .j = &dj };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, fetch_main, &ft), 0);
	usleep(300000);
	ck_assert(!atomic_load(&ft.done));
	atomic_store(&cancel, true);
	pthread_join(th, NULL);
	ck_assert_int_eq(ft.rc, -ECANCELED);
	close(dead_fd);
	rm_rf(fdir);
	load_free(&L);
	cluster_free(&c);
}
END_TEST

START_TEST(stop_during_fetch)
{
	struct cluster c;
	struct load L;
	size_t down;
	setup_down(&c, &L, "stop_during_fetch", 64, 4000, &down);
	m_start(&c, down);
	char name[256] = "";
	for (int t = 0; t < 20000 && !name[0]; t += 2) {
		in_fetch(&c, down, name);
		usleep(2000);
	}
	ck_assert_msg(name[0], "no fetch started");
	uint64_t t0 = loop_now_ms();
	m_stop(&c, down);   /* asserts it closed within 5 s */
	uint64_t ms = loop_now_ms() - t0;
	bool left = in_fetch_is(&c, down, name);
	printf("stop_during_fetch: member %zu closed %llu ms into its fetch of %s; partial "
	       "directory %s\n", down + 1, (unsigned long long)ms, name, left ? "kept" : "gone");
	ck_assert_msg(left, "the install ran to its end before the member closed");
	m_start(&c, down);
	wait_converged(&c, 60000);
	struct meta_node_info di = m_info(&c, down, NULL);
	ck_assert_uint_ge(di.restores, 1);
	assert_digests_equal(&c, NULL);
	verify_member(&c, down, &L, L.total);
	load_free(&L);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_LEVEL_WARN);
	Suite *s = suite_create("snap_install");
	TCase *tc = tcase_create("snap_install");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, install_under_load);
	tcase_add_test(tc, gone_with_a_dead_source);
	tcase_add_test(tc, stop_during_fetch);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
