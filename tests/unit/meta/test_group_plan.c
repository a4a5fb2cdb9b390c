/*
 * test_group_plan.c — range groups following the members (issue 13): the
 * reconcile decision (meta/group_plan.h: desired vs actual -> next step)
 * case by case and driven to convergence from random starts against a
 * model configuration, checking that no step takes a group that could
 * commit below its quorum; and the root's ops on real RocksDB under
 * /dev/shm (meta/state_members.c): SetGroupMembers for every live group
 * and for one, refusals, members_index moving only when the set changes,
 * GroupReconciled taking only the current members_index.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/group_plan.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct group_plan_step next(const uint64_t *d, size_t nd,
				   const struct group_plan_server *a, size_t na, uint64_t self)
{
	return group_plan_next(d, nd, a, na, self);
}

#define V(id) { id, true, true }       /* a live voter */
#define DEAD(id) { id, true, false }   /* a voter not heard from */
#define SPARE(id) { id, false, true }

START_TEST(cases)
{
	const uint64_t d123[] = { 1, 2, 3 }, d12345[] = { 1, 2, 3, 4, 5 };
	const uint64_t d1345[] = { 1, 3, 4, 5 }, d2345[] = { 2, 3, 4, 5 };
	struct group_plan_step s;
	/* matching: done; nothing desired: done (never empty a group) */
	const struct group_plan_server a123[] = { V(1), V(2), V(3) };
	s = next(d123, 3, a123, 3, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_DONE);
	s = next(NULL, 0, a123, 3, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_DONE);
	/* members 4 and 5 added: add 4 (lowest first), then promote it */
	s = next(d12345, 5, a123, 3, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_ADD);
	ck_assert_uint_eq(s.id, 4);
	const struct group_plan_server a123s4[] = { V(1), V(2), V(3), SPARE(4) };
	s = next(d12345, 5, a123s4, 4, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_PROMOTE);
	ck_assert_uint_eq(s.id, 4);
	/* a dead member not desired goes first, before any addition */
	const struct group_plan_server a12d345[] = { V(1), DEAD(2), V(3), V(4), V(5) };
	s = next(d1345, 4, a12d345, 5, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_REMOVE);
	ck_assert_uint_eq(s.id, 2);
	const uint64_t d13456[] = { 1, 3, 4, 5, 6 };
	s = next(d13456, 5, a12d345, 5, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_REMOVE);
	ck_assert_uint_eq(s.id, 2);
	/* a live member not desired leaves after the additions */
	const struct group_plan_server a12345l[] = { V(1), V(2), V(3), V(4), V(5) };
	const uint64_t d13456b[] = { 1, 3, 4, 5, 6 };
	s = next(d13456b, 5, a12345l, 5, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_ADD);
	ck_assert_uint_eq(s.id, 6);
	const struct group_plan_server a123456[] = { V(1), V(2), V(3), V(4), V(5), V(6) };
	s = next(d13456b, 5, a123456, 6, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_REMOVE);
	ck_assert_uint_eq(s.id, 2);
	/* the leader itself not desired: transfer to a live desired voter */
	s = next(d2345, 4, a12345l, 5, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_TRANSFER);
	ck_assert_uint_eq(s.id, 2);
	const struct group_plan_server a1d2d3[] = { V(1), DEAD(2), DEAD(3) };
	const uint64_t d23[] = { 2, 3 };
	s = next(d23, 2, a1d2d3, 3, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_WAIT);
	/* a spare not desired (an addition undone) is removed */
	const struct group_plan_server a123s9[] = { V(1), V(2), V(3), SPARE(9) };
	s = next(d123, 3, a123s9, 4, 1);
	ck_assert_int_eq(s.kind, GROUP_PLAN_REMOVE);
	ck_assert_uint_eq(s.id, 9);
	ck_assert_str_eq(group_plan_kind_name(GROUP_PLAN_PROMOTE), "promote");
}
END_TEST

/* ---- convergence against a model */

struct model {
	struct group_plan_server s[16];
	size_t n;
	bool alive[16];                /* by member id (1..15) */
};

static size_t live_voters(const struct model *m, size_t *voters)
{
	size_t live = 0, v = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->s[i].voter) {
			v++;
			live += m->alive[m->s[i].id];
		}
	*voters = v;
	return live;
}

static void remove_at(struct model *m, size_t i)
{
	memmove(&m->s[i], &m->s[i + 1], (m->n - i - 1) * sizeof(m->s[0]));
	m->n--;
}

static uint64_t rnd_state;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

