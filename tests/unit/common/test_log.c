/*
 * test_log.c — log.c: level filtering before formatting, the exact line
 * format and its escaping, truncation, whole lines under concurrent writers
 * (read back through a pipe and checked line by line), and request ids.
 */
#include "common/log.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ capture */

static int cap_rd = -1;

/* Send log output into a non-blocking pipe that cap_read() drains. */
static void cap_start(void)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	cap_rd = p[0];
	log_set_fd(p[1]);
}

/* Everything written since the last call, NUL-terminated, in a static
 * buffer ("" when nothing was). */
static const char *cap_read(void)
{
	static char buf[1 << 16];
	size_t len = 0;
	for (;;) {
		ssize_t n = read(cap_rd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static int side_effects;
static int side_effect(void)
{
	return ++side_effects;
}

/* ------------------------------------------------------------ tests */

START_TEST(test_parse_level)
{
	ck_assert_int_eq(log_parse_level("debug"), LOG_LEVEL_DEBUG);
	ck_assert_int_eq(log_parse_level("info"), LOG_LEVEL_INFO);
	ck_assert_int_eq(log_parse_level("WARN"), LOG_LEVEL_WARN);
	ck_assert_int_eq(log_parse_level("warning"), LOG_LEVEL_WARN);
	ck_assert_int_eq(log_parse_level("Error"), LOG_LEVEL_ERROR);
	ck_assert_int_eq(log_parse_level("verbose"), -EINVAL);
	ck_assert_int_eq(log_parse_level(""), -EINVAL);
	ck_assert_int_eq(log_parse_level("info "), -EINVAL);
	ck_assert_int_eq(log_parse_level(NULL), -EINVAL);
	ck_assert_str_eq(log_level_name(LOG_LEVEL_WARN), "warn");
	ck_assert_str_eq(log_level_name((enum log_level)9), "?");
}
END_TEST

START_TEST(test_level_filter)
{
	cap_start();
	ck_assert_int_eq(log_get_level(), LOG_LEVEL_INFO); /* the default */
	log_set_level(LOG_LEVEL_WARN);
	LOG_DEBUG("hidden", "n=%d", side_effect());
	LOG_INFO("hidden", "n=%d", side_effect());
	LOG_INFO_REQ("r1", "hidden", "n=%d", side_effect());
	ck_assert_str_eq(cap_read(), "");
	ck_assert_int_eq(side_effects, 0); /* arguments never evaluated */

	LOG_WARN("shown", "n=%d", side_effect());
	LOG_ERROR("shown");
	const char *out = cap_read();
	ck_assert_ptr_nonnull(strstr(out, " level=warn msg=shown n=1\n"));
	ck_assert_ptr_nonnull(strstr(out, " level=error msg=shown\n"));
	ck_assert_int_eq(side_effects, 1);

	log_set_level(LOG_LEVEL_DEBUG);
	LOG_DEBUG("dbg");
	ck_assert_ptr_nonnull(strstr(cap_read(), " level=debug msg=dbg\n"));
	/* log_write checks the level too */
	log_set_level(LOG_LEVEL_ERROR);
	log_write(LOG_LEVEL_INFO, NULL, "direct", " x=1");
	ck_assert_str_eq(cap_read(), "");
}
END_TEST

START_TEST(test_line_format)
{
	cap_start();
	ck_assert_int_eq(log_set_thread_context("svc=osd.3"), 0);
	time_t before = time(NULL);
	LOG_INFO_REQ("ab12", "put shard", "shard=%d len=%d", 7, 4096);
	time_t after = time(NULL);
	const char *line = cap_read();

	regex_t re;
	ck_assert_int_eq(regcomp(&re,
		"^ts=([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\\.[0-9]{3}Z "
		"level=info svc=osd\\.3 req=ab12 msg=\"put shard\" shard=7 len=4096\n$",
		REG_EXTENDED), 0);
	regmatch_t m[2];
	int rc = regexec(&re, line, 2, m, 0);
	regfree(&re);
	ck_assert_msg(rc == 0, "line does not match: %s", line);

	struct tm tm = { 0 };
	const char *end = strptime(line + m[1].rm_so, "%Y-%m-%dT%H:%M:%S", &tm);
	ck_assert_ptr_eq(end, line + m[1].rm_eo);
	time_t t = timegm(&tm); /* the ts is UTC */
	ck_assert_int_ge(t, before);
	ck_assert_int_le(t, after);

	/* context cleared; no fields, no req */
	ck_assert_int_eq(log_set_thread_context(NULL), 0);
	LOG_WARN("started");
	line = cap_read();
	ck_assert_ptr_nonnull(strstr(line, "Z level=warn msg=started\n"));

	char big[LOG_CONTEXT_MAX + 1];
	memset(big, 'c', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(log_set_thread_context(big), -ENAMETOOLONG);
}
END_TEST

/* The part of the single captured line from " msg=" on. */
static const char *msg_part(void)
{
	const char *out = cap_read();
	const char *p = strstr(out, " msg=");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1); /* one line */
	return p;
}

START_TEST(test_quoting)
{
	cap_start();
	LOG_INFO("plain");
	ck_assert_str_eq(msg_part(), " msg=plain\n");
	LOG_INFO("");
	ck_assert_str_eq(msg_part(), " msg=\"\"\n");
	LOG_INFO("a=b");
	ck_assert_str_eq(msg_part(), " msg=\"a=b\"\n");
	LOG_INFO("say \"hi\"\\ \nnext\tx\x01");
	ck_assert_str_eq(msg_part(), " msg=\"say \\\"hi\\\"\\\\ \\nnext\\tx\\x01\"\n");
	LOG_INFO("ütf-8");
	ck_assert_str_eq(msg_part(), " msg=ütf-8\n");
	/* a peer's request id is escaped like msg */
	LOG_INFO_REQ("x y", "m");
	ck_assert_ptr_nonnull(strstr(cap_read(), " level=info req=\"x y\" msg=m\n"));

	/* LOG_Q for field values; raw newlines in fields cannot split the line */
	LOG_INFO("get", "key=%s bucket=%s", LOG_Q("a b\"c"), LOG_Q("photos"));
	ck_assert_str_eq(msg_part(), " msg=get key=\"a b\\\"c\" bucket=photos\n");
	LOG_INFO("inject", "v=%s", "1\nts=forged level=error\r");
	ck_assert_str_eq(msg_part(), " msg=inject v=1 ts=forged level=error \n");
}
END_TEST

START_TEST(test_log_quote)
{
	char b[16];
	ck_assert_str_eq(log_quote(b, sizeof(b), "abc"), "abc");
	ck_assert_str_eq(log_quote(b, sizeof(b), NULL), "(null)");
	ck_assert_str_eq(log_quote(b, sizeof(b), "a\"b"), "\"a\\\"b\"");
	/* too long: cut, unquoted value just cut, quoted value still closed */
	ck_assert_str_eq(log_quote(b, sizeof(b), "abcdefghijklmnopqrstuvwxyz"),
			 "abcdefghijklmno");
	ck_assert_str_eq(log_quote(b, sizeof(b), "a b c d e f g h i j"), "\"a b c d e f g\"");
	ck_assert_str_eq(log_quote(b, 8, "\n\n\n\n"), "\"\\n\\n\"");
	ck_assert_str_eq(log_quote(b, 1, "x"), "");
}
END_TEST

START_TEST(test_truncation)
{
	cap_start();
	static char big[10000];
	memset(big, 'x', sizeof(big) - 1);
	LOG_INFO("long", "blob=%s", big);
	const char *out = cap_read();
	size_t len = strlen(out);
	ck_assert_uint_eq(len, LOG_LINE_MAX);
	ck_assert_str_eq(out + len - strlen(LOG_TRUNC_MARK "\n"), LOG_TRUNC_MARK "\n");
	ck_assert_ptr_eq(strchr(out, '\n'), out + len - 1);

	/* a long msg is cut inside its quotes, and the line still ends well */
	static char bigmsg[6000];
	memset(bigmsg, ' ', sizeof(bigmsg) - 1);
	LOG_INFO(bigmsg, "after=1");
	out = cap_read();
	len = strlen(out);
	ck_assert_uint_eq(len, LOG_LINE_MAX);
	ck_assert_ptr_null(strstr(out, "after=1"));
	ck_assert_str_eq(out + len - strlen(LOG_TRUNC_MARK "\n"), LOG_TRUNC_MARK "\n");

	/* The boundary: "ts=<24> level=info msg=x f=" is 47 bytes, so 4048
	 * x's make exactly LOG_LINE_MAX with the newline, and one more cuts. */
	big[4048] = '\0';
	LOG_INFO("x", "f=%s", big);
	out = cap_read();
	ck_assert_uint_eq(strlen(out), LOG_LINE_MAX);
	ck_assert_ptr_null(strstr(out, "truncated"));
	ck_assert_str_eq(out + LOG_LINE_MAX - 3, "xx\n");
	big[4048] = 'x';
	big[4049] = '\0';
	LOG_INFO("x", "f=%s", big);
	out = cap_read();
	ck_assert_uint_eq(strlen(out), LOG_LINE_MAX);
	ck_assert_ptr_nonnull(strstr(out, LOG_TRUNC_MARK "\n"));
}
END_TEST

START_TEST(test_errno_preserved)
{
	cap_start();
	errno = EXDEV;
	LOG_ERROR("x", "a=%d", 1);
	ck_assert_int_eq(errno, EXDEV);
	int old = log_set_fd(-1); /* every write fails with EBADF */
	LOG_ERROR("y");
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_int_eq(log_set_fd(old), -1);
}
END_TEST

/* ------------------------------------------------------------ threads */

#define NTHREADS 4
#define NLINES 10000
#define PAD 300

struct reader {
	int fd;
	char *buf;
	size_t len, cap;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	for (;;) {
		if (r->cap - r->len < 65536) {
			r->cap *= 2;
			char *nb = realloc(r->buf, r->cap);
			if (!nb)
				break; /* the line count check then fails */
			r->buf = nb;
		}
		ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (n <= 0)
			break;
		r->len += (size_t)n;
	}
	return NULL;
}

static void *writer_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	char ctx[32], pad[PAD + 1];
	snprintf(ctx, sizeof(ctx), "svc=t%d", t);
	log_set_thread_context(ctx);
	memset(pad, 'a' + t, PAD);
	pad[PAD] = '\0';
	for (int i = 0; i < NLINES; i++)
		LOG_INFO("tick tock", "thread=%d seq=%d pad=%s", t, i, pad);
	return NULL;
}

START_TEST(test_threads_whole_lines)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	struct reader r = { .fd = p[0], .cap = 1 << 20 };
	r.buf = malloc(r.cap);
	pthread_t rt, wt[NTHREADS];
	ck_assert_int_eq(pthread_create(&rt, NULL, reader_main, &r), 0);
	log_set_fd(p[1]);
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&wt[t], NULL, writer_main, (void *)(intptr_t)t), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(wt[t], NULL);
	close(p[1]);
	pthread_join(rt, NULL);
	close(p[0]);

	/* Every line whole and well-formed, and each thread's lines all there
	 * and in its order (one write per line keeps a thread's order). */
	int next[NTHREADS] = { 0 };
	size_t lines = 0;
	char *s = r.buf, *end = r.buf + r.len;
	ck_assert_msg(r.len > 0 && end[-1] == '\n', "output does not end in a newline");
	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		*nl = '\0';
		int t1, t2, seq, off = -1;
		int n = sscanf(s, "ts=%*[0-9T:.Z-] level=info svc=t%d msg=\"tick tock\" "
			       "thread=%d seq=%d pad=%n", &t1, &t2, &seq, &off);
		ck_assert_msg(n == 3 && off > 0, "bad line %zu: %.200s", lines, s);
		ck_assert_int_eq(t1, t2);
		ck_assert_int_ge(t1, 0);
		ck_assert_int_lt(t1, NTHREADS);
		ck_assert_int_eq(seq, next[t1]);
		next[t1]++;
		ck_assert_uint_eq(strlen(s + off), PAD);
		ck_assert_uint_eq(strspn(s + off, (char[]){ (char)('a' + t1), 0 }), PAD);
		lines++;
		s = nl + 1;
	}
	ck_assert_uint_eq(lines, NTHREADS * NLINES);
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(next[t], NLINES);
	free(r.buf);
}
END_TEST

