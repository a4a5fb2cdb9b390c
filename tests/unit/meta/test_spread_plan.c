/*
 * test_spread_plan.c — the leader-spread decision (meta/spread_plan.h):
 * the netns case that went wrong (root + 3 range groups over 3 members,
 * two range groups on one member), the root moving only after the range
 * groups, unreachable and busy groups, and convergence from random
 * starts: members acting one at a time on the same view end with every
 * member's range-group count within 1 of the others' (each range group on
 * its own member when there are no more of them than members) and never
 * move a group back and forth.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "meta/spread_plan.h"

static const uint64_t M3[] = { 1, 2, 3 };

/* A view where every group is reachable to every other member. */
struct view {
	struct spread_plan_group g[32];
	uint64_t reach[32][8];
	size_t n;
};

static void view_init(struct view *v, const uint64_t *members, size_t m, size_t n,
		      const uint64_t *leaders, uint64_t self)
{
	v->n = n;
	for (size_t i = 0; i < n; i++) {
		struct spread_plan_group *g = &v->g[i];
		g->id = i;   /* group 0 is the root */
		g->leader = leaders[i];
		g->movable = leaders[i] == self;
		g->n_reachable = 0;
		for (size_t k = 0; k < m; k++)
			if (members[k] != self)
				v->reach[i][g->n_reachable++] = members[k];
		g->reachable = v->reach[i];
	}
}

START_TEST(netns_case)
{
	/* root on 1, groups 1 on 3, 2 and 3 on 2: the old rule (share =
	 * ceil(4 / 3) = 2) left it so. Member 2 moves a range group to
	 * member 1, the one leading no range group (3 leads one: 1 + 2 > 2,
	 * a move there would not make things better). */
	const uint64_t leaders[] = { 1, 3, 2, 2 };
	struct view v;
	size_t gi;
	uint64_t to;
	view_init(&v, M3, 3, 4, leaders, 2);
	ck_assert(spread_plan_next(M3, 3, 2, v.g, v.n, &gi, &to));
	ck_assert(gi == 2 || gi == 3);
	ck_assert_uint_eq(to, 1);
	/* members 1 and 3 have nothing to move */
	view_init(&v, M3, 3, 4, leaders, 1);
	ck_assert(!spread_plan_next(M3, 3, 1, v.g, v.n, &gi, &to));
	view_init(&v, M3, 3, 4, leaders, 3);
	ck_assert(!spread_plan_next(M3, 3, 3, v.g, v.n, &gi, &to));
	/* spread: each range group on its own member, root anywhere */
	const uint64_t spread[] = { 1, 3, 1, 2 };
	for (uint64_t self = 1; self <= 3; self++) {
		view_init(&v, M3, 3, 4, spread, self);
		ck_assert(!spread_plan_next(M3, 3, self, v.g, v.n, &gi, &to));
	}
}
END_TEST

START_TEST(root_after_ranges)
{
	/* member 1 leads the root and two range groups, 3 leads none: a
	 * range group moves first, to 3 */
	const uint64_t leaders[] = { 1, 1, 1, 2 };
	struct view v;
	size_t gi;
	uint64_t to;
	view_init(&v, M3, 3, 4, leaders, 1);
	ck_assert(spread_plan_next(M3, 3, 1, v.g, v.n, &gi, &to));
	ck_assert_uint_ne(v.g[gi].id, 0);
	ck_assert_uint_eq(to, 3);
	/* one range group each on 1 and 2, root on 1 too, 3 idle: the
	 * range counts (1, 1, 0) are within 1, so the root moves to 3 */
	const uint64_t l2[] = { 1, 1, 2 };
	view_init(&v, M3, 3, 3, l2, 1);
	ck_assert(spread_plan_next(M3, 3, 1, v.g, v.n, &gi, &to));
	ck_assert_uint_eq(v.g[gi].id, 0);
	ck_assert_uint_eq(to, 3);
	/* root alone with a range group on another member: stays */
	const uint64_t l3[] = { 1, 2 };
	view_init(&v, M3, 3, 2, l3, 1);
	ck_assert(!spread_plan_next(M3, 3, 1, v.g, v.n, &gi, &to));
}
END_TEST

