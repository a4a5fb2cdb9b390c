/*
 * test_raftcrc.c — meta/raftcrc.c: its byteCrc32 equals libraft's (a
 * table CRC written here, MSB first, polynomial 0x04C11DB7, no inversion)
 * for lengths 0..70,000, offsets 0..63, zero and random inits and chained
 * calls; libraft's own calls in this binary and in iolake-aio/iolake-meta
 * are ours, not the stock loop; and the log format is unchanged both ways:
 * a raft_uv log written by the stock shared libraft (tests/tools/
 * raft-entries) loads here byte for byte, one written here loads there,
 * and a flipped byte is refused by both (the checksums are really read).
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "meta/raftcrc.h"
#include "tests/lib/raft_log.h"
#include "tests/lib/scratch.h"

#define LOG_ENTRIES 200

static uint32_t table[256];

/* libiberty's crc32 (libraft's src/byte.c): the table built bit by bit. */
static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i << 24;
		for (int k = 0; k < 8; k++)
			c = c & 0x80000000u ? (c << 1) ^ 0x04C11DB7u : c << 1;
		table[i] = c;
	}
}

static uint32_t ref_crc(const unsigned char *p, size_t n, uint32_t crc)
{
	while (n--)
		crc = (crc << 8) ^ table[((crc >> 24) ^ *p++) & 255];
	return crc;
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

#define BUF_BYTES (70000 + 64)
static unsigned char buf[BUF_BYTES];

static void fill(void)
{
	table_init();
	for (size_t i = 0; i < BUF_BYTES; i++)
		buf[i] = (unsigned char)(rnd() >> 32);
}

START_TEST(test_check_value)
{
	/* CRC-32/MPEG-2 (the same CRC started at ~0): its catalogue value,
	 * independent of the reference above. */
	ck_assert_uint_eq(byteCrc32("123456789", 9, 0xFFFFFFFFu), 0x0376E6E7u);
	table_init();
	ck_assert_uint_eq(ref_crc((const unsigned char *)"123456789", 9, 0xFFFFFFFFu),
			  0x0376E6E7u);
	ck_assert_uint_eq(byteCrc32(buf, 0, 0x12345678u), 0x12345678u);
}
END_TEST

START_TEST(test_matches_reference)
{
	fill();
	for (int t = 0; t < 4000; t++) {
		size_t off = rnd() % 64;
		/* Half short (headers, tails under the 16-byte folding width),
		 * half anywhere up to 70,000. */
		size_t len = t % 2 ? rnd() % 70001 : rnd() % 300;
		uint32_t init = t % 3 == 0 ? 0 : (uint32_t)rnd();
		uint32_t want = ref_crc(buf + off, len, init);
		uint32_t got = byteCrc32(buf + off, len, init);
		ck_assert_msg(got == want, "len %zu off %zu init %08x: %08x, want %08x", len,
			      off, init, got, want);
	}
}
END_TEST

START_TEST(test_chained)
{
	fill();
	for (int t = 0; t < 1000; t++) {
		size_t off = rnd() % 64, len = rnd() % 70001;
		size_t cut = len ? rnd() % (len + 1) : 0;
		uint32_t init = t % 2 ? 0 : (uint32_t)rnd();
		uint32_t a = byteCrc32(buf + off, cut, init);
		uint32_t ab = byteCrc32(buf + off + cut, len - cut, a);
		ck_assert_uint_eq(ab, byteCrc32(buf + off, len, init));
		ck_assert_uint_eq(ab, ref_crc(buf + off, len, init));
	}
}
END_TEST

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

/* <build> from <build>/tests/unit/meta/test_raftcrc. */
static void build_dir(char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert(k > 0);
	self[k] = '\0';
	for (int up = 0; up < 4; up++) {
		char *s = strrchr(self, '/');
		if (s)
			*s = '\0';
	}
	ck_assert((size_t)snprintf(out, n, "%s", self) < n);
}

/* The type nm gives symbol sym in a binary ('T', 't' local, 'W' weak...),
 * 0 when absent. */
static char nm_type(const char *bin, const char *sym)
{
	char cmd[2 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "nm -P '%s' 2>/dev/null", bin);
	FILE *f = popen(cmd, "r");
	ck_assert(f != NULL);
	char line[512], type = 0;
	size_t n = strlen(sym);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, sym, n) == 0 && line[n] == ' ')
			type = line[n + 1];
	pclose(f);
	return type;
}