/* ------------------------------------------------------------ request ids */

#define IDS_PER_THREAD 25000
static char ids[NTHREADS * IDS_PER_THREAD][LOG_REQ_ID_LEN + 1];

static void *id_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < IDS_PER_THREAD; i++)
		log_new_request_id(ids[t * IDS_PER_THREAD + i]);
	return NULL;
}

static int cmp_id(const void *a, const void *b)
{
	return memcmp(a, b, LOG_REQ_ID_LEN + 1);
}

START_TEST(test_request_ids_unique)
{
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, id_main, (void *)(intptr_t)t), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	size_t n = NTHREADS * IDS_PER_THREAD;
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(strlen(ids[i]), LOG_REQ_ID_LEN);
		ck_assert_uint_eq(strspn(ids[i], "0123456789abcdef"), LOG_REQ_ID_LEN);
	}
	qsort(ids, n, sizeof(ids[0]), cmp_id);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(strcmp(ids[i - 1], ids[i]) != 0, "duplicate id %s", ids[i]);
}
END_TEST

START_TEST(test_request_ids_fork)
{
	char a[LOG_REQ_ID_LEN + 1], b[LOG_REQ_ID_LEN + 1];
	log_new_request_id(a); /* seeded before the fork */
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		log_new_request_id(b);
		_exit(write(p[1], b, LOG_REQ_ID_LEN) == LOG_REQ_ID_LEN ? 0 : 1);
	}
	log_new_request_id(a);
	int st;
	waitpid(pid, &st, 0);
	ck_assert_int_eq(read(p[0], b, LOG_REQ_ID_LEN), LOG_REQ_ID_LEN);
	b[LOG_REQ_ID_LEN] = '\0';
	ck_assert_str_ne(a, b); /* the child does not repeat the parent's next id */
	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("format");
	tcase_add_test(tc, test_parse_level);
	tcase_add_test(tc, test_level_filter);
	tcase_add_test(tc, test_line_format);
	tcase_add_test(tc, test_quoting);
	tcase_add_test(tc, test_log_quote);
	tcase_add_test(tc, test_truncation);
	tcase_add_test(tc, test_errno_preserved);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads_whole_lines);
	tcase_add_test(tc, test_request_ids_unique);
	tcase_add_test(tc, test_request_ids_fork);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
