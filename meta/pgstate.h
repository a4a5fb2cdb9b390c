/*
 * pgstate.h — PG health on the meta leader: the latest ReportPgs report
 * of each PG (from its primary OSD), the PGs flagged for a rescan
 * (FlagPgs), and each PG's state derived from the current cluster map and
 * that report (meta.proto, section "self-healing").
 *
 * Leader memory only, not Raft state (like the heartbeat times in
 * node.c): a new leader starts empty and shows "unknown" until the
 * primaries report again (every ~2 s). The table holds one slot per PG
 * (pg_count of the map, at most PLACE_MAX_PGS): bounded by the map,
 * never by traffic.
 *
 * Derivation (meta_pgstate_derive, pure: a unit test drives it without
 * Raft), per PG, from its current slots and their OSDs' up flags:
 *   fewer than k slots with an up OSD               incomplete
 *   a valid report (its osds and up_mask are the PG's current slots and
 *   up flags, received at most META_PGSTATE_MAX_AGE_MS ago):
 *     unfound_live > 0, whatever its word           active+unfound
 *     "clean"                                       active+clean
 *     "recovering" / "backfilling"                  active+recovering /
 *                                                   active+backfilling,
 *                                                   "+degraded" while a slot
 *                                                   is down or empty
 *     "degraded"                                    active+degraded
 *     "scanning" (or a state this leader does not know): the state the
 *       previous report of the same slots gave (+degraded following
 *       today's up set; clean shows active+degraded while a slot is
 *       down); active+remapped when the
 *       slots moved since that report; with no previous report,
 *       active+degraded when a slot is down or empty, else unknown
 *   no valid report:
 *     a report for other slots                      active+remapped
 *     a slot down or empty                          active+degraded
 *     otherwise (never reported, or stale)          unknown
 *
 * Thread: the meta node's loop (no locking).
 * Does not: talk to OSDs, persist anything, or decide what to rebuild
 * (the primary OSD does; this only keeps what it says).
 */
#ifndef META_PGSTATE_H
#define META_PGSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/place.h"
#include "proto/meta.pb-c.h"

#define META_PGSTATE_MAX_AGE_MS 10000   /* a report older than this is not valid */

/* Derived PG states, in the order PgStatsResponse.counts lists them
 * (sorted by name). */
enum meta_pg_state {
	META_PG_BACKFILLING,          /* active+backfilling */
	META_PG_BACKFILLING_DEGRADED, /* active+backfilling+degraded */
	META_PG_CLEAN,                /* active+clean */
	META_PG_DEGRADED,             /* active+degraded */
	META_PG_RECOVERING,           /* active+recovering */
	META_PG_RECOVERING_DEGRADED,  /* active+recovering+degraded */
	META_PG_REMAPPED,             /* active+remapped */
	META_PG_UNFOUND,              /* active+unfound: live objects' stripes below k shards */
	META_PG_INCOMPLETE,           /* incomplete */
	META_PG_UNKNOWN,              /* unknown */
	META_PG__COUNT
};

/* "active+clean", ...; "unknown" for anything out of range. */
const char *meta_pgstate_name(enum meta_pg_state s);

/* What a primary said in a PgReport, as the leader keeps it. */
enum meta_pg_report_kind {
	META_PGR_SCANNING,            /* "scanning", or a name this leader does not know */
	META_PGR_CLEAN,
	META_PGR_RECOVERING,
	META_PGR_BACKFILLING,
	META_PGR_DEGRADED,
};

struct meta_pg_report {
	bool present;
	uint32_t from_osd;            /* reporter */
	uint64_t recv_ms;             /* leader's loop clock when it arrived */
	enum meta_pg_report_kind kind;
	/* the state the previous report of the same slots derived to: what a
	 * "scanning" report shows (META_PG_UNKNOWN: none) */
	enum meta_pg_state carried;
	uint64_t epoch;
	uint32_t n_osds;
	uint32_t osds[PLACE_MAX_WIDTH];
	uint32_t up_mask;
	char state[16];               /* the reporter's word, truncated */
	uint64_t stripes, stripes_missing, bytes_missing, stripes_done, bytes_done;
	uint64_t rate_bytes_per_s, unfound, unfound_live, bad_shards;
	uint32_t min_shards;
	uint64_t scan_started_ms, last_clean_ms;
};