START_TEST(unreachable_and_busy)
{
	const uint64_t leaders[] = { 1, 2, 2, 2 };
	struct view v;
	size_t gi;
	uint64_t to;
	/* 2 leads three range groups; 1 and 3 lead none. With 3 not heard
	 * from in any group, the move goes to 1. */
	view_init(&v, M3, 3, 4, leaders, 2);
	for (size_t i = 0; i < v.n; i++) {
		v.reach[i][0] = 1;
		v.g[i].n_reachable = 1;
	}
	ck_assert(spread_plan_next(M3, 3, 2, v.g, v.n, &gi, &to));
	ck_assert_uint_eq(to, 1);
	/* none reachable: nothing */
	for (size_t i = 0; i < v.n; i++)
		v.g[i].n_reachable = 0;
	ck_assert(!spread_plan_next(M3, 3, 2, v.g, v.n, &gi, &to));
	/* none movable (transfers in flight or too recent): nothing */
	view_init(&v, M3, 3, 4, leaders, 2);
	for (size_t i = 0; i < v.n; i++)
		v.g[i].movable = false;
	ck_assert(!spread_plan_next(M3, 3, 2, v.g, v.n, &gi, &to));
	/* self not a member, or one member: nothing */
	view_init(&v, M3, 3, 4, leaders, 2);
	ck_assert(!spread_plan_next(M3, 3, 7, v.g, v.n, &gi, &to));
	ck_assert(!spread_plan_next(M3, 1, 1, v.g, v.n, &gi, &to));
	/* a leader outside the members is not counted and not moved */
	const uint64_t odd[] = { 1, 9, 9, 9 };
	view_init(&v, M3, 3, 4, odd, 9);
	ck_assert(!spread_plan_next(M3, 3, 9, v.g, v.n, &gi, &to));
}
END_TEST

/* Members take turns (from a random one) acting on the shared truth until none
 * wants to move; checks the end state and bounds the moves. */
START_TEST(converges)
{
	unsigned seed = 20261202;
	fprintf(stderr, "test_spread_plan: seed %u\n", seed);
	srand(seed);
	const uint64_t members[] = { 1, 2, 3, 4, 5 };
	for (int run = 0; run < 2000; run++) {
		size_t m = 2 + (size_t)rand() % 4, n = 1 + (size_t)rand() % 12;
		uint64_t leaders[32];
		for (size_t i = 0; i < n; i++)
			leaders[i] = members[(size_t)rand() % m];
		int moves = 0;
		bool moved = true;
		while (moved) {   /* passes over every member, from a random one */
			moved = false;
			size_t first = (size_t)rand() % m;
			for (size_t j = 0; j < m; j++) {
				uint64_t self = members[(first + j) % m];
				struct view v;
				size_t gi;
				uint64_t to;
				view_init(&v, members, m, n, leaders, self);
				if (!spread_plan_next(members, m, self, v.g, v.n, &gi, &to))
					continue;
				ck_assert_uint_eq(leaders[gi], self);
				ck_assert_uint_ne(to, self);
				leaders[gi] = to;
				moved = true;
				ck_assert_int_lt(++moves, 64);
			}
		}
		/* the fixed point: range counts within 1; the root's member
		 * within 1 of every other's total */
		unsigned rc[8] = { 0 }, tot[8] = { 0 };
		for (size_t i = 0; i < n; i++) {
			tot[leaders[i] - 1]++;
			if (i)
				rc[leaders[i] - 1]++;
		}
		unsigned lo = 99, hi = 0;
		for (size_t k = 0; k < m; k++) {
			lo = rc[k] < lo ? rc[k] : lo;
			hi = rc[k] > hi ? rc[k] : hi;
		}
		ck_assert_uint_le(hi - lo, 1);
		if (n - 1 <= m)
			ck_assert_uint_le(hi, 1);   /* each range group on its own member */
		for (size_t k = 0; k < m; k++)
			ck_assert_uint_le(tot[leaders[0] - 1], tot[k] + 1);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spread_plan");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, netns_case);
	tcase_add_test(tc, root_after_ranges);
	tcase_add_test(tc, unreachable_and_busy);
	tcase_add_test(tc, converges);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
