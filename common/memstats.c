/*
 * memstats.c — the malloc heap gauges (memstats.h).
 *
 * Owns: the last mallinfo2() and when it was taken (under mu). mallinfo2
 * locks each arena in turn and walks its free lists: cheap at a scrape's
 * rate, not for a hot path. Any thread; memstats_limit_arenas before
 * threads start.
 */
#include "common/memstats.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "common/metrics.h"

#define MEMSTATS_REUSE_NS 250000000ull

enum { M_HEAP, M_MMAP, M_INUSE, M_FREE, M_COUNT };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t taken_ns;
static double last[M_COUNT];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double read_one(void *arg)
{
	int which = (int)(intptr_t)arg;
	pthread_mutex_lock(&mu);
	uint64_t now = now_ns();
	if (!taken_ns || now - taken_ns > MEMSTATS_REUSE_NS) {
		struct mallinfo2 mi = mallinfo2();
		last[M_HEAP] = (double)mi.arena;      /* every arena's heap, from the system */
		last[M_MMAP] = (double)mi.hblkhd;     /* chunks mmapped one by one */
		last[M_INUSE] = (double)(mi.uordblks + mi.hblkhd);
		last[M_FREE] = (double)mi.fordblks;   /* free in the arenas, kept */
		taken_ns = now;
	}
	double v = last[which];
	pthread_mutex_unlock(&mu);
	return v;
}

int memstats_register_metrics(struct metrics_registry *reg)
{
	static const struct {
		const char *name, *help;
	} g[M_COUNT] = {
		[M_HEAP] = { "iolake_process_malloc_heap_bytes",
			     "Bytes malloc's arenas took from the system (brk and arena mmaps)." },
		[M_MMAP] = { "iolake_process_malloc_mmap_bytes",
			     "Bytes of large allocations malloc mmapped one by one." },
		[M_INUSE] = { "iolake_process_malloc_inuse_bytes",
			      "Bytes malloc'd and not freed (arena chunks and mmapped ones)." },
		[M_FREE] = { "iolake_process_malloc_free_bytes",
			     "Bytes freed but kept by malloc's arenas (resident once touched)." },
	};
	errno = 0;
	for (int i = 0; i < M_COUNT; i++)
		if (!metrics_gauge_fn_new(reg, g[i].name, g[i].help, NULL, read_one,
					  (void *)(intptr_t)i))
			return errno ? -errno : -ENOMEM;
	return 0;
}

int memstats_limit_arenas(int n)
{
	if (n <= 0) {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		n = cores > 0 ? 2 * (int)cores : 2;
	}
	return mallopt(M_ARENA_MAX, n) == 1 ? n : -EINVAL;
}
