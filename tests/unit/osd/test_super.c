/*
 * test_super.c — the superblock refuses what it must: missing path (and
 * creates nothing), unformatted, foreign, newer level, bad crc; formats
 * only when asked.
 */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "osd/store/super.h"
#include "tests/lib/scratch.h"

#define SIZE (8u << 20)

static char path[128];
static struct store_super_expect me = { .cluster_id = { 1, 2, 3, 4 }, .osd_id = 7 };

/* The path is chosen once in the runner (unchecked fixture), so the
 * runner's teardown removes it even when a forked test failed. */
static void setup_once(void)
{
	test_scratch_path(path, sizeof(path), "iolake-test-super-%d", (int)getpid());
}

static void setup(void)
{
	unlink(path);
}

static void teardown(void)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.creating", path);
	unlink(tmp);
	unlink(path);
}

static void make_sparse(uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static int try_open(const struct store_super_expect *e, bool format, bool force,
		    uint64_t create, struct store_super *sb, bool *formatted, char *err)
{
	struct store_super_flags f = { .format = format, .force = force, .create_size = create };
	int fd = -1;
	int rc = store_super_open(NULL, path, e, &f, &fd, sb, formatted, err, 256);
	if (rc == 0) {
		ck_assert_int_ge(fd, 0);
		if (*formatted) {
			/* Nothing is on disk before the commit. */
			if (sb->created)
				ck_assert_int_eq(access(path, F_OK), -1);
			ck_assert_int_eq(store_super_commit(NULL, fd, path, sb, err, 256), 0);
		}
		close(fd);
	}
	return rc;
}

START_TEST(round_trip)
{
	char err[256];
	struct store_super sb, sb2;
	bool fmt;
	/* Created by size: counts as asked to format. */
	ck_assert_int_eq(try_open(&me, false, false, SIZE, &sb, &fmt, err), 0);
	ck_assert(fmt);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, SIZE);
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, SIZE); /* preallocated */
	ck_assert_uint_eq(sb.osd_id, 7);
	ck_assert_uint_eq(sb.device_size, SIZE);
	ck_assert_uint_eq(sb.data_off, STORE_DATA_OFF);
	ck_assert_uint_eq(sb.data_blocks, (SIZE - STORE_DATA_OFF) / 4096);
	/* Reopen: same fields, no format. */
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb2, &fmt, err), 0);
	ck_assert(!fmt);
	sb.created = false;
	ck_assert_mem_eq(&sb, &sb2, sizeof(sb));
	/* format (without force) on our own device never rewrites it. */
	ck_assert_int_eq(try_open(&me, true, false, 0, &sb2, &fmt, err), 0);
	ck_assert(!fmt);
	ck_assert_mem_eq(sb.format_uuid, sb2.format_uuid, 16);
}
END_TEST

START_TEST(sparse_create)
{
	/* iolake-aio's OSD files: created by size but sparse, so six of them
	 * at --osd-size 64G fit a laptop disk. Only the superblock and what
	 * shards get written take space. */
	char err[256];
	struct store_super sb;
	bool fmt = false;
	struct store_super_flags f = { .create_size = 64u << 20, .create_sparse = true };
	int fd = -1;
	ck_assert_int_eq(store_super_open(NULL, path, &me, &f, &fd, &sb, &fmt, err, sizeof(err)), 0);
	ck_assert(fmt);
	ck_assert_int_eq(store_super_commit(NULL, fd, path, &sb, err, sizeof(err)), 0);
	close(fd);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 64u << 20);
	ck_assert_uint_lt((uint64_t)st.st_blocks * 512, 1u << 20);
	ck_assert_uint_eq(sb.data_blocks, ((64u << 20) - STORE_DATA_OFF) / 4096);
}
END_TEST

START_TEST(missing_path_refuses)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	ck_assert_int_eq(try_open(&me, true, true, 0, &sb, &fmt, err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_int_eq(access(path, F_OK), -1); /* not created */
	/* A missing /dev node is never created, even with a size. */
	const char *dev = "/dev/iolake-no-such-disk";
	struct store_super_flags f = { .format = true, .create_size = SIZE };
	int fd;
	ck_assert_int_eq(store_super_open(NULL, dev, &me, &f, &fd, &sb, &fmt, err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, dev));
	ck_assert_int_eq(access(dev, F_OK), -1);
}
END_TEST

/* A creation that crashed before its commit leaves no file at path; the
 * next open creates it again. */
START_TEST(interrupted_create_retries)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	struct store_super_flags f = { .create_size = SIZE };
	int fd;
	ck_assert_int_eq(store_super_open(NULL, path, &me, &f, &fd, &sb, &fmt, err, sizeof(err)), 0);
	ck_assert(fmt && sb.created);
	close(fd); /* "crash": no commit */
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), -ENOENT);
	ck_assert_int_eq(try_open(&me, false, false, SIZE, &sb, &fmt, err), 0);
	ck_assert(fmt);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), 0);
	ck_assert(!fmt);
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.creating", path);
	ck_assert_int_eq(access(tmp, F_OK), -1);
}
END_TEST

