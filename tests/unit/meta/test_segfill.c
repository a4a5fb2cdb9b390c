/*
 * test_segfill.c — meta/segfill.c: posix_fallocate(3) is this
 * executable's; in a registered directory on a disk filesystem the range
 * it adds is written (no unwritten extent left, FIEMAP), reads as zeros,
 * keeps the bytes below the old end, and takes an O_DIRECT RWF_NOWAIT
 * overwrite that a fallocated file refuses; outside registered
 * directories, after unregistering and on tmpfs it is libc's, unchanged.
 *
 * The disk cases need a filesystem whose fallocate leaves unwritten
 * extents (ext4, xfs); they run in a directory under /var/tmp, removed at
 * the end, and are skipped with a message where /var/tmp is not one.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "meta/segfill.h"
#include "tests/lib/scratch.h"

#define XFS_MAGIC 0x58465342

static char disk[128];   /* mkdtemp under /var/tmp; "" when skipped */

static bool disk_fs_ok(void)
{
	struct statfs s;
	return statfs("/var/tmp", &s) == 0 &&
	       (s.f_type == EXT4_SUPER_MAGIC || s.f_type == XFS_MAGIC);
}

static void setup(void)
{
	disk[0] = '\0';
	if (!disk_fs_ok())
		return;
	snprintf(disk, sizeof(disk), "/var/tmp/iol-segfill.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(disk));
}

static void teardown(void)
{
	if (!disk[0])
		return;
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", disk);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", disk);
}

/* A subdirectory of the disk dir (made). */
static void subdir(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", disk, name);
	ck_assert_int_eq(mkdir(out, 0700), 0);
}

static int create(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Extents of fd's file, and how many of them are unwritten. */
static void extents(int fd, unsigned *total, unsigned *unwritten)
{
	size_t sz = sizeof(struct fiemap) + 256 * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, sz);
	ck_assert_ptr_nonnull(fm);
	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = 256;
	ck_assert_int_eq(ioctl(fd, FS_IOC_FIEMAP, fm), 0);
	*total = fm->fm_mapped_extents;
	*unwritten = 0;
	for (unsigned i = 0; i < fm->fm_mapped_extents; i++)
		if (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			(*unwritten)++;
	free(fm);
}

/* raft_uv's append as it reaches the kernel: an O_DIRECT write of the
 * block it wrote last (the tail it rewrites) and of the next one,
 * submitted with RWF_NOWAIT on a descriptor opened O_DSYNC, as raft_uv's
 * segments are. The previous append is made
 * first (a plain write of the block at `off`). Returns the NOWAIT
 * write's result: bytes, or -EAGAIN when the filesystem would wait (on
 * ext4: the range is not all one written mapping). */
static long nowait_append(const char *dir, const char *name, long long off)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_DIRECT | O_DSYNC | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	void *buf;
	ck_assert_int_eq(posix_memalign(&buf, 4096, 8192), 0);
	memset(buf, 0x5a, 8192);
	ck_assert_int_eq(pwrite(fd, buf, 4096, off), 4096);
	aio_context_t ctx = 0;
	ck_assert_int_eq(syscall(SYS_io_setup, 1, &ctx), 0);
	struct iocb cb = { 0 };
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = 8192;
	cb.aio_offset = off;
	cb.aio_rw_flags = RWF_NOWAIT;
	struct iocb *cbs[1] = { &cb };
	long rc = syscall(SYS_io_submit, ctx, 1, cbs);
	long res;
	if (rc < 0) {
		res = -errno;
	} else {
		struct io_event ev;
		ck_assert_int_eq(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL), 1);
		res = (long)ev.res;
	}
	syscall(SYS_io_destroy, ctx);
	free(buf);
	close(fd);
	return res;
}

static bool all_zero(int fd, off_t from, off_t to)
{
	static char buf[65536];
	for (off_t at = from; at < to;) {
		size_t n = (size_t)(to - at) < sizeof(buf) ? (size_t)(to - at) : sizeof(buf);
		ssize_t r = pread(fd, buf, n, at);
		ck_assert_int_gt(r, 0);
		for (ssize_t i = 0; i < r; i++)
			if (buf[i])
				return false;
		at += r;
	}
	return true;
}

START_TEST(test_symbol_is_ours)
{
	ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "posix_fallocate"), (void *)posix_fallocate);
	/* libc's errors come back unchanged. */
	ck_assert_int_eq(posix_fallocate(-1, 0, 4096), EBADF);
	char dir[256];
	test_scratch_path(dir, sizeof(dir), "segfill-badarg");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	int fd = create(dir, "f");
	ck_assert_int_eq(posix_fallocate(fd, 0, -1), EINVAL);
	close(fd);
}
END_TEST

