/*
 * test_state_map.c — the cluster map in the meta state machine, on real
 * RocksDB under /dev/shm: InitMap, RegisterOsd and SetOsdState and the PG
 * table they move (epochs, survivors keeping their slots), InitMap's
 * expect_osds (no slot filled before that many OSDs are eligible, then
 * the table in rank order) and SetExpectOsds changing that wait, an
 * operator's sticky out, osd in, and RemoveOsd of a down+out OSD. The rest of the state machine is in
 * test_state.c.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/place.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];

static void tb_osd(struct tb *t, uint32_t id, const char *host)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__RegisterOsd *ro = tb_alloc(t, sizeof(*ro));
	Iolake__Meta__OsdInfo *o = tb_alloc(t, sizeof(*o));
	iolake__meta__register_osd__init(ro);
	iolake__meta__osd_info__init(o);
	o->id = id;
	o->host = tb_str(t, host);
	o->addr = tb_str(t, "127.0.0.1:7000");
	o->weight = 1000;
	ro->osd = o;
	ro->time_ms = 1700000000000ULL;
	op->body_case = IOLAKE__META__OP__BODY_REGISTER_OSD;
	op->register_osd = ro;
}

static void tb_osd_state(struct tb *t, uint32_t id, int up, int in)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetOsdState *ss = tb_alloc(t, sizeof(*ss));
	iolake__meta__set_osd_state__init(ss);
	ss->id = id;
	if (up >= 0) {
		ss->set_up = true;
		ss->up = up;
	}
	if (in >= 0) {
		ss->set_in = true;
		ss->in = in;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	op->set_osd_state = ss;
}

START_TEST(test_cluster_map)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	Iolake__Meta__ClusterMap *m;
	ck_assert_int_eq(meta_state_get_map(s, &m), IOL_ENOT_FOUND);

	struct tb *t = tb_new();
	tb_init_map(t, 1024, 4, 2);
	char host[16];
	for (uint32_t i = 0; i < 12; i++) {
		snprintf(host, sizeof(host), "h%u", i / 2);
		tb_osd(t, i, host);
	}
	ck_assert_int_eq(tb_apply(s, 1, t, res), 13);
	for (int i = 0; i < 13; i++) {
		ck_assert_int_eq(res[i].err, 0);
		ck_assert_uint_eq(res[i].epoch, (uint64_t)i + 1);
	}
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->epoch, 13);
	ck_assert_uint_eq(m->n_osds, 12);
	ck_assert_uint_eq(m->n_pgs, 1024);
	for (uint32_t pg = 0; pg < 1024; pg++) {
		ck_assert_uint_eq(m->pgs[pg]->n_osds, 6);
		unsigned hosts = 0;
		for (int j = 0; j < 6; j++)
			hosts |= 1u << (m->pgs[pg]->osds[j] / 2);
		ck_assert_uint_eq(__builtin_popcount(hosts), 6);
	}
	uint32_t *before = malloc(1024 * 6 * sizeof(uint32_t));
	for (uint32_t pg = 0; pg < 1024; pg++)
		memcpy(before + pg * 6, m->pgs[pg]->osds, 6 * sizeof(uint32_t));
	meta_state_free_msg(m);

	/* Down keeps slots (no table change, epoch bumps); out moves only
	 * its slots; a repeated state is a no-op without a bump. */
	t = tb_new();
	tb_osd_state(t, 3, 0, -1);
	tb_osd_state(t, 3, -1, 0);
	tb_osd_state(t, 3, -1, 0);
	tb_osd_state(t, 99, 0, -1);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 4);
	ck_assert_uint_eq(res[0].epoch, 14);
	ck_assert_uint_eq(res[1].epoch, 15);
	ck_assert_uint_eq(res[2].epoch, 15);
	ck_assert_int_eq(res[3].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	unsigned moved = 0, had = 0;
	for (uint32_t pg = 0; pg < 1024; pg++)
		for (int j = 0; j < 6; j++) {
			uint32_t o = before[pg * 6 + j], n = m->pgs[pg]->osds[j];
			ck_assert_uint_ne(n, 3);
			had += o == 3;
			if (o != n) {
				ck_assert_uint_eq(o, 3);
				ck_assert_uint_eq(n, 2);   /* the other OSD on host h1 */
				moved++;
			}
		}
	ck_assert_uint_eq(moved, had);
	ck_assert_uint_gt(moved, 0);
	meta_state_free_msg(m);
	free(before);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A new cluster told its OSD count (InitMap.expect_osds): no table until
 * that many are there, then one in rank order, so every OSD holds data
 * slots (without it the first k to join hold every PG's data); after
 * that, changes keep survivors' slots as before. */
static void map_slot_counts(Iolake__Meta__ClusterMap *m, unsigned k, unsigned data[8],
			    unsigned parity[8], unsigned *empty)
{
	memset(data, 0, 8 * sizeof(*data));
	memset(parity, 0, 8 * sizeof(*parity));
	*empty = 0;
	for (size_t pg = 0; pg < m->n_pgs; pg++)
		for (size_t j = 0; j < m->pgs[pg]->n_osds; j++) {
			uint32_t o = m->pgs[pg]->osds[j];
			if (o == PLACE_NONE)
				(*empty)++;
			else if (o < 8)
				(j < k ? data : parity)[o]++;
		}
}

START_TEST(test_map_expect_osds)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_init_map(t, 256, 4, 2)->expect_osds = 6;
	for (uint32_t i = 1; i <= 5; i++)
		tb_osd(t, i, "aio");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 6);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(res[i].err, 0);
	Iolake__Meta__ClusterMap *m;
	unsigned data[8], parity[8], empty;
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->expect_osds, 6);
	ck_assert_uint_eq(m->n_osds, 5);
	ck_assert_uint_eq(m->n_pgs, 256);
	map_slot_counts(m, 4, data, parity, &empty);
	ck_assert_uint_eq(empty, 256 * 6);   /* five of six: still no slot */
	meta_state_free_msg(m);

	/* The sixth: the whole table at once, every OSD in data slots. */
	t = tb_new();
	tb_osd(t, 6, "aio");
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->expect_osds, 0);
	map_slot_counts(m, 4, data, parity, &empty);
	ck_assert_uint_eq(empty, 0);
	for (uint32_t o = 1; o <= 6; o++) {
		/* 256 x 4 / 6 = 171 on average; join order gave 256 or 0 */
		ck_assert_msg(data[o] > 120 && data[o] < 220, "osd %u data slots %u", o, data[o]);
		ck_assert_uint_eq(data[o] + parity[o], 256);
	}
	uint32_t *before = malloc(256 * 6 * sizeof(uint32_t));
	for (uint32_t pg = 0; pg < 256; pg++)
		memcpy(before + pg * 6, m->pgs[pg]->osds, 6 * sizeof(uint32_t));
	meta_state_free_msg(m);

	/* Past the wait the table follows changes as before: a seventh OSD
	 * takes slots from the others, which keep theirs. */
	t = tb_new();
	tb_osd(t, 7, "aio");
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	unsigned moved = 0;
	for (uint32_t pg = 0; pg < 256; pg++)
		for (int j = 0; j < 6; j++)
			if (m->pgs[pg]->osds[j] != before[pg * 6 + j]) {
				ck_assert_uint_eq(m->pgs[pg]->osds[j], 7);
				moved++;
			}
	ck_assert_uint_gt(moved, 0);
	ck_assert_uint_lt(moved, 256 * 6 / 3);
	meta_state_free_msg(m);
	free(before);

	/* An InitMap asking for more OSDs than a map can hold is refused. */
	char dir2[64];
	tmpdir(dir2);
	struct meta_state *s2 = open_at(dir2);
	t = tb_new();
	tb_init_map(t, 0, 4, 2)->expect_osds = PLACE_MAX_OSDS + 1;
	ck_assert_int_eq(tb_apply(s2, 1, t, res), 1);
	ck_assert_int_eq(res[0].err, -EINVAL);
	meta_state_close(s2);
	rm_rf(dir2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static void tb_expect(struct tb *t, uint32_t count)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetExpectOsds *se = tb_alloc(t, sizeof(*se));
	iolake__meta__set_expect_osds__init(se);
	se->count = count;
	op->body_case = IOLAKE__META__OP__BODY_SET_EXPECT_OSDS;
	op->set_expect_osds = se;
}

