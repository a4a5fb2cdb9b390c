/*
 * test_http_limit.c — the per-address table (gateway/http_limit.c) with
 * a pinned clock: token-bucket arithmetic (burst, refill at the rate,
 * the cap, long idle periods), the connection cap (refuse at the cap,
 * admit again after a close), eviction (least recently seen idle entry;
 * never an entry holding connections; untracked when a window is full of
 * those), refunds (a signed request's token back, never past the burst,
 * never to a slot without a connection), and "off" settings.
 *
 * Oracles: exact admit/refuse sequences computed from the rate, and the
 * table's counters.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gateway/http_limit.h"

#define NS 1000000000ull

static void v4(uint8_t a[16], uint32_t ip)
{
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = (uint8_t)(ip >> 24);
	a[13] = (uint8_t)(ip >> 16);
	a[14] = (uint8_t)(ip >> 8);
	a[15] = (uint8_t)ip;
}

/* Requests admitted out of n at one instant. */
static int burst(struct http_limit *l, uint32_t slot, uint64_t now, int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += http_limit_request(l, slot, now);
	return ok;
}

/* A table of 100/s, burst 50, with one connection from 127.0.0.1 at t. */
static struct http_limit *one_conn(uint64_t t, uint32_t *slot)
{
	struct http_limit_cfg cfg = { .rate = 100, .burst = 50 };
	struct http_limit *l = http_limit_new(&cfg, 42);
	uint8_t a[16];
	v4(a, 0x7f000001);
	ck_assert(http_limit_conn_open(l, a, t, slot));
	return l;
}

START_TEST(test_bucket)
{
	uint32_t slot;
	uint64_t t = 5 * NS;
	struct http_limit *l = one_conn(t, &slot);
	ck_assert_uint_ne(slot, HTTP_LIMIT_NONE);
	/* Starts full: the burst, then nothing. */
	ck_assert_int_eq(burst(l, slot, t, 80), 50);
	/* 100/s: 10 ms gives one token; 5 ms half a one (kept, not lost);
	 * 95 ms more make 9.5 + 0.5 = 10; then 5 ms, half; 5 more, one. */
	ck_assert_int_eq(burst(l, slot, t + 10000000, 5), 1);
	ck_assert_int_eq(burst(l, slot, t + 15000000, 5), 0);
	ck_assert_int_eq(burst(l, slot, t + 110000000, 20), 10);
	ck_assert_int_eq(burst(l, slot, t + 115000000, 20), 0);
	ck_assert_int_eq(burst(l, slot, t + 120000000, 20), 1);
	/* A long idle period refills to the burst, never past it (also
	 * across an interval long enough to overflow a naive product). */
	ck_assert_int_eq(burst(l, slot, t + 10 * NS, 80), 50);
	ck_assert_int_eq(burst(l, slot, t + 100000 * NS, 80), 50);
	/* Steady state at exactly the rate: every request admitted. */
	uint64_t now = t + 200000 * NS;
	ck_assert_int_eq(burst(l, slot, now, 50), 50);
	int ok = 0;
	for (int i = 1; i <= 1000; i++)
		ok += http_limit_request(l, slot, now + (uint64_t)i * (NS / 100));
	ck_assert_int_eq(ok, 1000);
	/* Twice the rate for 10 s: about half refused. */
	now += 1001 * (NS / 100);
	ok = 0;
	for (int i = 1; i <= 2000; i++)
		ok += http_limit_request(l, slot, now + (uint64_t)i * (NS / 200));
	ck_assert_int_ge(ok, 999);
	ck_assert_int_le(ok, 1001);
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.entries, 1);
	ck_assert_uint_gt(st.requests_refused, 1000);
	http_limit_free(l);
}
END_TEST

/* Each admitted request that authenticates gives its token back: a signed
 * client at 10,000/s against 100/s, burst 50, is never refused (32 in
 * flight at most); unsigned requests still drain the bucket. */
START_TEST(test_refund)
{
	uint32_t slot;
	uint64_t t = 5 * NS;
	struct http_limit *l = one_conn(t, &slot);
	int ok = 0;
	for (int i = 0; i < 100000; i++) {
		uint64_t now = t + (uint64_t)i * (NS / 10000);
		ok += http_limit_request(l, slot, now);
		if (i >= 32)
			http_limit_refund(l, slot);   /* the one admitted 32 earlier verified */
	}
	ck_assert_int_eq(ok, 100000);
	/* Refunds never fill past the burst. */
	for (int i = 0; i < 1000; i++)
		http_limit_refund(l, slot);
	uint64_t now = t + 20 * NS;
	ck_assert_int_eq(burst(l, slot, now, 80), 50);
	/* Unsigned ones drain it as before. */
	ck_assert_int_eq(burst(l, slot, now, 10), 0);
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.refunds, 100000 - 32 + 1000);
	/* No refund to a slot whose connections are gone, nor to NONE. */
	http_limit_conn_close(l, slot);
	http_limit_refund(l, slot);
	http_limit_refund(l, HTTP_LIMIT_NONE);
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.refunds, 100000 - 32 + 1000);
	http_limit_free(l);
}
END_TEST

