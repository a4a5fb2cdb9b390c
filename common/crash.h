/*
 * crash.h — a crash report on stderr before a fatal signal ends the
 * process: which signal, the faulting address, the thread, and the stack
 * (one frame a line: module(+offset) [address], for addr2line), then the
 * signal's default action (a core dump where the ulimit allows one).
 * Without it a SIGSEGV leaves at most a kernel line and a SIGABRT or
 * SIGBUS nothing at all: the service's log just stops (the soak of
 * 2026-12-05 lost an OSD that way). Redis's crash report is the model.
 *
 * Owns: the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT, and
 * an alternate stack for the calling thread (a stack overflow still
 * reports on it). Does not: symbolise (that would need -rdynamic, which
 * changes which of our symbols preempt libraries'), catch signals a
 * thread blocks, or survive the crash.
 *
 * Thread: install once from main before other threads start.
 */
#ifndef COMMON_CRASH_H
#define COMMON_CRASH_H

/* Install the handlers; prog names the binary in the report. 0, or -errno.
 * Under AddressSanitizer it does nothing: ASan's handlers stay. */
int crash_report_install(const char *prog);

#endif
