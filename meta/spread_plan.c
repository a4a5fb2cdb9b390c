/*
 * spread_plan.c — the leader-spread decision (rules in spread_plan.h).
 * Pure functions; no state.
 */
#include "meta/spread_plan.h"

/* Index of id in members[0..m), or -1. */
static int index_of(const uint64_t *members, size_t m, uint64_t id)
{
	for (size_t i = 0; i < m; i++)
		if (members[i] == id)
			return (int)i;
	return -1;
}

/* The best target for group x among its reachable voters, ranked by
 * (primary count, total count, id), at least 2 below self's primary
 * count; 0 when none. */
static uint64_t pick(const struct spread_plan_group *x, const uint64_t *members, size_t m,
		     const unsigned *primary, const unsigned *total, unsigned mine)
{
	uint64_t best = 0;
	int bk = -1;
	for (size_t i = 0; i < x->n_reachable; i++) {
		int k = index_of(members, m, x->reachable[i]);
		if (k < 0 || primary[k] + 2 > mine)
			continue;
		if (bk < 0 || primary[k] < primary[bk] ||
		    (primary[k] == primary[bk] &&
		     (total[k] < total[bk] || (total[k] == total[bk] && members[k] < best)))) {
			bk = k;
			best = members[k];
		}
	}
	return best;
}

bool spread_plan_next(const uint64_t *members, size_t m, uint64_t self,
		      const struct spread_plan_group *g, size_t n, size_t *gi, uint64_t *to)
{
	enum { MAX = 64 };
	unsigned ranges[MAX] = { 0 }, total[MAX] = { 0 };
	int me = index_of(members, m, self);
	if (m < 2 || m > MAX || me < 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		int k = g[i].leader ? index_of(members, m, g[i].leader) : -1;
		if (k < 0)
			continue;
		total[k]++;
		if (g[i].id != 0)
			ranges[k]++;
	}
	/* Range groups first, by their own count; then the root by all. */
	for (int root = 0; root < 2; root++) {
		const unsigned *primary = root ? total : ranges;
		for (size_t i = 0; i < n; i++) {
			if ((g[i].id == 0) != root || !g[i].movable || g[i].leader != self)
				continue;
			uint64_t t = pick(&g[i], members, m, primary, total, primary[me]);
			if (t) {
				*gi = i;
				*to = t;
				return true;
			}
		}
	}
	return false;
}
