/*
 * check.c — the failure paths of common/check.h: the assertion's last log
 * line and abort, and the counted, rate-limited IOL_CHECK_IF report.
 */
#include "common/check.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/metrics.h"

static atomic_uint_fast64_t check_failures;

void iol_assert_fail(const char *check, const char *file, int line, const char *func)
{
	/* LOG_ERROR writes with one write(2) and never fails its caller, so
	 * the line is out before the abort. */
	LOG_ERROR("assertion failed", "check=%s at=%s:%d func=%s", LOG_Q(check), file, line,
		  func);
	abort();
}

void iol_check_hit(const char *check, const char *file, int line, atomic_uint *site_hits)
{
	atomic_fetch_add_explicit(&check_failures, 1, memory_order_relaxed);
	unsigned n = atomic_fetch_add_explicit(site_hits, 1, memory_order_relaxed);
	if (n < IOL_CHECK_LOG_MAX)
		LOG_WARN("check failed", "check=%s at=%s:%d hits=%u%s", LOG_Q(check), file, line,
			 n + 1, n + 1 == IOL_CHECK_LOG_MAX ? " (no more lines from this site)" : "");
}

uint64_t iol_check_failures(void)
{
	return atomic_load_explicit(&check_failures, memory_order_relaxed);
}

static double failures_now(void *arg)
{
	(void)arg;
	return (double)iol_check_failures();
}

int iol_check_register_metrics(struct metrics_registry *reg)
{
	return metrics_gauge_fn_new(reg, "iolake_check_failures_total",
				    "Failed IOL_CHECK_IF checks (something a peer, a disk or a "
				    "user caused) in this process.",
				    NULL, failures_now, NULL) ? 0 : -ENOMEM;
}
