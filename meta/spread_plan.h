/*
 * spread_plan.h — the leader-spread decision of a meta member (issue 13):
 * from who leads each group it hosts, which one group it leads to hand to
 * which member next. Pure: no Raft, no I/O; meta/hosting.c gathers the
 * view and carries the transfer out, tests/unit/meta/test_spread_plan.c
 * checks the rules.
 *
 * Range groups carry the object records, so they are spread by
 * themselves: the root (group 0) does not count in their share. A root
 * counted with them let one member keep two loaded range groups because
 * "root + 3 groups over 3 members" allows two each (seen on the netns
 * cluster: groups 2 and 3 both led by one member).
 *
 * Rules, in order (one move at a time; the caller waits for it):
 *   1. a range group self leads moves to a voter of it, heard from
 *      lately, that leads at least 2 range groups fewer than self (so the
 *      move never makes things worse and nothing moves back); among
 *      targets the one leading the fewest range groups, then the fewest
 *      groups of any kind, then the lowest id;
 *   2. else the root, led by self, moves the same way counting every
 *      group (range groups and the root), so it sits on a member leading
 *      fewer range groups when one exists;
 *   3. else nothing.
 * Spread ends with every reachable member's range-group count within 1
 * of the others': with no more range groups than members, each range
 * group's leader on a different member.
 */
#ifndef META_SPREAD_PLAN_H
#define META_SPREAD_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One group as the deciding member sees it. */
struct spread_plan_group {
	uint64_t id;                   /* 0: the root group */
	uint64_t leader;               /* its leader's member id; 0: none known */
	bool movable;                  /* self leads it and may transfer it now */
	const uint64_t *reachable;     /* its voters (not self) heard from lately */
	size_t n_reachable;
};

/* The next move of member `self` among members[0..m) (the root's voters)
 * for groups g[0..n): true with *gi (index into g) and *to set, or false
 * when nothing should move. */
bool spread_plan_next(const uint64_t *members, size_t m, uint64_t self,
		      const struct spread_plan_group *g, size_t n, size_t *gi, uint64_t *to);

#endif