/* SetExpectOsds (`iolake-admin osd expect N`, iolake-meta
 * --expect-osds): the wait changed while it lasts. Lowered to the OSDs
 * that are there, the table is placed at once in rank order (every OSD
 * in data slots); 0 places it with one OSD; after that: CONFLICT. */
START_TEST(test_set_expect_osds)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_expect(t, 3);   /* no map yet */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ENOT_FOUND);
	t = tb_new();
	tb_init_map(t, 256, 2, 1)->expect_osds = 8;
	for (uint32_t i = 1; i <= 4; i++)
		tb_osd(t, i, "h");
	tb_expect(t, 5);   /* still more than there are: waits on */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 6);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(res[i].err, 0);
	Iolake__Meta__ClusterMap *m;
	unsigned data[8], parity[8], empty;
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->expect_osds, 5);
	map_slot_counts(m, 2, data, parity, &empty);
	ck_assert_uint_eq(empty, 256 * 3);
	uint64_t epoch = m->epoch;
	meta_state_free_msg(m);

	t = tb_new();
	tb_expect(t, 4);   /* the four there: placed now */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(res[0].epoch, epoch + 1);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->expect_osds, 0);
	map_slot_counts(m, 2, data, parity, &empty);
	ck_assert_uint_eq(empty, 0);
	for (uint32_t o = 1; o <= 4; o++)   /* 256 x 2 / 4 = 128; join order gave 256 or 0 */
		ck_assert_msg(data[o] > 80 && data[o] < 180, "osd %u data slots %u", o, data[o]);
	meta_state_free_msg(m);

	t = tb_new();
	tb_expect(t, 0);   /* placed: nothing to change */
	ck_assert_int_eq(tb_apply(s, 4, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);

	/* 0 on a map that waits: placed with the one OSD there. */
	char dir2[64];
	tmpdir(dir2);
	struct meta_state *s2 = open_at(dir2);
	t = tb_new();
	tb_init_map(t, 16, 1, 0)->expect_osds = 3;
	tb_osd(t, 1, "h");
	tb_expect(t, 0);
	tb_expect(t, PLACE_MAX_OSDS + 1);
	ck_assert_int_eq(tb_apply(s2, 1, t, res), 4);
	ck_assert_int_eq(res[2].err, 0);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(meta_state_get_map(s2, &m), 0);
	ck_assert_uint_eq(m->expect_osds, 0);
	for (uint32_t pg = 0; pg < 16; pg++)
		ck_assert_uint_eq(m->pgs[pg]->osds[0], 1);
	meta_state_free_msg(m);
	meta_state_close(s2);
	rm_rf(dir2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* An operator's out: SetOsdState with admin_out. */
static void tb_admin_out(struct tb *t, uint32_t id, bool out)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetOsdState *ss = tb_alloc(t, sizeof(*ss));
	iolake__meta__set_osd_state__init(ss);
	ss->id = id;
	ss->set_admin_out = true;
	ss->admin_out = out;
	if (!out) {
		ss->set_in = true;
		ss->in = true;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	op->set_osd_state = ss;
}

static void tb_remove_osd(struct tb *t, uint32_t id)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__RemoveOsd *ro = tb_alloc(t, sizeof(*ro));
	iolake__meta__remove_osd__init(ro);
	ro->id = id;
	op->body_case = IOLAKE__META__OP__BODY_REMOVE_OSD;
	op->remove_osd = ro;
}

static const Iolake__Meta__OsdInfo *osd_in_map(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == id)
			return m->osds[i];
	return NULL;
}

