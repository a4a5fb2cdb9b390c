/*
 * crash.c — the crash report (crash.h). The handler uses only what is
 * async-signal-safe: write(2), clock_gettime, and backtrace(3) /
 * backtrace_symbols_fd(3), whose one unsafe step (loading libgcc's
 * unwinder) install does ahead of time. It runs once (SA_RESETHAND): the
 * re-raised signal, or a crash inside the handler, takes the default
 * action.
 */
#include "common/crash.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CRASH_FRAMES 64

static const char *crash_prog = "iolake";
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* A line assembled on the stack with no libc formatting. */
struct line {
	char b[512];
	size_t n;
};

static void put_s(struct line *l, const char *s)
{
	while (*s && l->n < sizeof(l->b) - 1)
		l->b[l->n++] = *s++;
}

static void put_u(struct line *l, uint64_t v, unsigned base, unsigned width)
{
	char t[24];
	unsigned n = 0;
	do {
		t[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < sizeof(t));
	while (n < width && n < sizeof(t))
		t[n++] = '0';
	while (n && l->n < sizeof(l->b) - 1)
		l->b[l->n++] = t[--n];
}

static void put_out(struct line *l)
{
	l->b[l->n++] = '\n';
	for (size_t off = 0; off < l->n;) {
		ssize_t w = write(STDERR_FILENO, l->b + off, l->n - off);
		if (w <= 0 && errno != EINTR)
			return;
		if (w > 0)
			off += (size_t)w;
	}
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGABRT: return "SIGABRT";
	default: return "?";
	}
}

/* ts=... in log.h's form (UTC, milliseconds), from the epoch by hand:
 * gmtime_r is not async-signal-safe. */
static void put_ts(struct line *l)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t days = ts.tv_sec / 86400, secs = ts.tv_sec % 86400;
	/* Civil date from days since 1970-01-01 (Howard Hinnant's algorithm). */
	int64_t z = days + 719468, era = z / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);
	put_s(l, "ts=");
	put_u(l, (uint64_t)y, 10, 4);
	put_s(l, "-");
	put_u(l, (uint64_t)m, 10, 2);
	put_s(l, "-");
	put_u(l, (uint64_t)d, 10, 2);
	put_s(l, "T");
	put_u(l, (uint64_t)(secs / 3600), 10, 2);
	put_s(l, ":");
	put_u(l, (uint64_t)(secs / 60 % 60), 10, 2);
	put_s(l, ":");
	put_u(l, (uint64_t)(secs % 60), 10, 2);
	put_s(l, ".");
	put_u(l, (uint64_t)(ts.tv_nsec / 1000000), 10, 3);
	put_s(l, "Z ");
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	struct line l = { .n = 0 };
	put_ts(&l);
	put_s(&l, "level=error msg=\"crashed\" prog=");
	put_s(&l, crash_prog);
	put_s(&l, " signal=");
	put_s(&l, sig_name(sig));
	put_s(&l, " code=");
	if (si->si_code < 0)
		put_s(&l, "-");
	put_u(&l, (uint64_t)(si->si_code < 0 ? -(int64_t)si->si_code : si->si_code), 10, 1);
	if (si->si_code > 0 && sig != SIGABRT) {   /* the kernel's: a faulting address */
		put_s(&l, " addr=0x");
		put_u(&l, (uint64_t)(uintptr_t)si->si_addr, 16, 1);
	}
	put_s(&l, " pid=");
	put_u(&l, (uint64_t)getpid(), 10, 1);
	put_s(&l, " tid=");
	put_u(&l, (uint64_t)syscall(SYS_gettid), 10, 1);
	put_s(&l, " stack:");
	put_out(&l);
	void *frames[CRASH_FRAMES];
	int n = backtrace(frames, CRASH_FRAMES);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	l.n = 0;
	put_s(&l, "(end of stack; addr2line -f -e BINARY +OFFSET names a frame)");
	put_out(&l);
	errno = saved;
	/* SA_RESETHAND put the default action back: let it happen (a core). */
	raise(sig);
}

#if defined(__SANITIZE_ADDRESS__)
#define CRASH_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CRASH_UNDER_SANITIZER 1
#endif
#endif

int crash_report_install(const char *prog)
{
#ifdef CRASH_UNDER_SANITIZER
	/* The sanitizer's own handlers report better (and must stay). */
	(void)prog;
	(void)on_fatal;
	return 0;
#endif
	if (prog)
		crash_prog = prog;
	/* backtrace loads libgcc_s on its first call (malloc, dlopen): never
	 * inside the handler. */
	void *warm[2];
	(void)backtrace(warm, 2);
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	if (sigaltstack(&ss, NULL) != 0)
		return -errno;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		if (sigaction(crash_signals[i], &sa, NULL) != 0)
			return -errno;
	return 0;
}
