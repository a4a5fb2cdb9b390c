/*
 * test_store_clog.c — the commit-log ring on its own: records come back in
 * order after a reopen; a writer that wraps is followed to the start; a
 * torn last record ends the replay; a record of another ring (other salt)
 * is never taken; space is refused until trimmed, and an empty log takes
 * a record of its whole capacity; a damaged header block is refused.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "osd/store/clog.h"
#include "tests/lib/scratch.h"

#define RING (64u << 10)       /* capacity 60 KiB */
#define PAY (20u << 10)        /* a record takes 24 KiB */

static char path[128], path2[128];

/* Once, in the runner process (so a failed test leaves nothing behind). */
static void setup(void)
{
	test_scratch_path(path, sizeof(path), "iolake-test-clog-%d", (int)getpid());
	test_scratch_path(path2, sizeof(path2), "iolake-test-clog2-%d", (int)getpid());
}

/* Each test starts without rings. */
static void fresh(void)
{
	unlink(path);
	unlink(path2);
}

static void teardown(void)
{
	unlink(path);
	unlink(path2);
}

static void fill(uint8_t *p, size_t n, int tag)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(tag * 31 + i * 7);
}

struct seen {
	int n;
	uint64_t seqs[16];
	uint64_t ends[16];
	int tags[16];
};

static int on_rec(void *arg, uint64_t seq, uint64_t end_off, const void *payload, size_t len)
{
	struct seen *s = arg;
	ck_assert_uint_eq(len, PAY);
	uint8_t want[PAY];
	int tag = -1;
	for (int t = 0; t < 8; t++) {
		fill(want, PAY, t);
		if (memcmp(want, payload, PAY) == 0)
			tag = t;
	}
	ck_assert_int_ge(tag, 0); /* the bytes are one of ours, whole */
	s->seqs[s->n] = seq;
	s->ends[s->n] = end_off;
	s->tags[s->n] = tag;
	s->n++;
	return 0;
}

static void append(struct store_clog *c, int tag, uint64_t *seq, uint64_t *end)
{
	static uint8_t p[PAY];
	fill(p, PAY, tag);
	ck_assert(store_clog_fits(c, PAY));
	store_clog_next(c, PAY, seq, end);
	ck_assert_int_eq(store_clog_append(c, p, PAY), 0);
}

