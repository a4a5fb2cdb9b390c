/*
 * test_user_limit.c — the per-user limits (gateway/user_limit.c) with a
 * pinned clock: the request bucket (burst, refill at the rate, cap), the
 * byte bucket with debt (a request admitted while tokens remain may take
 * it below zero; the user is then refused until the refill pays it back),
 * users apart from one another, eviction of the least recently seen user
 * when a window is full, and "off" settings.
 *
 * Oracles: exact admit/refuse sequences from the rates, and the counters.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gateway/user_limit.h"

#define NS 1000000000ull

static int burst(struct user_limit *l, const char *u, uint64_t now, int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += user_limit_admit(l, u, 0, now);
	return ok;
}

START_TEST(test_requests)
{
	struct user_limit_cfg cfg = { .rate = 10 };   /* burst 20 */
	struct user_limit *l = user_limit_new(&cfg, 1);
	ck_assert_ptr_nonnull(l);
	uint64_t t = 5 * NS;
	ck_assert_int_eq(burst(l, "alice", t, 100), 20);
	ck_assert_int_eq(burst(l, "bob", t, 100), 20);      /* users apart */
	ck_assert_int_eq(burst(l, "alice", t + NS / 2, 100), 5);   /* 0.5 s: 5 */
	ck_assert_int_eq(burst(l, "alice", t + 100 * NS, 100), 20); /* capped at the burst */
	struct user_limit_stats st;
	user_limit_stats(l, &st);
	ck_assert_uint_eq(st.refused_rate, 80 + 80 + 95 + 80);
	ck_assert_uint_eq(st.refused_bytes, 0);
	user_limit_free(l);
}
END_TEST

START_TEST(test_bytes_debt)
{
	struct user_limit_cfg cfg = { .bytes_rate = 1000 };   /* burst 2,000 */
	struct user_limit *l = user_limit_new(&cfg, 1);
	uint64_t t = NS;
	/* A 5,000-byte upload is admitted with 2,000 tokens: 3,000 of debt. */
	ck_assert(user_limit_admit(l, "alice", 5000, t));
	ck_assert(!user_limit_admit(l, "alice", 0, t));
	ck_assert(!user_limit_admit(l, "alice", 0, t + 2 * NS));   /* -1,000 */
	ck_assert(user_limit_admit(l, "alice", 0, t + 3 * NS));    /* 0: paid back */
	/* A response charged after the fact works the same. */
	user_limit_charge(l, "alice", 1500, t + 3 * NS);
	ck_assert(!user_limit_admit(l, "alice", 0, t + 4 * NS));   /* -500 */
	ck_assert(user_limit_admit(l, "alice", 0, t + 5 * NS));   /* paid back */
	ck_assert(user_limit_admit(l, "bob", 0, t));               /* bob untouched */
	struct user_limit_stats st;
	user_limit_stats(l, &st);
	ck_assert_uint_eq(st.refused_bytes, 3);
	ck_assert_uint_eq(st.refused_rate, 0);
	user_limit_free(l);
}
END_TEST

START_TEST(test_off_and_eviction)
{
	struct user_limit_cfg off = { 0 };
	ck_assert_ptr_null(user_limit_new(&off, 1));   /* nothing to do */
	struct user_limit_cfg cfg = { .rate = 1, .burst = 1 };
	struct user_limit *l = user_limit_new(&cfg, 1);
	/* Far more users than slots: every new one starts with a full bucket,
	 * and the table evicts rather than refusing strangers. */
	char name[32];
	for (int i = 0; i < 4 * USER_LIMIT_SLOTS; i++) {
		snprintf(name, sizeof(name), "user%d", i);
		ck_assert(user_limit_admit(l, name, 0, NS + (uint64_t)i));
	}
	struct user_limit_stats st;
	user_limit_stats(l, &st);
	ck_assert_uint_gt(st.evictions, 0);
	/* A user just seen keeps its (empty) bucket. */
	ck_assert(!user_limit_admit(l, name, 0, NS + 4 * USER_LIMIT_SLOTS));
	user_limit_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("user_limit");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_requests);
	tcase_add_test(tc, test_bytes_debt);
	tcase_add_test(tc, test_off_and_eviction);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