START_TEST(converges)
{
	const char *env = getenv("GROUP_PLAN_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 13;
	printf("test_group_plan converges: seed %llu (GROUP_PLAN_SEED)\n", (unsigned long long)seed);
	rnd_state = seed * 2654435761u + 1;
	for (int round = 0; round < 2000; round++) {
		struct model m;
		memset(&m, 0, sizeof(m));
		/* actual: 1..5 voters of ids 1..9, one of them the leader (alive) */
		size_t na = 1 + rnd() % 5;
		for (size_t i = 0; i < na; i++) {
			uint64_t id;
			bool dup;
			do {
				id = 1 + rnd() % 9;
				dup = false;
				for (size_t k = 0; k < i; k++)
					dup = dup || m.s[k].id == id;
			} while (dup);
			m.s[m.n++] = (struct group_plan_server){ id, true, true };
		}
		for (uint64_t id = 1; id < 16; id++)
			m.alive[id] = rnd() % 4 != 0;
		uint64_t leader = m.s[rnd() % m.n].id;
		m.alive[leader] = true;
		size_t v0;
		size_t live0 = live_voters(&m, &v0);
		bool could_commit = 2 * live0 > v0;
		/* desired: 1..5 distinct ids, alive (the root's voters) */
		uint64_t d[5];
		size_t nd = 1 + rnd() % 5;
		for (size_t i = 0; i < nd; i++) {
			bool dup;
			do {
				d[i] = 1 + rnd() % 9;
				dup = false;
				for (size_t k = 0; k < i; k++)
					dup = dup || d[k] == d[i];
			} while (dup);
			m.alive[d[i]] = true;
		}
		if (!could_commit)
			continue;   /* no change commits in a group that lost its quorum */
		int steps = 0;
		for (;; steps++) {
			ck_assert_int_lt(steps, 32);
			for (size_t i = 0; i < m.n; i++)
				m.s[i].recent = m.alive[m.s[i].id];
			struct group_plan_step s = group_plan_next(d, nd, m.s, m.n, leader);
			if (s.kind == GROUP_PLAN_DONE || s.kind == GROUP_PLAN_WAIT)
				break;
			size_t at = m.n;
			for (size_t i = 0; i < m.n; i++)
				if (m.s[i].id == s.id)
					at = i;
			switch (s.kind) {
			case GROUP_PLAN_ADD:
				ck_assert_uint_eq(at, m.n);
				m.s[m.n++] = (struct group_plan_server){ s.id, false, true };
				break;
			case GROUP_PLAN_PROMOTE:
				ck_assert_uint_lt(at, m.n);
				ck_assert(!m.s[at].voter);
				m.s[at].voter = true;
				break;
			case GROUP_PLAN_REMOVE:
				ck_assert_uint_lt(at, m.n);
				ck_assert_uint_ne(s.id, leader);
				remove_at(&m, at);
				break;
			case GROUP_PLAN_TRANSFER:
				ck_assert_uint_lt(at, m.n);
				ck_assert(m.s[at].voter && m.alive[s.id]);
				leader = s.id;
				break;
			default:
				ck_abort();
			}
			/* Every configuration on the way can still commit. */
			size_t v;
			size_t live = live_voters(&m, &v);
			ck_assert_msg(2 * live > v, "round %d step %d: %zu live of %zu voters", round,
				      steps, live, v);
		}
		/* Ended: exactly the desired voters, or waiting only because the
		 * leader must go and no desired voter is live (cannot be here:
		 * every desired member is alive). */
		ck_assert_uint_eq(m.n, nd);
		for (size_t i = 0; i < m.n; i++) {
			bool want = false;
			for (size_t k = 0; k < nd; k++)
				want = want || d[k] == m.s[i].id;
			ck_assert(want && m.s[i].voter);
		}
	}
}
END_TEST

/* ---- the root's ops */

static struct meta_op_result res[META_BATCH_MAX_OPS];

static void tb_group(struct tb *t, uint64_t id)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__CreateGroup *cg = tb_alloc(t, sizeof(*cg));
	Iolake__Meta__GroupDesc *d = tb_alloc(t, sizeof(*d));
	iolake__meta__create_group__init(cg);
	iolake__meta__group_desc__init(d);
	d->id = id;
	d->n_voters = 3;
	d->voters = tb_alloc(t, 3 * sizeof(*d->voters));
	for (size_t i = 0; i < 3; i++) {
		d->voters[i] = tb_alloc(t, sizeof(**d->voters));
		iolake__meta__group_voter__init(d->voters[i]);
		d->voters[i]->id = i + 1;
		d->voters[i]->address = tb_str(t, "127.0.0.1:7000");
	}
	cg->group = d;
	op->body_case = IOLAKE__META__OP__BODY_CREATE_GROUP;
	op->create_group = cg;
}

static void tb_members(struct tb *t, uint64_t group, const uint64_t *ids, size_t n,
		       const char *addr)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetGroupMembers *s = tb_alloc(t, sizeof(*s));
	iolake__meta__set_group_members__init(s);
	s->group = group;
	s->n_members = n;
	s->members = tb_alloc(t, (n + 1) * sizeof(*s->members));
	for (size_t i = 0; i < n; i++) {
		s->members[i] = tb_alloc(t, sizeof(**s->members));
		iolake__meta__group_voter__init(s->members[i]);
		s->members[i]->id = ids[i];
		s->members[i]->address = tb_str(t, addr);
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_GROUP_MEMBERS;
	op->set_group_members = s;
}