START_TEST(test_libraft_calls_ours)
{
	/* This binary: raft_uv's appends and loads count here. */
	char dir[PATH_MAX];
	test_scratch_path(dir, sizeof(dir), "raftcrc-calls-%d", (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	uint64_t before = raftcrc_calls();
	char err[256] = "";
	ck_assert_msg(raft_log_write(dir, 20, 7, err, sizeof(err)) == 0, "%s", err);
	uint64_t written = raftcrc_calls();
	ck_assert_uint_ge(written - before, 20);   /* two per append, one per snapshot */
	ck_assert_msg(raft_log_verify(dir, 20, 7, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_gt(raftcrc_calls(), written);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	/* The services: the linker took meta/raftcrc.o, whose strong
	 * byteCrc32 then beats the archive's weak one. Without it (no -u in
	 * the Makefile) the binary still has a byteCrc32, libraft's, and no
	 * raftcrc_calls. nm says 't' for ours: libraft's objects declare the
	 * symbol hidden, so the link makes it local. */
	char b[PATH_MAX], bin[PATH_MAX + 16];
	build_dir(b, sizeof(b));
	const char *names[] = { "iolake-aio", "iolake-meta" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(bin, sizeof(bin), "%s/%s", b, names[i]);
		ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
		char t = nm_type(bin, "raftcrc_calls"), c = nm_type(bin, "byteCrc32");
		ck_assert_msg(t == 'T', "%s: no meta/raftcrc.o (raftcrc_calls '%c')", bin,
			      t ? t : '-');
		ck_assert_msg(c == 't' || c == 'T', "%s: byteCrc32 is '%c', not a strong one",
			      bin, c ? c : '-');
	}
}
END_TEST

/* Run the stock tool; its exit status. */
static int tool(const char *verb, const char *dir, unsigned n, unsigned seed)
{
	char b[PATH_MAX], exe[PATH_MAX + 32], cmd[3 * PATH_MAX];
	build_dir(b, sizeof(b));
	snprintf(exe, sizeof(exe), "%s/tests/tools/raft-entries", b);
	ck_assert_msg(access(exe, X_OK) == 0, "%s not built", exe);
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' %u %u", exe, verb, dir, n, seed);
	int st = system(cmd);
	ck_assert(st != -1 && WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* raft_log_verify in a child: libraft 0.15 leaks the entries of a load
 * it refuses (extendEntries), which LeakSanitizer would count against
 * this test; the child leaves with _exit. 0 when the log verified. */
static int verify_in_child(const char *dir, unsigned n, uint32_t seed)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256];
		_exit(raft_log_verify(dir, n, seed, err, sizeof(err)) ? 1 : 0);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Flip one byte in the middle of the first closed segment's data. */
static void corrupt_closed_segment(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert(d != NULL);
	struct dirent *de;
	char path[2 * PATH_MAX] = "";
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "0000000000000001-", 17) == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	closedir(d);
	ck_assert_msg(path[0], "no closed segment from index 1 in %s", dir);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	unsigned char c;
	off_t at = st.st_size / 2;
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

START_TEST(test_format_both_ways)
{
	char dir[PATH_MAX], err[256] = "";
	int pid = (int)getpid();

	/* Stock writes, we load. */
	test_scratch_path(dir, sizeof(dir), "raftcrc-stock-%d", pid);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(tool("write", dir, LOG_ENTRIES, 11), 0);
	ck_assert_msg(raft_log_verify(dir, LOG_ENTRIES, 11, err, sizeof(err)) == 0, "%s", err);
	/* The check can fail: another seed's content does not match. */
	ck_assert_int_eq(verify_in_child(dir, LOG_ENTRIES, 12), 1);
	/* ... and the checksums are read: a flipped byte is refused by both. */
	corrupt_closed_segment(dir);
	ck_assert_int_eq(verify_in_child(dir, LOG_ENTRIES, 11), 1);
	ck_assert_int_eq(tool("verify", dir, LOG_ENTRIES, 11), 1);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);

	/* We write, stock loads. */
	test_scratch_path(dir, sizeof(dir), "raftcrc-ours-%d", pid);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_msg(raft_log_write(dir, LOG_ENTRIES, 21, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(tool("verify", dir, LOG_ENTRIES, 21), 0);
	ck_assert_int_eq(tool("verify", dir, LOG_ENTRIES, 22), 1);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("raftcrc");
	TCase *tc = tcase_create("raftcrc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_check_value);
	tcase_add_test(tc, test_matches_reference);
	tcase_add_test(tc, test_chained);
	tcase_add_test(tc, test_libraft_calls_ours);
	tcase_add_test(tc, test_format_both_ways);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
