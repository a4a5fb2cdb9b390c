/*
 * iodestroy.c — io_destroy(2) off the caller's thread (see iodestroy.h).
 *
 * Owns: the process's syscall(3) symbol (a pass-through for every number
 * but SYS_io_destroy), a FIFO of AIO contexts to destroy (mutex +
 * condvar, both made safe across fork(2) by pthread_atfork handlers) and
 * the one thread ("meta-iodestroy") that destroys them.
 * Does not: touch any other syscall, retry a failed io_destroy, or wait
 * for the queue at exit.
 */
#include "meta/iodestroy.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define QUEUE_MAX 64   /* contexts waiting; raft_uv closes one at a time */

typedef long (*syscall_fn)(long, ...);

static _Atomic(syscall_fn) libc_syscall;
/* The process whose thread destroys: a forked child has no such thread
 * (and none of the parent's AIO contexts) until it starts its own. */
static atomic_int reaper_pid;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long queue[QUEUE_MAX];       /* aio_context_t values, FIFO */
static unsigned q_head, q_len;
static struct iodestroy_stats stats; /* under mu */

static syscall_fn real_syscall(void)
{
	syscall_fn f = atomic_load_explicit(&libc_syscall, memory_order_acquire);
	if (!f) {
		/* The next definition after this executable's: libc's. */
		f = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
		atomic_store_explicit(&libc_syscall, f, memory_order_release);
	}
	return f;
}

/* Queue ctx; false when full or not started (the caller destroys it). */
static bool defer(long ctx)
{
	bool ok = false;
	pthread_mutex_lock(&mu);
	if (q_len < QUEUE_MAX) {
		queue[(q_head + q_len) % QUEUE_MAX] = ctx;
		q_len++;
		stats.queued++;
		ok = true;
		pthread_cond_signal(&cv);
	} else {
		stats.inline_full++;
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

/* Six arguments are read whatever the caller passed, as libc's own
 * syscall does: on arm64 all are registers; on x86-64 the sixth comes
 * from the caller's stack just above its return address (mapped memory,
 * and the kernel ignores arguments a syscall does not take). ASan flags
 * that read as an underflow of the caller's frame, hence no_sanitize. */
__attribute__((no_sanitize_address)) long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_io_destroy &&
	    atomic_load_explicit(&reaper_pid, memory_order_acquire) == (int)getpid() &&
	    defer(a[0]))
		return 0;
	syscall_fn f = real_syscall();
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void *reaper(void *arg)
{
	(void)arg;
	syscall_fn f = real_syscall();
	pthread_mutex_lock(&mu);
	for (;;) {
		while (q_len == 0)
			pthread_cond_wait(&cv, &mu);
		long ctx = queue[q_head];
		q_head = (q_head + 1) % QUEUE_MAX;
		q_len--;
		pthread_mutex_unlock(&mu);
		long rc = f(SYS_io_destroy, ctx);   /* the RCU grace period, here */
		pthread_mutex_lock(&mu);
		stats.done++;
		if (rc != 0)
			stats.failed++;
	}
	return NULL;
}

/* fork(2) copies mu as it is at that instant. Held by the thread (which
 * takes it as it starts, and around each pop and count), the child's copy
 * would stay locked for good, and the child's first get_stats or start
 * would wait for ever. So a fork takes mu first and both sides let it go
 * after; the child also gets a new condvar, since the parent's thread was
 * waiting on the old one and no such thread exists in the child. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&mu);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void fork_child(void)
{
	cv = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
	pthread_mutex_unlock(&mu);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc;

static void atfork_register(void)
{
	atfork_rc = -pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int iodestroy_defer_start(void)
{
	int pid = (int)getpid();
	if (!real_syscall())
		return -ENOSYS;
	pthread_once(&atfork_once, atfork_register);
	if (atfork_rc)
		return atfork_rc;
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (atomic_load_explicit(&reaper_pid, memory_order_acquire) != pid) {
		/* First start, or in a forked child: the queue held the
		 * parent's contexts, which the child does not have. */
		q_head = q_len = 0;
		memset(&stats, 0, sizeof(stats));
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = -pthread_create(&t, &attr, reaper, NULL);
		pthread_attr_destroy(&attr);
		if (rc == 0) {
			pthread_setname_np(t, "meta-iodestroy");
			atomic_store_explicit(&reaper_pid, pid, memory_order_release);
		}
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void iodestroy_get_stats(struct iodestroy_stats *st)
{
	pthread_mutex_lock(&mu);
	*st = stats;
	pthread_mutex_unlock(&mu);
}
