/*
 * group_plan.h — the reconcile decision of a range group's leader (issue
 * 13): from the members the root says the group must have and the Raft
 * configuration it has, the next single change to make. Pure: no Raft,
 * no I/O; meta/group_members.c carries the step out, tests/unit/meta/
 * test_group_plan.c checks the rules.
 *
 * Rules, in order (one change at a time; the caller waits for each to
 * commit before asking again):
 *   1. nothing desired: DONE (a group is never emptied);
 *   2. a server not desired and not heard from lately (dead): REMOVE it
 *      first — it only counts against the quorum;
 *   3. a desired server present but not a voter: PROMOTE it (libraft
 *      catches it up before the configuration counts it);
 *   4. a desired server missing: ADD it (as a spare; PROMOTE follows);
 *   5. any other server not desired: REMOVE it (after the additions, so a
 *      live voter leaves only once its replacement votes);
 *   6. the leader itself not desired: TRANSFER leadership to a desired
 *      voter heard from lately (WAIT when none is); the new leader
 *      removes it by rule 5;
 *   7. DONE.
 * Among candidates the lowest id goes first (deterministic).
 */
#ifndef META_GROUP_PLAN_H
#define META_GROUP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct group_plan_server {
	uint64_t id;
	bool voter;                    /* RAFT_VOTER (else standby or spare) */
	bool recent;                   /* the leader heard from it lately (itself: true) */
};

enum group_plan_kind {
	GROUP_PLAN_DONE = 0,           /* the configuration is the desired one */
	GROUP_PLAN_ADD,                /* raft_add(id) as a spare */
	GROUP_PLAN_PROMOTE,            /* raft_assign(id, RAFT_VOTER) */
	GROUP_PLAN_REMOVE,             /* raft_remove(id) */
	GROUP_PLAN_TRANSFER,           /* raft_transfer(id): the leader is not desired */
	GROUP_PLAN_WAIT,               /* nothing safe to do now; ask again later */
};

struct group_plan_step {
	enum group_plan_kind kind;
	uint64_t id;
};

/* The next step for the leader `self` of a group whose configuration is
 * actual[0..na) toward desired[0..nd) (member ids, no repeats). */
struct group_plan_step group_plan_next(const uint64_t *desired, size_t nd,
				       const struct group_plan_server *actual, size_t na,
				       uint64_t self);

/* "done", "add", ... for logs. */
const char *group_plan_kind_name(enum group_plan_kind k);

#endif