static bool pgs_hold(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	for (size_t pg = 0; pg < m->n_pgs; pg++)
		for (size_t j = 0; j < m->pgs[pg]->n_osds; j++)
			if (m->pgs[pg]->osds[j] == id)
				return true;
	return false;
}

START_TEST(test_admin_out_and_remove)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_init_map(t, 64, 2, 1);
	char host[16];
	for (uint32_t i = 1; i <= 5; i++) {
		snprintf(host, sizeof(host), "h%u", i);
		tb_osd(t, i, host);
	}
	ck_assert_int_eq(tb_apply(s, 1, t, res), 6);
	Iolake__Meta__ClusterMap *m;
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert(pgs_hold(m, 2));
	meta_state_free_msg(m);

	/* osd out 2: out and sticky; a beat's up+in leaves it out; so does
	 * a re-registration; rm refuses while it is up. */
	t = tb_new();
	tb_admin_out(t, 2, true);
	tb_osd_state(t, 2, 1, 1);
	tb_osd(t, 2, "h2");
	tb_remove_osd(t, 2);
	tb_remove_osd(t, 99);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 5);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(res[0].epoch, 7);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_uint_eq(res[1].epoch, 7);      /* no change: no bump */
	ck_assert_int_eq(res[3].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[4].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	const Iolake__Meta__OsdInfo *o = osd_in_map(m, 2);
	ck_assert(o && o->up && !o->in && o->admin_out);
	ck_assert(!pgs_hold(m, 2));
	meta_state_free_msg(m);

	/* osd in 3 after osd out 3: back in, flag cleared */
	t = tb_new();
	tb_admin_out(t, 3, true);
	tb_admin_out(t, 3, false);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 2);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	o = osd_in_map(m, 3);
	ck_assert(o && o->up && o->in && !o->admin_out);
	meta_state_free_msg(m);

	/* down and out: rm drops it from the map */
	t = tb_new();
	tb_osd_state(t, 2, 0, -1);
	tb_remove_osd(t, 2);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 2);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->n_osds, 4);
	ck_assert_ptr_null(osd_in_map(m, 2));
	ck_assert(!pgs_hold(m, 2));
	ck_assert_uint_eq(m->epoch, res[1].epoch);
	for (size_t i = 1; i < m->n_osds; i++)
		ck_assert_uint_lt(m->osds[i - 1]->id, m->osds[i]->id);
	meta_state_free_msg(m);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("meta_state_map");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cluster_map);
	tcase_add_test(tc, test_map_expect_osds);
	tcase_add_test(tc, test_set_expect_osds);
	tcase_add_test(tc, test_admin_out_and_remove);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
