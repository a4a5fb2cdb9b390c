/*
 * group_plan.c — the reconcile decision of a range group's leader (rules
 * in group_plan.h). Pure functions; no state.
 */
#include "meta/group_plan.h"

static bool in_desired(const uint64_t *d, size_t nd, uint64_t id)
{
	for (size_t i = 0; i < nd; i++)
		if (d[i] == id)
			return true;
	return false;
}

static const struct group_plan_server *find(const struct group_plan_server *a, size_t na,
					    uint64_t id)
{
	for (size_t i = 0; i < na; i++)
		if (a[i].id == id)
			return &a[i];
	return NULL;
}

/* Lowest id of actual matching (desired?, recent?) (either may be -1:
 * any), not self; 0 when none. */
static uint64_t lowest(const uint64_t *d, size_t nd, const struct group_plan_server *a, size_t na,
		       uint64_t self, int want_desired, int want_recent)
{
	uint64_t best = 0;
	for (size_t i = 0; i < na; i++) {
		if (a[i].id == self || a[i].id == 0)
			continue;
		if (want_desired >= 0 && in_desired(d, nd, a[i].id) != (want_desired == 1))
			continue;
		if (want_recent >= 0 && a[i].recent != (want_recent == 1))
			continue;
		if (!best || a[i].id < best)
			best = a[i].id;
	}
	return best;
}

struct group_plan_step group_plan_next(const uint64_t *desired, size_t nd,
				       const struct group_plan_server *actual, size_t na,
				       uint64_t self)
{
	struct group_plan_step s = { GROUP_PLAN_DONE, 0 };
	if (nd == 0)
		return s;
	/* 2: a dead server not desired. */
	uint64_t id = lowest(desired, nd, actual, na, self, 0, 0);
	if (id) {
		s.kind = GROUP_PLAN_REMOVE;
		s.id = id;
		return s;
	}
	/* 3 and 4: desired servers, lowest id first. */
	uint64_t promote = 0, add = 0;
	for (size_t i = 0; i < nd; i++) {
		const struct group_plan_server *a = find(actual, na, desired[i]);
		if (a && !a->voter && (!promote || desired[i] < promote))
			promote = desired[i];
		if (!a && desired[i] && (!add || desired[i] < add))
			add = desired[i];
	}
	if (promote) {
		s.kind = GROUP_PLAN_PROMOTE;
		s.id = promote;
		return s;
	}
	if (add) {
		s.kind = GROUP_PLAN_ADD;
		s.id = add;
		return s;
	}
	/* 5: live servers not desired. */
	id = lowest(desired, nd, actual, na, self, 0, -1);
	if (id) {
		s.kind = GROUP_PLAN_REMOVE;
		s.id = id;
		return s;
	}
	/* 6: the leader itself. */
	if (!in_desired(desired, nd, self)) {
		uint64_t to = 0;
		for (size_t i = 0; i < na; i++)
			if (actual[i].id != self && actual[i].voter && actual[i].recent &&
			    in_desired(desired, nd, actual[i].id) && (!to || actual[i].id < to))
				to = actual[i].id;
		s.kind = to ? GROUP_PLAN_TRANSFER : GROUP_PLAN_WAIT;
		s.id = to;
	}
	return s;
}

const char *group_plan_kind_name(enum group_plan_kind k)
{
	switch (k) {
	case GROUP_PLAN_DONE: return "done";
	case GROUP_PLAN_ADD: return "add";
	case GROUP_PLAN_PROMOTE: return "promote";
	case GROUP_PLAN_REMOVE: return "remove";
	case GROUP_PLAN_TRANSFER: return "transfer";
	case GROUP_PLAN_WAIT: return "wait";
	}
	return "?";
}