/* One PG as the current map has it. */
struct meta_pg_view {
	uint32_t pg;                  /* its id: the primary's draw depends on it */
	uint32_t k;
	uint32_t width;               /* k + m: entries of osds */
	const uint32_t *osds;         /* slot i's OSD, PLACE_NONE: empty */
	uint32_t up_mask;             /* bit i: slot i's OSD is up */
};

struct meta_pg_derived {
	enum meta_pg_state state;
	bool report_valid;
	uint32_t primary;             /* place_primary_slot's OSD; NONE: no up OSD */
	uint64_t eta_s;               /* report's bytes_missing / rate; 0 when no rate */
	uint64_t age_ms;              /* of the report; 0 without one */
};

/* Derive one PG's state from the view and its latest report (NULL or
 * !present: none) at now_ms. Pure. */
void meta_pgstate_derive(const struct meta_pg_view *v, const struct meta_pg_report *rep,
			 uint64_t now_ms, struct meta_pg_derived *out);

/* The view of PG pg in map m (osds point into m). 0, or -EINVAL when the
 * map has no such PG or its width is out of range. */
int meta_pgstate_view(const Iolake__Meta__ClusterMap *m, uint32_t pg, struct meta_pg_view *v);

/* Totals over every PG (sums over valid reports). */
struct meta_pg_totals {
	uint32_t counts[META_PG__COUNT];
	uint64_t stripes_missing, bytes_missing, rate_bytes_per_s, unfound, unfound_live;
	uint64_t eta_s;               /* bytes_missing / rate; 0 when done or no rate */
};

struct meta_pgstate;

/* An empty table. 0 and *out, or -ENOMEM. */
int meta_pgstate_new(struct meta_pgstate **out);
void meta_pgstate_free(struct meta_pgstate *p);

/* Keep osd_id's own rebuild rate (ReportPgsRequest.rate_bytes_per_s),
 * received at now_ms. The totals' rate is the sum of the OSDs' rates
 * reported within META_PGSTATE_MAX_AGE_MS (the sum of the PGs' when
 * those are all 0, or none was sent). 0 or -ENOMEM. */
int meta_pgstate_osd_rate(struct meta_pgstate *p, uint32_t osd_id, uint64_t rate,
			  uint64_t now_ms);

/* Forget every report and flag (leadership lost or gained). */
void meta_pgstate_reset(struct meta_pgstate *p);

/* Keep report r from osd osd_id, received at now_ms, for map m. A report
 * older (by epoch) than the one kept is ignored. 0, or -EINVAL (no such
 * PG, width over PLACE_MAX_WIDTH), -ENOMEM (the table could not be
 * sized to the map). */
int meta_pgstate_report(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
			uint32_t osd_id, const Iolake__Meta__PgReport *r, uint64_t now_ms);

/* Flag PG pg for a rescan (kept until its primary's next report). 0,
 * -EINVAL (no such PG in m), -ENOMEM. */
int meta_pgstate_flag(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m, uint32_t pg);

/* Hand the flags of the PGs osd_id is the primary of in m to it: up to
 * cap PG ids into out, those flags cleared. Flags of PGs with another
 * primary stay. Returns how many. */
size_t meta_pgstate_take_rescans(struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
				 uint32_t osd_id, uint32_t *out, size_t cap);

/* PGs flagged now. */
size_t meta_pgstate_flagged(const struct meta_pgstate *p);

/* The kept report of pg, or NULL. */
const struct meta_pg_report *meta_pgstate_get(const struct meta_pgstate *p, uint32_t pg);

/* Derive every PG of m at now_ms: out[pg] for pg < m->n_pgs (out may be
 * NULL: totals only) and the totals. The totals' ETA is, when the OSDs
 * report rates, the longest of (bytes left in the PGs an OSD reported) /
 * (its rate): recovery ends with its slowest primary. */
void meta_pgstate_derive_all(const struct meta_pgstate *p, const Iolake__Meta__ClusterMap *m,
			     uint64_t now_ms, struct meta_pg_derived *out,
			     struct meta_pg_totals *tot);

#endif