START_TEST(order_wrap_torn)
{
	char err[256];
	struct seen none = { 0 };
	struct store_clog *c;
	ck_assert_int_eq(store_clog_open(NULL, path, RING, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(store_clog_capacity(c), RING - STORE_CLOG_BLOCK);
	ck_assert_int_eq(store_clog_replay(c, 0, 0, on_rec, &none), 0); /* new: empty */
	uint64_t seq, end, end_b;
	append(c, 1, &seq, &end);
	ck_assert_uint_eq(seq, 1);
	ck_assert_uint_eq(end, STORE_CLOG_BLOCK + store_clog_need(PAY));
	append(c, 2, &seq, &end_b);
	ck_assert_uint_eq(seq, 2);
	/* A third does not fit behind the second, and the start is still
	 * live: refused until trimmed. */
	ck_assert(!store_clog_fits(c, PAY));
	store_clog_close(c);

	struct seen s = { 0 };
	ck_assert_int_eq(store_clog_open(NULL, path, 0, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c, 0, 0, on_rec, &s), 2);
	ck_assert_int_eq(s.n, 2);
	ck_assert_uint_eq(s.seqs[0], 1);
	ck_assert_int_eq(s.tags[0], 1);
	ck_assert_uint_eq(s.seqs[1], 2);
	ck_assert_int_eq(s.tags[1], 2);
	ck_assert_uint_eq(s.ends[1], end_b);
	/* After a replay the tail follows the last record. */
	store_clog_next(c, PAY, &seq, &end);
	ck_assert_uint_eq(seq, 3);
	ck_assert_uint_eq(end, STORE_CLOG_BLOCK + store_clog_need(PAY)); /* wraps */
	append(c, 3, &seq, &end);
	append(c, 4, &seq, &end);
	ck_assert_uint_eq(seq, 4);
	/* 5 would wrap onto 3, which is live: refused until trimmed. */
	ck_assert(!store_clog_fits(c, PAY));
	uint64_t pos = store_clog_pos(c);
	store_clog_trim_to(c, pos);
	ck_assert_uint_eq(store_clog_used(c), 0);
	ck_assert(store_clog_fits(c, PAY));
	store_clog_close(c);

	/* From after 2: 3 is found at the start (the writer wrapped), then 4. */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(store_clog_open(NULL, path, 0, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c, 2, end_b, on_rec, &s), 2);
	ck_assert_int_eq(s.tags[0], 3);
	ck_assert_int_eq(s.tags[1], 4);
	store_clog_close(c);
	/* From the start expecting seq 1: record 3 overwrote it: nothing. */
	ck_assert_int_eq(store_clog_open(NULL, path, 0, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c, 0, 0, on_rec, &none), 0);
	store_clog_close(c);

	/* Tear record 4 (one payload byte): the replay ends after 3. */
	int fd = open(path, O_RDWR);
	uint8_t b;
	off_t at = (off_t)(end - store_clog_need(PAY) + STORE_CLOG_HDR + 100);
	ck_assert_int_eq(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(store_clog_open(NULL, path, 0, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c, 2, end_b, on_rec, &s), 1);
	ck_assert_int_eq(s.tags[0], 3);
	/* The next record goes where the torn one was, with its seq. */
	store_clog_next(c, PAY, &seq, &end);
	ck_assert_uint_eq(seq, 4);
	store_clog_close(c);
}
END_TEST

START_TEST(foreign_and_damaged)
{
	char err[256];
	struct seen none = { 0 };
	struct store_clog *c, *c2;
	uint64_t seq, end;
	ck_assert_int_eq(store_clog_open(NULL, path, RING, &c, err, sizeof(err)), 0);
	append(c, 5, &seq, &end);
	store_clog_close(c);
	ck_assert_int_eq(store_clog_open(NULL, path2, RING, &c2, err, sizeof(err)), 0);
	store_clog_close(c2);

	/* Copy ring 1's record 1 into ring 2 where ring 2's record 1 goes:
	 * same bytes, other salt: not a record of ring 2. */
	uint8_t blk[STORE_CLOG_HDR + PAY];
	int fd = open(path, O_RDONLY), fd2 = open(path2, O_RDWR);
	ck_assert_int_eq(pread(fd, blk, sizeof(blk), STORE_CLOG_BLOCK), (ssize_t)sizeof(blk));
	ck_assert_int_eq(pwrite(fd2, blk, sizeof(blk), STORE_CLOG_BLOCK), (ssize_t)sizeof(blk));
	close(fd2);
	ck_assert_int_eq(store_clog_open(NULL, path2, 0, &c2, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c2, 0, 0, on_rec, &none), 0);
	store_clog_close(c2);
	ck_assert_int_eq(store_clog_open(NULL, path, 0, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(store_clog_replay(c, 0, 0, on_rec, &none), 1);
	store_clog_close(c);

	/* A damaged header block is refused, not recreated. */
	fd = open(path, O_RDWR);
	ck_assert_int_eq(pwrite(fd, "X", 1, 3), 1);
	close(fd);
	ck_assert_int_eq(store_clog_open(NULL, path, RING, &c, err, sizeof(err)), IOL_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(err, "bad header"));
}
END_TEST

/* An empty log takes a record as large as its whole capacity even when
 * the tail is far from the start (the end it skips holds nothing live). */
START_TEST(empty_log_wraps_large_record)
{
	char err[256];
	struct store_clog *c;
	uint64_t seq, end;
	ck_assert_int_eq(store_clog_open(NULL, path, RING, &c, err, sizeof(err)), 0);
	append(c, 6, &seq, &end); /* tail at 4 KiB + 24 KiB */
	store_clog_trim_to(c, store_clog_pos(c));
	size_t big = RING - STORE_CLOG_BLOCK - STORE_CLOG_HDR; /* the whole capacity */
	uint8_t *p = calloc(1, big);
	ck_assert(store_clog_fits(c, big));
	store_clog_next(c, big, &seq, &end);
	ck_assert_uint_eq(end, RING);
	ck_assert_int_eq(store_clog_append(c, p, big), 0);
	ck_assert_uint_eq(store_clog_used(c), store_clog_capacity(c));
	ck_assert(!store_clog_fits(c, 1));
	free(p);
	store_clog_close(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/store_clog");
	TCase *tc = tcase_create("clog");
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_checked_fixture(tc, fresh, NULL);
	tcase_add_test(tc, order_wrap_torn);
	tcase_add_test(tc, foreign_and_damaged);
	tcase_add_test(tc, empty_log_wraps_large_record);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
