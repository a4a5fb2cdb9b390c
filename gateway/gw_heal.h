/*
 * gw_heal.h — the gateway's half of self-healing: PGs the data path saw
 * degraded (a PUT acknowledged without every shard, a GET that found a
 * shard bad or missing and decoded) are sent to the meta leader with
 * FlagPgs, so the PG's primary rescans it before its map moves.
 *
 * Batched off the request path: gw_heal_flag() only sets a bit; a timer
 * sends the pending PGs of one reason per FlagPgs call, at most one call
 * in flight and at most one call per interval. Fire-and-forget: a call
 * that fails is counted and its PGs dropped (the primaries' periodic scans
 * find what a lost flag named, later).
 *
 * Bounded: one bit per PG id below PLACE_MAX_PGS per reason, and at
 * most max_pending PG ids waiting per reason (beyond: dropped, counted).
 *
 * Thread: the gateway loop; every function on that loop's thread.
 * Does not: decide anything about the PG, retry, or talk to OSDs.
 */
#ifndef GATEWAY_GW_HEAL_H
#define GATEWAY_GW_HEAL_H

#include <stdint.h>
#include <uv.h>

struct meta_client;
struct metrics_registry;

enum gw_heal_reason {
	GW_HEAL_PUT_PARTIAL,     /* FlagPgs reason "put_partial" */
	GW_HEAL_READ_BAD_SHARD,  /* "read_bad_shard" */
	GW_HEAL__REASONS
};

struct gw_heal_opts {
	uint32_t interval_ms;    /* between FlagPgs calls; 0: 500 */
	uint32_t max_pending;    /* PG ids waiting per reason; 0: 4096 */
};

struct gw_heal_stats {
	uint64_t flagged[GW_HEAL__REASONS];  /* PGs sent (FlagPgs answered) */
	uint64_t calls, calls_failed;
	uint64_t dropped;                    /* over max_pending, or a failed call's PGs */
};

struct gw_heal;

/* A batcher sending FlagPgs through mc (not owned; must outlive the
 * batcher's calls: close h before mc). reg: counters
 * iolake_gw_pg_flags_total{reason}, NULL for none. 0 and *out, -ENOMEM. */
int gw_heal_new(uv_loop_t *loop, struct meta_client *mc, struct metrics_registry *reg,
		const struct gw_heal_opts *opts, struct gw_heal **out);

/* PG pg wants a rescan for reason r. O(1), never blocks, never calls out.
 * NULL h is ignored. */
void gw_heal_flag(struct gw_heal *h, uint32_t pg, enum gw_heal_reason r);

void gw_heal_stats(const struct gw_heal *h, struct gw_heal_stats *out);

/* Stop: pending flags are dropped; h frees itself once its call in flight
 * (if any) has come back (meta_client_close makes it come back). NULL is
 * ignored. */
void gw_heal_close(struct gw_heal *h);

#endif
