/*
 * check.h — the project's three kinds of checks (STYLE.md, "Three kinds of
 * checks"):
 *
 *   IOL_ASSERT(cond)        Always on, whatever NDEBUG says. For invariants
 *                           that guard data: on-disk records, the commit log,
 *                           the block allocator, a state machine's apply. On
 *                           failure it writes one error line (the check, file,
 *                           line, function) and aborts: a core dump is better
 *                           than a disk or a replica that silently diverges.
 *   IOL_DEBUG_ASSERT(cond)  Expensive verification (decode what was just
 *                           encoded, recompute a checksum, walk a structure).
 *                           Evaluated only in debug builds (IOLAKE_DEBUG:
 *                           `make asan` and the fuzz build define it); in a
 *                           release build the condition is compiled (so it
 *                           stays valid code) but never evaluated.
 *   IOL_CHECK_IF(cond)      Something a peer, a disk or a user can cause.
 *                           Never aborts: it is an expression with cond's
 *                           truth value, for `if (IOL_CHECK_IF(x)) return
 *                           -EINVAL;`. When cond holds it is counted
 *                           (iol_check_failures, the metric
 *                           iolake_check_failures_total) and logged at warn
 *                           level, at most IOL_CHECK_LOG_MAX times per site.
 *
 * Input from the network is never asserted on: it is validated and answered
 * with an error (IOL_CHECK_IF where a count helps an operator).
 *
 * Owns only these macros and their failure paths; any thread.
 */
#ifndef COMMON_CHECK_H
#define COMMON_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct metrics_registry;

#define IOL_CHECK_LOG_MAX 10 /* log lines per IOL_CHECK_IF site; counted beyond */

__attribute__((noreturn, cold)) void iol_assert_fail(const char *check, const char *file,
						     int line, const char *func);
__attribute__((cold)) void iol_check_hit(const char *check, const char *file, int line,
					 atomic_uint *site_hits);

#define IOL_ASSERT(cond)                                                           \
	do {                                                                       \
		if (__builtin_expect(!(cond), 0))                                  \
			iol_assert_fail(#cond, __FILE__, __LINE__, __func__);      \
	} while (0)

#ifdef IOLAKE_DEBUG
#define IOL_DEBUG_ASSERT(cond) IOL_ASSERT(cond)
#else
#define IOL_DEBUG_ASSERT(cond)                                                     \
	do {                                                                       \
		if (0 && !(cond))                                                  \
			iol_assert_fail(#cond, __FILE__, __LINE__, __func__);      \
	} while (0)
#endif

#define IOL_CHECK_IF(cond)                                                         \
	__extension__({                                                            \
		bool iol_c_ = (cond);                                              \
		if (__builtin_expect(iol_c_, 0)) {                                 \
			static atomic_uint iol_site_hits_;                         \
			iol_check_hit(#cond, __FILE__, __LINE__, &iol_site_hits_); \
		}                                                                  \
		iol_c_;                                                            \
	})

/* IOL_CHECK_IF hits in this process, every site together. */
uint64_t iol_check_failures(void);

/* Register iolake_check_failures_total in reg (once per registry). 0 or
 * -ENOMEM. */
int iol_check_register_metrics(struct metrics_registry *reg);

#endif
