/*
 * test_iodestroy.c — meta/iodestroy.c: syscall(3) is this executable's
 * (the symbol a shared library such as libraft binds to), passes other
 * numbers through, leaves io_destroy on the caller before the start, and
 * after it returns at once while the thread destroys the context for
 * real (a second destroy of the same context is refused by the kernel,
 * counted in `failed`); a forked child destroys inline until it starts its
 * own thread, also when it was forked while the thread was busy; a burst
 * of contexts is destroyed in full.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "meta/iodestroy.h"

static aio_context_t setup(void)
{
	aio_context_t ctx = 0;
	ck_assert_int_eq(syscall(SYS_io_setup, 1, &ctx), 0);
	ck_assert(ctx != 0);
	return ctx;
}

/* Wait (5 s at most) until the thread made `done` calls. */
static struct iodestroy_stats wait_done(uint64_t done)
{
	struct iodestroy_stats st;
	for (int i = 0; i < 5000; i++) {
		iodestroy_get_stats(&st);
		if (st.done >= done)
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return st;
}

START_TEST(test_passthrough_before_start)
{
	ck_assert_ptr_eq(dlsym(RTLD_DEFAULT, "syscall"), (void *)syscall);
	ck_assert_int_eq(syscall(SYS_getpid), getpid());
	aio_context_t ctx = setup();
	ck_assert_int_eq(syscall(SYS_io_destroy, ctx), 0);    /* on the caller */
	errno = 0;
	ck_assert_int_eq(syscall(SYS_io_destroy, ctx), -1);   /* already gone */
	ck_assert_int_eq(errno, EINVAL);
	struct iodestroy_stats st;
	iodestroy_get_stats(&st);
	ck_assert_uint_eq(st.queued, 0);
}
END_TEST

START_TEST(test_deferred)
{
	ck_assert_int_eq(iodestroy_defer_start(), 0);
	ck_assert_int_eq(iodestroy_defer_start(), 0);   /* idempotent */
	aio_context_t ctx = setup();
	ck_assert_int_eq(syscall(SYS_io_destroy, ctx), 0);
	struct iodestroy_stats st = wait_done(1);
	ck_assert_uint_eq(st.queued, 1);
	ck_assert_uint_eq(st.done, 1);
	ck_assert_uint_eq(st.failed, 0);   /* the kernel destroyed a live context */
	/* It is gone: a submit on it and a second destroy are refused. */
	struct iocb cb = { .aio_lio_opcode = IOCB_CMD_FSYNC, .aio_fildes = 0 };
	struct iocb *cbs[1] = { &cb };
	ck_assert_int_eq(syscall(SYS_io_submit, ctx, 1, cbs), -1);
	ck_assert_int_eq(syscall(SYS_io_destroy, ctx), 0);   /* queued: the result is the thread's */
	st = wait_done(2);
	ck_assert_uint_eq(st.done, 2);
	ck_assert_uint_eq(st.failed, 1);
	/* Other numbers still pass through, arguments intact. */
	ck_assert_int_eq(syscall(SYS_getppid), getppid());
}
END_TEST

/* A forked child has no thread: io_destroy is its own until it starts
 * one, and then deferred and real again. */
START_TEST(test_fork)
{
	ck_assert_int_eq(iodestroy_defer_start(), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		aio_context_t ctx = setup();
		int bad = syscall(SYS_io_destroy, ctx) != 0;           /* inline */
		bad |= syscall(SYS_io_destroy, ctx) != -1;             /* inline: gone */
		struct iodestroy_stats st;
		iodestroy_get_stats(&st);
		bad |= st.queued != 0 && st.queued != st.done;
		bad |= iodestroy_defer_start() != 0;
		uint64_t q0 = 0;
		iodestroy_get_stats(&st);
		q0 = st.queued;
		bad |= syscall(SYS_io_destroy, setup()) != 0;
		st = wait_done(q0 + 1);
		bad |= st.queued != q0 + 1 || st.done != q0 + 1 || st.failed != 0;
		_exit(bad ? 1 : 0);
	}
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

#ifndef __SANITIZE_ADDRESS__   /* see main */
/* waitpid for pid, at most ms; -1 if it is still running (then killed). */
static int wait_child(pid_t pid, int ms)
{
	int status = 0;
	for (int i = 0; i < ms; i++) {
		pid_t got = waitpid(pid, &status, WNOHANG);
		if (got == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* fork(2) while the thread has just started or is busy with a queue: the
 * child must never inherit the queue's mutex held (the thread held it at
 * the instant of the fork), or its first get_stats would wait for ever.
 * Each round runs in a fresh process (the thread starts once per
 * process), which starts the thread, queues a context every other round
 * and forks at once; the grandchild reads the stats, starts its own
 * thread and destroys one context. Every wait is bounded. Without the
 * atfork handlers, 2 of 3 runs hung a grandchild within 300 rounds. */
START_TEST(test_fork_while_busy)
{
	for (int i = 0; i < 300; i++) {
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int bad = iodestroy_defer_start() != 0;
			if (i % 2)
				bad |= syscall(SYS_io_destroy, setup()) != 0;
			pid_t g = fork();
			if (g == 0) {
				struct iodestroy_stats st;
				iodestroy_get_stats(&st);
				int gbad = iodestroy_defer_start() != 0;
				gbad |= syscall(SYS_io_destroy, setup()) != 0;
				st = wait_done(1);
				gbad |= st.done != 1 || st.failed != 0;
				_exit(gbad ? 1 : 0);
			}
			int rc = g < 0 ? 1 : wait_child(g, 5000);
			_exit(bad ? 1 : rc == 0 ? 0 : rc < 0 ? 2 : 3);
		}
		int rc = wait_child(pid, 10000);
		ck_assert_msg(rc == 0, "round %d: %s", i,
			      rc == 2 ? "the grandchild hung (a lock copied held)"
			      : rc < 0 ? "the child hung" : "a destroy or a start failed");
	}
}
END_TEST
#endif

START_TEST(test_burst)
{
	ck_assert_int_eq(iodestroy_defer_start(), 0);
	enum { N = 200 };
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(syscall(SYS_io_destroy, setup()), 0);
	struct iodestroy_stats st;
	iodestroy_get_stats(&st);
	ck_assert_uint_eq(st.queued + st.inline_full, N);
	st = wait_done(st.queued);
	ck_assert_uint_eq(st.done, st.queued);
	ck_assert_uint_eq(st.failed, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iodestroy");
	TCase *tc = tcase_create("iodestroy");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_passthrough_before_start);
	tcase_add_test(tc, test_deferred);
	tcase_add_test(tc, test_fork);
#ifndef __SANITIZE_ADDRESS__
	/* Not under ASan: GCC 12's libasan does not hold its allocator's
	 * locks across fork(2), so a child forked while another thread
	 * allocates (the new thread's ASan start-up does) can hang in that
	 * allocator, whatever this module does. */
	tcase_add_test(tc, test_fork_while_busy);
#endif
	tcase_add_test(tc, test_burst);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);   /* each test in a fresh process */
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