static void tb_reconciled(struct tb *t, uint64_t group, uint64_t index)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__GroupReconciled *g = tb_alloc(t, sizeof(*g));
	iolake__meta__group_reconciled__init(g);
	g->group = group;
	g->members_index = index;
	op->body_case = IOLAKE__META__OP__BODY_GROUP_RECONCILED;
	op->group_reconciled = g;
}

static Iolake__Meta__GroupDesc *group_row(struct meta_state *s, uint64_t id)
{
	Iolake__Meta__GroupDesc **v = NULL;
	size_t n = 0, i;
	ck_assert_int_eq(meta_state_list_groups(s, &v, &n), 0);
	Iolake__Meta__GroupDesc *out = NULL;
	for (i = 0; i < n; i++) {
		if (v[i]->id == id && !out)
			out = v[i];
		else
			meta_state_free_msg(v[i]);
	}
	free(v);
	ck_assert_ptr_nonnull(out);
	return out;
}

START_TEST(root_ops)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	uint64_t idx = 1;
	struct tb *t = tb_new();
	tb_group(t, 1);
	tb_group(t, 2);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	Iolake__Meta__GroupDesc *g = group_row(s, 1);
	ck_assert_uint_eq(g->n_members, 0);   /* members: its voters */
	ck_assert_uint_eq(g->members_index, 0);
	ck_assert_uint_eq(g->reconciled_index, 0);
	meta_state_free_msg(g);

	/* refusals: none, too many, repeated, zero id, bad address, unknown group */
	const uint64_t ten[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, rep[] = { 1, 1 }, zero[] = { 0 };
	t = tb_new();
	tb_members(t, 0, ten, 0, "127.0.0.1:7000");
	tb_members(t, 0, ten, 10, "127.0.0.1:7000");
	tb_members(t, 0, rep, 2, "127.0.0.1:7000");
	tb_members(t, 0, zero, 1, "127.0.0.1:7000");
	tb_members(t, 0, ten, 2, "nohostport");
	tb_members(t, 7, ten, 2, "127.0.0.1:7000");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 6);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(res[i].err, -EINVAL);
	ck_assert_int_eq(res[5].err, IOL_ENOT_FOUND);

	/* every live group takes 1..5 */
	const uint64_t five[] = { 1, 2, 3, 4, 5 };
	t = tb_new();
	tb_members(t, 0, five, 5, "127.0.0.1:7000");
	uint64_t set_at = idx;
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(res[0].groups);
	for (uint64_t id = 1; id <= 2; id++) {
		g = group_row(s, id);
		ck_assert_uint_eq(g->n_members, 5);
		ck_assert_uint_eq(g->n_voters, 3);   /* the bootstrap voters stay */
		ck_assert_uint_eq(g->members_index, set_at);
		meta_state_free_msg(g);
	}
	/* the same set again (another order): nothing moves */
	const uint64_t five_r[] = { 5, 4, 3, 2, 1 };
	t = tb_new();
	tb_members(t, 0, five_r, 5, "127.0.0.1:7000");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(!res[0].groups);
	g = group_row(s, 1);
	ck_assert_uint_eq(g->members_index, set_at);
	meta_state_free_msg(g);
	/* reconciled: an old index does nothing; the current one sticks */
	t = tb_new();
	tb_reconciled(t, 1, set_at - 1);
	tb_reconciled(t, 1, set_at);
	tb_reconciled(t, 9, set_at);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(!res[0].groups);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert(res[1].groups);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	g = group_row(s, 1);
	ck_assert_uint_eq(g->reconciled_index, set_at);
	meta_state_free_msg(g);
	g = group_row(s, 2);
	ck_assert_uint_eq(g->reconciled_index, 0);
	meta_state_free_msg(g);
	/* one group only: 2 takes 1,3,4,5; 1 keeps its members */
	const uint64_t four[] = { 1, 3, 4, 5 };
	t = tb_new();
	tb_members(t, 2, four, 4, "127.0.0.1:7000");
	uint64_t set2 = idx;
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	g = group_row(s, 2);
	ck_assert_uint_eq(g->n_members, 4);
	ck_assert_uint_eq(g->members_index, set2);
	meta_state_free_msg(g);
	g = group_row(s, 1);
	ck_assert_uint_eq(g->n_members, 5);
	ck_assert_uint_eq(g->reconciled_index, g->members_index);
	meta_state_free_msg(g);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("group_plan");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, cases);
	tcase_add_test(tc, converges);
	tcase_add_test(tc, root_ops);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