START_TEST(unformatted_refuses)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	make_sparse(SIZE);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), IOL_ENOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err, "no IOLake superblock"));
	/* Still unformatted after the refusal. */
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), IOL_ENOT_FOUND);
	ck_assert_int_eq(try_open(&me, true, false, 0, &sb, &fmt, err), 0);
	ck_assert(fmt);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), 0);
}
END_TEST

START_TEST(foreign_refuses)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	make_sparse(SIZE);
	ck_assert_int_eq(try_open(&me, true, false, 0, &sb, &fmt, err), 0);
	struct store_super_expect other = me;
	other.osd_id = 9;
	ck_assert_int_eq(try_open(&other, false, false, 0, &sb, &fmt, err), IOL_ECONFLICT);
	ck_assert_ptr_nonnull(strstr(err, "osd 7"));
	ck_assert_ptr_nonnull(strstr(err, "osd 9"));
	ck_assert_int_eq(try_open(&other, true, false, 0, &sb, &fmt, err), IOL_ECONFLICT);
	struct store_super_expect oc = me;
	oc.cluster_id[15] = 0xee;
	ck_assert_int_eq(try_open(&oc, false, false, 0, &sb, &fmt, err), IOL_ECONFLICT);
	ck_assert_ptr_nonnull(strstr(err, "010203040000000000000000000000ee"));
	/* format + force takes it over. */
	ck_assert_int_eq(try_open(&other, true, true, 0, &sb, &fmt, err), 0);
	ck_assert(fmt);
	ck_assert_uint_eq(sb.osd_id, 9);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), IOL_ECONFLICT);
}
END_TEST

static void rewrite_block(void (*mutate)(struct store_super_disk *d))
{
	struct store_super_disk d;
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &d, sizeof(d), 0), (ssize_t)sizeof(d));
	mutate(&d);
	ck_assert_int_eq(pwrite(fd, &d, sizeof(d), 0), (ssize_t)sizeof(d));
	close(fd);
}

static void bump_level(struct store_super_disk *d)
{
	d->format_level = htole32(STORE_SUPER_LEVEL + 1);
	d->crc = 0;
	d->crc = htole32(crc32c(0, d, sizeof(*d)));
}

static void flip_byte(struct store_super_disk *d)
{
	d->cluster_id[3] ^= 0x40; /* crc not updated */
}

START_TEST(newer_level_refuses)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	ck_assert_int_eq(try_open(&me, false, false, SIZE, &sb, &fmt, err), 0);
	rewrite_block(bump_level);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), IOL_EBAD_FORMAT);
	ck_assert_ptr_nonnull(strstr(err, "newer"));
	ck_assert_int_eq(try_open(&me, true, true, 0, &sb, &fmt, err), IOL_EBAD_FORMAT);
}
END_TEST

START_TEST(bad_crc_refuses)
{
	char err[256];
	struct store_super sb;
	bool fmt;
	ck_assert_int_eq(try_open(&me, false, false, SIZE, &sb, &fmt, err), 0);
	rewrite_block(flip_byte);
	ck_assert_int_eq(try_open(&me, false, false, 0, &sb, &fmt, err), IOL_ECORRUPT);
	ck_assert_int_eq(try_open(&me, true, false, 0, &sb, &fmt, err), IOL_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(err, "corrupt"));
}
END_TEST

START_TEST(codec_pure)
{
	struct store_super sb = { .format_level = 1, .osd_id = 3, .device_size = SIZE,
				  .data_off = STORE_DATA_OFF,
				  .data_blocks = (SIZE - STORE_DATA_OFF) / 4096 };
	sb.cluster_id[0] = 0xab;
	struct store_super_disk d;
	store_super_encode(&sb, &d);
	struct store_super out;
	ck_assert_int_eq(store_super_decode(&d, &out), 0);
	ck_assert_mem_eq(&sb, &out, sizeof(sb));
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(store_super_decode(&d, &out), IOL_ENOT_FOUND);
	/* Impossible geometry with a valid crc is still corrupt. */
	sb.data_blocks = SIZE; /* more than fits */
	store_super_encode(&sb, &d);
	ck_assert_int_eq(store_super_decode(&d, &out), IOL_ECORRUPT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/super");
	TCase *tc = tcase_create("super");
	tcase_add_unchecked_fixture(tc, setup_once, teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, sparse_create);
	tcase_add_test(tc, missing_path_refuses);
	tcase_add_test(tc, unformatted_refuses);
	tcase_add_test(tc, interrupted_create_retries);
	tcase_add_test(tc, foreign_refuses);
	tcase_add_test(tc, newer_level_refuses);
	tcase_add_test(tc, bad_crc_refuses);
	tcase_add_test(tc, codec_pure);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
