/*
 * test_memstats.c — the malloc gauges follow what the process holds (a
 * 64 MiB allocation shows in inuse, and goes when freed), and the arena
 * cap holds: eight threads that malloc at once get one arena each under
 * glibc's default cap, and share what memstats_limit_arenas allows.
 * Each test runs in its own forked child (check's default), so each
 * starts from the runner's single main arena. Under ASan (make asan) the
 * allocations are ASan's, not glibc's: only registration is checked.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/memstats.h"
#include "common/metrics.h"

static double gauge(struct metrics_registry *reg, const char *name)
{
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(metrics_render(reg, &text, &len), 0);
	char want[128];
	snprintf(want, sizeof(want), "\n%s ", name);
	const char *p = strstr(text, want);
	ck_assert_msg(p, "%s missing:\n%s", name, text);
	double v = strtod(p + strlen(want), NULL);
	free(text);
	return v;
}

START_TEST(inuse_follows_allocations)
{
	struct metrics_registry *reg = metrics_registry_new();
	ck_assert_ptr_nonnull(reg);
	ck_assert_int_eq(memstats_register_metrics(reg), 0);
	ck_assert_int_eq(memstats_register_metrics(reg), -EEXIST);
	double before = gauge(reg, "iolake_process_malloc_inuse_bytes");
	size_t n = 64u << 20;
	char *big = malloc(n);
	ck_assert_ptr_nonnull(big);
	memset(big, 1, n);
	usleep(300 * 1000); /* past the 250 ms reuse of the last reading */
	double held = gauge(reg, "iolake_process_malloc_inuse_bytes");
	ck_assert_msg(held - before >= (double)n, "before %.0f held %.0f", before, held);
	ck_assert_double_ge(gauge(reg, "iolake_process_malloc_mmap_bytes"), (double)n);
	free(big);
	usleep(300 * 1000);
	double after = gauge(reg, "iolake_process_malloc_inuse_bytes");
	ck_assert_msg(held - after >= (double)n, "held %.0f after %.0f", held, after);
	metrics_registry_free(reg);
}
END_TEST

#define THREADS 8

static pthread_barrier_t bar;

static void *alloc_main(void *arg)
{
	(void)arg;
	/* a thread's first malloc picks its arena (volatile: the compiler
	 * may drop a malloc whose result is only freed) */
	void *volatile p = malloc(1024);
	pthread_barrier_wait(&bar); /* all alive at once: none reuses a dead one's */
	free(p);
	return NULL;
}

/* Arenas malloc has after THREADS threads malloc'd at once. */
static int arenas_after_threads(void)
{
	pthread_barrier_init(&bar, NULL, THREADS);
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, alloc_main, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	char *xml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&xml, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(malloc_info(0, f), 0);
	fclose(f);
	int heaps = 0;
	for (const char *p = xml; (p = strstr(p, "<heap nr=")); p++)
		heaps++;
	free(xml);
	return heaps;
}

START_TEST(default_cap_gives_each_thread_an_arena)
{
	/* The control: without the cap the same threads spread, so the
	 * test below can fail. */
	ck_assert_int_ge(arenas_after_threads(), THREADS);
}
END_TEST

START_TEST(limit_caps_the_arenas)
{
	ck_assert_int_eq(memstats_limit_arenas(2), 2);
	ck_assert_int_le(arenas_after_threads(), 2);
}
END_TEST

START_TEST(limit_zero_is_two_per_core)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	ck_assert_int_eq(memstats_limit_arenas(0), 2 * (int)cores);
}
END_TEST

START_TEST(gauges_register_once)
{
	struct metrics_registry *reg = metrics_registry_new();
	ck_assert_ptr_nonnull(reg);
	ck_assert_int_eq(memstats_register_metrics(reg), 0);
	ck_assert_int_eq(memstats_register_metrics(reg), -EEXIST);
	(void)gauge(reg, "iolake_process_malloc_free_bytes");
	metrics_registry_free(reg);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
#define GLIBC_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GLIBC_MALLOC 0
#endif
#endif
#ifndef GLIBC_MALLOC
#define GLIBC_MALLOC 1
#endif

int main(void)
{
	Suite *s = suite_create("memstats");
	TCase *tc = tcase_create("memstats");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, gauges_register_once);
	if (GLIBC_MALLOC) {
		tcase_add_test(tc, inuse_follows_allocations);
		tcase_add_test(tc, default_cap_gives_each_thread_an_arena);
		tcase_add_test(tc, limit_caps_the_arenas);
		tcase_add_test(tc, limit_zero_is_two_per_core);
	}
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
