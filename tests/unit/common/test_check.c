/*
 * test_check.c — common/check.h: IOL_ASSERT aborts with one log line that
 * names the check; IOL_DEBUG_ASSERT is evaluated only in debug builds;
 * IOL_CHECK_IF is an expression, counts every hit and logs at most
 * IOL_CHECK_LOG_MAX lines per site.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/check.h"
#include "common/log.h"
#include "common/metrics.h"

/* Log into a pipe; return what was written so far (NUL-terminated). */
static int log_pipe[2];
static char logged[65536];

static void capture_log(void)
{
	ck_assert_int_eq(pipe(log_pipe), 0);
	ck_assert_int_ge(log_set_fd(log_pipe[1]), 0);
}

static const char *read_log(void)
{
	close(log_pipe[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(logged) - 1 &&
	       (r = read(log_pipe[0], logged + n, sizeof(logged) - 1 - n)) > 0)
		n += (size_t)r;
	logged[n] = 0;
	return logged;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

START_TEST(assert_holds)
{
	int blocks = 8;
	IOL_ASSERT(blocks == 8);
	IOL_ASSERT(blocks > 0 && blocks < 16);
}
END_TEST

/* The forked child aborts: Check sees SIGABRT. */
START_TEST(assert_aborts)
{
	int committed = 3, released = 4;
	IOL_ASSERT(committed >= released);
	ck_abort_msg("IOL_ASSERT returned");
}
END_TEST

/* The line before the abort names the check, the file and the function:
 * run the failing assertion in a child and read its log. */
START_TEST(assert_logs_the_check)
{
	capture_log();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int seq = 7, next_seq = 7;
		IOL_ASSERT(seq < next_seq);
		_exit(0);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	const char *log = read_log();
	ck_assert_msg(strstr(log, "level=error"), "log: %s", log);
	ck_assert_msg(strstr(log, "assertion failed"), "log: %s", log);
	ck_assert_msg(strstr(log, "seq < next_seq"), "log: %s", log);
	ck_assert_msg(strstr(log, "test_check.c:"), "log: %s", log);
	ck_assert_msg(strstr(log, "func=assert_logs_the_check"), "log: %s", log);
}
END_TEST

START_TEST(debug_assert_tier)
{
	int evaluated = 0;
	IOL_DEBUG_ASSERT(++evaluated == 1);
#ifdef IOLAKE_DEBUG
	ck_assert_int_eq(evaluated, 1);
#else
	ck_assert_int_eq(evaluated, 0); /* compiled, never run */
#endif
}
END_TEST

#ifdef IOLAKE_DEBUG
START_TEST(debug_assert_aborts_in_debug)
{
	IOL_DEBUG_ASSERT(1 + 1 == 3);
	ck_abort_msg("IOL_DEBUG_ASSERT returned in a debug build");
}
END_TEST
#endif

static bool hit_site(int v)
{
	return IOL_CHECK_IF(v < 0);
}

START_TEST(check_if_counts_and_limits_its_lines)
{
	capture_log();
	uint64_t before = iol_check_failures();
	ck_assert(!hit_site(1));
	ck_assert_uint_eq(iol_check_failures(), before);
	for (int i = 0; i < 25; i++)
		ck_assert(hit_site(-1));
	ck_assert_uint_eq(iol_check_failures(), before + 25);
	/* A second site has its own line budget. */
	int len = 5000;
	if (IOL_CHECK_IF(len > 4096))
		len = 4096;
	ck_assert_int_eq(len, 4096);
	ck_assert_uint_eq(iol_check_failures(), before + 26);

	const char *log = read_log();
	ck_assert_int_eq(count(log, "check=\"v < 0\""), IOL_CHECK_LOG_MAX);
	ck_assert_int_eq(count(log, "no more lines from this site"), 1);
	ck_assert_int_eq(count(log, "check=\"len > 4096\""), 1);
	ck_assert_int_eq(count(log, "level=warn"), IOL_CHECK_LOG_MAX + 1);
}
END_TEST

START_TEST(check_metric_renders)
{
	struct metrics_registry *reg = metrics_registry_new();
	ck_assert_ptr_nonnull(reg);
	ck_assert_int_eq(iol_check_register_metrics(reg), 0);
	(void)IOL_CHECK_IF(reg != NULL);
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(metrics_render(reg, &text, &len), 0);
	char want[64];
	snprintf(want, sizeof(want), "iolake_check_failures_total %llu",
		 (unsigned long long)iol_check_failures());
	ck_assert_msg(strstr(text, want), "%s", text);
	free(text);
	metrics_registry_free(reg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("check");
	tcase_add_test(tc, assert_holds);
	tcase_add_test_raise_signal(tc, assert_aborts, SIGABRT);
	tcase_add_test(tc, assert_logs_the_check);
	tcase_add_test(tc, debug_assert_tier);
#ifdef IOLAKE_DEBUG
	tcase_add_test_raise_signal(tc, debug_assert_aborts_in_debug, SIGABRT);
#endif
	tcase_add_test(tc, check_if_counts_and_limits_its_lines);
	tcase_add_test(tc, check_metric_renders);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