START_TEST(test_default_burst_and_off)
{
	struct http_limit_cfg cfg = { .rate = 10 };
	struct http_limit *l = http_limit_new(&cfg, 1);
	uint8_t a[16];
	v4(a, 0x0a000001);
	uint32_t slot;
	ck_assert(http_limit_conn_open(l, a, NS, &slot));
	ck_assert_int_eq(burst(l, slot, NS, 100), 20); /* burst 0 -> 2 x rate */
	/* No slot (untracked) is never refused. */
	ck_assert_int_eq(burst(l, HTTP_LIMIT_NONE, NS, 100), 100);
	http_limit_free(l);

	struct http_limit_cfg off = { 0 };
	l = http_limit_new(&off, 1);
	for (int i = 0; i < 1000; i++) {
		ck_assert(http_limit_conn_open(l, a, NS, &slot));
		ck_assert_uint_eq(slot, HTTP_LIMIT_NONE);
		ck_assert(http_limit_request(l, slot, NS));
	}
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.entries, 0);
	http_limit_free(l);
}
END_TEST

START_TEST(test_conn_cap)
{
	struct http_limit_cfg cfg = { .max_conns = 3 };
	struct http_limit *l = http_limit_new(&cfg, 7);
	uint8_t a[16], b[16];
	v4(a, 0xc0a80001);
	v4(b, 0xc0a80002);
	uint32_t s[4], sb;
	for (int i = 0; i < 3; i++)
		ck_assert(http_limit_conn_open(l, a, NS, &s[i]));
	ck_assert(s[0] == s[1] && s[1] == s[2]);
	ck_assert(!http_limit_conn_open(l, a, NS, &s[3]));
	ck_assert_uint_eq(s[3], HTTP_LIMIT_NONE);
	/* Another address is counted apart. */
	ck_assert(http_limit_conn_open(l, b, NS, &sb));
	ck_assert_uint_ne(sb, s[0]);
	/* A close makes room for exactly one. */
	http_limit_conn_close(l, s[1]);
	ck_assert(http_limit_conn_open(l, a, NS, &s[1]));
	ck_assert(!http_limit_conn_open(l, a, NS, &s[3]));
	/* No rate limit configured: requests always pass. */
	ck_assert_int_eq(burst(l, s[0], NS, 10000), 10000);
	/* Closing an untracked connection is harmless. */
	http_limit_conn_close(l, HTTP_LIMIT_NONE);
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.conns_refused, 2);
	ck_assert_uint_eq(st.entries, 2);
	http_limit_free(l);
}
END_TEST

/* Fill the table far past its size: entries are reused (evicted), the
 * table never holds more than HTTP_LIMIT_SLOTS, an address holding a
 * connection keeps its entry (and its count) throughout, and a fresh
 * flood of addresses never costs a connected address its bucket. */
START_TEST(test_eviction)
{
	struct http_limit_cfg cfg = { .max_conns = 2, .rate = 1, .burst = 1 };
	struct http_limit *l = http_limit_new(&cfg, 99);
	uint8_t keep[16], a[16];
	v4(keep, 0x01020304);
	uint32_t ks1, ks2, x;
	ck_assert(http_limit_conn_open(l, keep, NS, &ks1));
	ck_assert(http_limit_conn_open(l, keep, NS, &ks2));
	ck_assert(http_limit_request(l, ks1, NS));  /* its one token */
	ck_assert(!http_limit_request(l, ks1, NS));
	uint64_t now = 2 * NS;
	for (uint32_t i = 0; i < 10 * HTTP_LIMIT_SLOTS; i++) {
		v4(a, 0x20000000 + i);
		ck_assert(http_limit_conn_open(l, a, now + i, &x));
		if (x != HTTP_LIMIT_NONE)
			http_limit_conn_close(l, x); /* idle: may be evicted */
	}
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_le(st.entries, HTTP_LIMIT_SLOTS);
	ck_assert_uint_ge(st.evictions, 9 * HTTP_LIMIT_SLOTS - HTTP_LIMIT_SLOTS);
	/* The connected address still has its entry: still at its cap, and
	 * its bucket was not reset (no token until a second has passed). */
	ck_assert(!http_limit_conn_open(l, keep, now, &x));
	ck_assert(!http_limit_request(l, ks1, now - NS / 2));
	http_limit_conn_close(l, ks1);
	ck_assert(http_limit_conn_open(l, keep, now, &x));
	ck_assert_uint_eq(x, ks1);
	http_limit_free(l);
}
END_TEST

/* Every entry of every window holding connections: a new address is let
 * through untracked rather than refused or corrupting a slot. */
START_TEST(test_full_windows_fail_open)
{
	struct http_limit_cfg cfg = { .max_conns = 1000 };
	struct http_limit *l = http_limit_new(&cfg, 5);
	uint8_t a[16];
	uint32_t x;
	uint32_t tracked = 0, untracked = 0;
	for (uint32_t i = 0; i < 2 * HTTP_LIMIT_SLOTS; i++) {
		v4(a, 0x30000000 + i);
		ck_assert(http_limit_conn_open(l, a, NS, &x));
		if (x == HTTP_LIMIT_NONE)
			untracked++;
		else
			tracked++;
	}
	ck_assert_uint_le(tracked, HTTP_LIMIT_SLOTS);
	ck_assert_uint_ge(untracked, HTTP_LIMIT_SLOTS);
	struct http_limit_stats st;
	http_limit_stats(l, &st);
	ck_assert_uint_eq(st.untracked, untracked);
	ck_assert_uint_eq(st.evictions, 0);
	http_limit_free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_limit");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_bucket);
	tcase_add_test(tc, test_refund);
	tcase_add_test(tc, test_default_burst_and_off);
	tcase_add_test(tc, test_conn_cap);
	tcase_add_test(tc, test_eviction);
	tcase_add_test(tc, test_full_windows_fail_open);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
