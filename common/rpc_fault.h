/*
 * rpc_fault.h — test-only fault injection for RPC calls, behind the
 * channel ops of either transport (HTTP/2 or in-process). Off by default;
 * a binary turns it on only when given --debug-fault SPEC (RPC_FAULT_FLAG
 * below), and tests call rpc_fault_set() directly.
 *
 * SPEC is one or more rules separated by ';'. A rule is an action and
 * optional filters, separated by ',':
 *
 *   delay=MS          hold the call MS before sending it
 *   delay-answer=MS   send at once; hold its answer MS before the caller
 *                     sees it (the peer did the work on time)
 *   drop              never send it: the caller sees its deadline pass
 *                     (DEADLINE_EXCEEDED), or CANCELLED when the channel
 *                     closes if the call had no deadline
 *   fail=STATUS       never send it; fail it at once with STATUS (a name
 *                     such as UNAVAILABLE or INTERNAL, or its number)
 *   partition         never send it; fail it at once with UNAVAILABLE, as
 *                     a peer whose circuit is open (every matching call)
 *   spin=US           spend US microseconds of CPU on the caller's loop,
 *                     then send it (a slower code path: how
 *                     bench/regression.py is shown to fail a slower head)
 *
 *   peer=TARGET       only calls on channels to TARGET, exactly as dialled
 *                     ("10.0.0.3:7000", "local:osd-3"); default: any peer
 *   method=NAME       only this method: "GetShard", or with its service,
 *                     "iolake.osd.Osd/GetShard"; default: any method
 *   count=N           only the first N calls the rule matches
 *
 * The first rule that matches a call decides it; a call matching none
 * goes out untouched. A held call still keeps its deadline: a delayed
 * call or answer whose deadline passes while held fails DEADLINE_EXCEEDED
 * then. Example (OSD 3's reads answered 700 ms late, and meta at
 * 10.0.0.1:7000 cut off):
 *
 *   --debug-fault 'delay-answer=700,peer=local:osd-3,method=GetShard;partition,peer=10.0.0.1:7000'
 *
 * Scope: the process's client side. Every channel opened while rules are
 * set is wrapped (rpc_channel_open checks one pointer); channels opened
 * before stay plain, so set the rules before the services start. Replacing
 * the rules (rpc_fault_set) changes what wrapped channels do from their
 * next call on; rpc_fault_set(NULL) stops wrapping new channels.
 *
 * Does not: touch servers (a fault is seen where the call is made), open
 * the circuit of rpc_peer_state() for a partitioned peer, corrupt bytes,
 * or reach Raft's own traffic between meta members (libraft's transport,
 * not an RPC channel).
 * Threads: rules are process-wide, read under a mutex by calls on any
 * loop; each wrapped channel's held calls belong to its loop.
 */
#ifndef COMMON_RPC_FAULT_H
#define COMMON_RPC_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Replace the rules with those of spec (NULL or "": none, and new
 * channels are no longer wrapped). 0, or -EINVAL with a reason naming
 * the bad part in err (the old rules stay), or -ENOMEM. Any thread. */
int rpc_fault_set(const char *spec, char *err, size_t errlen);

/* Whether rules are set (new channels are wrapped). */
bool rpc_fault_enabled(void);

struct rpc_fault_stats {
	uint64_t delayed;          /* calls held before sending */
	uint64_t answers_delayed;  /* answers held */
	uint64_t dropped;          /* calls never sent, left to their deadline */
	uint64_t failed;           /* calls failed by fail= */
	uint64_t partitioned;      /* calls failed by partition */
	uint64_t spun;             /* calls that cost spin= CPU first */
};

/* Process-wide counts since start (any thread). */
void rpc_fault_stats(struct rpc_fault_stats *out);

/* A binary's --debug-fault: parse spec (NULL: nothing to do), log a
 * warning that faults are injected, and return 0; on a bad spec print
 * "PROG: flag --debug-fault: ..." to stderr and return 2 (the exit code
 * for a bad flag). */
int rpc_fault_flag_apply(const char *prog, const char *spec);

/* The flag's entry for a flag_spec table (common/flags.h), dst a
 * const char * initialised to NULL. */
#define RPC_FAULT_FLAG(var)                                                              \
	{ .name = "debug-fault", .type = FLAG_STRING, .dst = &(var), .metavar = "SPEC",  \
	  .help = "tests only: inject RPC faults (delay, drop, fail, partition, spin; "  \
		  "common/rpc_fault.h, docs/testing.md)" }

#endif