START_TEST(test_registered_is_written)
{
	if (!disk[0]) {
		fprintf(stderr, "SKIP test_registered_is_written: /var/tmp is not ext4/xfs\n");
		return;
	}
	char dir[256], other[256];
	subdir(dir, sizeof(dir), "w-raft");
	subdir(other, sizeof(other), "w-state");
	ck_assert_int_eq(segfill_register_dir(dir), 0);
	ck_assert_int_eq(segfill_register_dir(dir), 0);   /* idempotent */
	struct segfill_stats before, after;
	segfill_get_stats(&before);

	int fd = create(dir, "open-1");
	int ctl = create(other, "open-1");   /* same name, unregistered dir */
	ck_assert_int_eq(posix_fallocate(fd, 0, 8 << 20), 0);
	ck_assert_int_eq(posix_fallocate(ctl, 0, 8 << 20), 0);

	unsigned total, unwritten;
	extents(ctl, &total, &unwritten);
	ck_assert_uint_gt(unwritten, 0);   /* what the fill is for: the control */
	extents(fd, &total, &unwritten);
	ck_assert_uint_gt(total, 0);
	ck_assert_uint_eq(unwritten, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 8 << 20);
	ck_assert(all_zero(fd, 0, 8 << 20));

	segfill_get_stats(&after);
	ck_assert_uint_eq(after.files, before.files + 1);
	ck_assert_uint_eq(after.bytes, before.bytes + (8u << 20));
	ck_assert_uint_eq(after.failed, before.failed);

	/* The point: raft_uv's NOWAIT submit is taken as an overwrite. (The
	 * reads above cached pages, which alone make NOWAIT refuse: drop
	 * them, as raft_uv never reads a segment it appends to.) */
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	ck_assert_int_eq(nowait_append(dir, "open-1", 8192), 8192);
	ck_assert_int_eq(nowait_append(other, "open-1", 8192), -EAGAIN);
	close(fd);
	close(ctl);
}
END_TEST

START_TEST(test_keeps_old_bytes)
{
	if (!disk[0]) {
		fprintf(stderr, "SKIP test_keeps_old_bytes: /var/tmp is not ext4/xfs\n");
		return;
	}
	char dir[256];
	subdir(dir, sizeof(dir), "k-raft");
	ck_assert_int_eq(segfill_register_dir(dir), 0);
	int fd = create(dir, "grow");
	char pat[10000];
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (char)(i * 31 + 7) | 1;   /* never zero */
	ck_assert_int_eq(pwrite(fd, pat, sizeof(pat), 0), (ssize_t)sizeof(pat));
	ck_assert_int_eq(fsync(fd), 0);
	struct segfill_stats before, after;
	segfill_get_stats(&before);
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	segfill_get_stats(&after);
	/* From the old end rounded up to a block, to the new end. */
	ck_assert_uint_eq(after.bytes - before.bytes, (1u << 20) - 12288);

	char back[sizeof(pat)];
	ck_assert_int_eq(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert_int_eq(memcmp(back, pat, sizeof(pat)), 0);
	ck_assert(all_zero(fd, sizeof(pat), 1 << 20));
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 1 << 20);

	/* A range inside the file adds nothing: nothing is written. */
	ck_assert_int_eq(posix_fallocate(fd, 4096, 65536), 0);
	struct segfill_stats again;
	segfill_get_stats(&again);
	ck_assert_uint_eq(again.files, after.files);
	ck_assert_int_eq(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert_int_eq(memcmp(back, pat, sizeof(pat)), 0);
	close(fd);
}
END_TEST

START_TEST(test_unregister)
{
	if (!disk[0]) {
		fprintf(stderr, "SKIP test_unregister: /var/tmp is not ext4/xfs\n");
		return;
	}
	char dir[256], deeper[300];
	subdir(dir, sizeof(dir), "u-raft");
	ck_assert_int_eq(segfill_register_dir(dir), 0);
	/* Below a registered dir is not in it. */
	snprintf(deeper, sizeof(deeper), "%s/sub", dir);
	ck_assert_int_eq(mkdir(deeper, 0700), 0);
	int fd = create(deeper, "open-1");
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	unsigned total, unwritten;
	extents(fd, &total, &unwritten);
	ck_assert_uint_gt(unwritten, 0);
	close(fd);

	segfill_unregister_dir(dir);
	fd = create(dir, "open-2");
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	extents(fd, &total, &unwritten);
	ck_assert_uint_gt(unwritten, 0);
	close(fd);
}
END_TEST

START_TEST(test_tmpfs_passes_through)
{
	char dir[256];
	test_scratch_path(dir, sizeof(dir), "segfill-tmpfs");
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	struct statfs s;
	ck_assert_int_eq(statfs(dir, &s), 0);
	if (s.f_type != TMPFS_MAGIC) {
		fprintf(stderr, "SKIP test_tmpfs_passes_through: scratch is not tmpfs\n");
		return;
	}
	ck_assert_int_eq(segfill_register_dir(dir), 0);
	struct segfill_stats before, after;
	segfill_get_stats(&before);
	int fd = create(dir, "open-1");
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	segfill_get_stats(&after);
	ck_assert_uint_eq(after.skipped, before.skipped + 1);
	ck_assert_uint_eq(after.files, before.files);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, 1 << 20);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("segfill");
	TCase *tc = tcase_create("core");
	/* Once, in the runner's process: removed even when a test fails. */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_symbol_is_ours);
	tcase_add_test(tc, test_registered_is_written);
	tcase_add_test(tc, test_keeps_old_bytes);
	tcase_add_test(tc, test_unregister);
	tcase_add_test(tc, test_tmpfs_passes_through);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);   /* each test in a fresh process */
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
