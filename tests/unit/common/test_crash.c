/*
 * test_crash.c — the crash report (common/crash.h): a child installs it
 * and crashes (a NULL write, abort(), a stack overflow); its stderr must
 * hold the report (signal, address, a stack of frames) and the child must
 * still die of that very signal (the default action, a core where allowed).
 * Skipped under AddressSanitizer, whose handlers the report leaves alone.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crash.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef UNDER_ASAN
static const int under_asan = 1;   /* crash_report_install does nothing */
#else
static const int under_asan = 0;
#endif

enum how { NULL_WRITE, ABORT, OVERFLOW };

static volatile int *volatile nowhere;

static volatile int forever = 1;

static int recurse(int n)
{
	volatile char pad[4096];
	pad[0] = (char)n;
	return forever ? recurse(n + 1) + pad[0] : 0;
}

/* Run a child that crashes HOW with stderr into a pipe; return what it
 * wrote (static buffer) and its wait status in *status. */
static const char *crash_child(enum how how, int *status)
{
	static char out[65536];
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		if (crash_report_install("test_crash"))
			_exit(99);
		if (how == NULL_WRITE)
			*nowhere = 1;
		else if (how == ABORT)
			abort();
		else
			_exit(recurse(0));
		_exit(98);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while ((r = read(p[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, status, 0), pid);
	return out;
}

/* Crash a child HOW: its report names SIGNAME and it died of SIG.
 * Returns the report (static). */
static const char *check_crash(enum how how, const char *signame, int sig)
{
	int st;
	const char *out = crash_child(how, &st);
	char want[64];
	snprintf(want, sizeof(want), "signal=%s ", signame);
	ck_assert_msg(strstr(out, "level=error msg=\"crashed\" prog=test_crash"), "no report: %.1500s", out);
	ck_assert_msg(strstr(out, want), "no %s in: %.1500s", want, out);
	ck_assert_msg(strstr(out, "ts=20"), "no timestamp in: %.1500s", out);
	/* Frames: "module(+0x...)[0x...]" lines, then the closing line. */
	ck_assert_msg(strstr(out, "(+0x") && strstr(out, ")[0x"), "no stack frame in: %.1500s", out);
	ck_assert_msg(strstr(out, "(end of stack;"), "no end of stack in: %.1500s", out);
	ck_assert(WIFSIGNALED(st));
	ck_assert_int_eq(WTERMSIG(st), sig);
	return out;
}

START_TEST(test_null_write)
{
	if (under_asan)
		return;
	const char *out = check_crash(NULL_WRITE, "SIGSEGV", SIGSEGV);
	ck_assert_msg(strstr(out, " addr=0x0 "), "no faulting address in: %.1500s", out);
}
END_TEST

START_TEST(test_abort)
{
	if (under_asan)
		return;
	check_crash(ABORT, "SIGABRT", SIGABRT);
}
END_TEST

START_TEST(test_stack_overflow)
{
	if (under_asan)
		return;
	check_crash(OVERFLOW, "SIGSEGV", SIGSEGV);   /* reported from the alternate stack */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("crash");
	tcase_add_test(tc, test_null_write);
	tcase_add_test(tc, test_abort);
	tcase_add_test(tc, test_stack_overflow);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
