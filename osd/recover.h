/*
 * recover.h — the per-PG recovery driver of one OSD (issue 12,
 * self-healing): for every PG this OSD is the primary of (common/place.h
 * place_primary_slot over the current cluster map), it compares the
 * shard listings of the PG's OSDs and rebuilds, from k good shards of a
 * stripe, every shard its slot's OSD lacks (a new OSD in the slot, a
 * returned OSD, a partial PUT, a bad shard), then reports each PG's state
 * to meta (ReportPgs). Every deep_scrub_ms it also deep-scrubs each such
 * PG: all k+m shards of every whole stripe are read and compared through
 * the code, and the one shard that disagrees is rewritten. Design and
 * limits: docs/architecture.md, osd/ "Recovery" and "Deep scrub".
 *
 * It learns the map through meta/mapwatch.h and talks to the PG's OSDs,
 * itself included, through the Osd RPC service only: nothing here touches
 * the local store directly, so the same code drives an iolake-osd process
 * and each OSD of iolake-aio.
 *
 * Thread: the loop given to start (the OSD's); every function on it.
 */
#ifndef OSD_RECOVER_H
#define OSD_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/metrics.h"

struct osd_recover;

struct osd_recover_opts {
	uint32_t osd_id;
	const char *const *meta;      /* meta member addresses, copied */
	size_t n_meta;
	uint64_t rate_bytes;          /* bytes/s this driver writes; 0: unthrottled */
	uint32_t max_pgs;             /* PGs scanned/rebuilt at once; 0: 2 */
	uint32_t stripes_inflight;    /* stripes rebuilt at once per PG; 0: 4 */
	uint32_t report_ms;           /* ReportPgs period; 0: 2000 */
	uint64_t rescan_ms;           /* backstop rescan of a clean PG; 0: 1 h */
	uint32_t rpc_timeout_ms;      /* deadline of each OSD call; 0: 10000 */
	uint64_t deep_scrub_ms;       /* deep scrub of each primary PG this often; 0: never */
	struct metrics_registry *metrics; /* required; series labelled osd=<id> */
};

/* Counters for Status and tests (since start). */
struct osd_recover_stats {
	uint64_t rate_bytes;          /* configured --recovery-rate */
	uint32_t pgs_primary;         /* PGs this OSD is the primary of */
	uint32_t pgs_active;          /* being scanned or rebuilt now */
	uint32_t pgs_queued;          /* waiting for a scan */
	uint64_t bytes;               /* shard bytes written by rebuilds */
	uint64_t stripes;             /* stripes repaired */
	uint64_t errors;              /* inconsistent stripes, failed sources/puts */
	uint64_t bytes_missing;       /* of the primary PGs, as last counted */
	uint64_t unfound;             /* stripes with fewer than k shards, last counted */
	uint64_t scans;               /* PG scans finished */
	uint64_t map_epoch;           /* of the map held (0: none yet) */
	uint64_t deep_stripes;        /* stripes deep-scrubbed (all k+m shards compared) */
	uint64_t deep_bytes;          /* shard bytes read by deep scrub */
	uint64_t deep_repaired;       /* shards rewritten: the one that disagreed */
	uint64_t deep_inconsistent;   /* stripes no single shard explains: left alone */
	uint64_t deep_pgs;            /* PG deep scrubs completed */
	uint64_t deep_last_unix_ms;   /* when the last PG deep scrub ended (0: none since start) */
};

/* Start: watch the map, and drive recovery from the first map on.
 * 0 and *out, -EINVAL (no meta address, no registry), -EEXIST (metrics of
 * this OSD id already registered), -ENOMEM. */
int osd_recover_start(uv_loop_t *loop, const struct osd_recover_opts *opts,
		      struct osd_recover **out);

/* A shard of pg was found bad here (scrub, or a read's checksum): ask the
 * PG's primary, through meta (FlagPgs, batched: at most one call a
 * second), to rescan it; queued at once when this OSD is the primary. */
void osd_recover_flag_pg(struct osd_recover *r, uint32_t pg);

void osd_recover_stats(const struct osd_recover *r, struct osd_recover_stats *out);

/* The hooks that connect r to its OSD's service (osd_service_set_hooks):
 * bad shards flag their PG, Status carries r's figures. */
struct osd_service_hooks;
void osd_recover_hooks(struct osd_recover *r, struct osd_service_hooks *out);

/* Stop: no new call starts; calls in flight are cancelled (their channels
 * closed), handles released; done_cb(arg) runs on the loop once r is
 * freed (never from inside this call; may be NULL). Once only. */
void osd_recover_stop(struct osd_recover *r, void (*done_cb)(void *arg), void *arg);


/* ------------------------------------------------ pure helpers (tested) */

#define OSD_RECOVER_NONE UINT32_MAX   /* an empty slot (common/place.h's NONE) */

/* Order of object ids in the shard index (osd/store/rec.h: zero-padded to
 * 64 bytes, then by length): <0, 0, >0. Listings merge in this order. */
int osd_recover_oid_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* The PG's signature: its slots' OSD ids and which were up. */
struct osd_recover_sig {
	uint32_t width;                  /* slots (k+m), <= 16 */
	uint32_t osds[16];               /* OSD_RECOVER_NONE: empty */
	uint32_t up_mask;                /* bit i: slot i's OSD up */
};

bool osd_recover_sig_eq(const struct osd_recover_sig *a, const struct osd_recover_sig *b);

/* Index of PG pg's primary slot (place_primary_slot: the up OSD
 * with the highest draw for this PG, the rule meta's PG states use too);
 * -1 when no slot's OSD is up. */
int osd_recover_primary_slot(uint32_t pg, const struct osd_recover_sig *s);

/* One stripe as the scan sees it: which slots hold their shard (present:
 * on the slot's OSD, listed, not recorded bad). */
struct osd_recover_stripe_class {
	uint32_t missing;                /* up slots lacking their shard */
	unsigned present;                /* shards present */
	bool rebuild;                    /* missing != 0 and present >= k */
	bool unfound;                    /* present < k */
};
struct osd_recover_stripe_class osd_recover_classify(const struct osd_recover_sig *s,
						     unsigned k, uint32_t present_mask);


/* Deep scrub of one stripe whose k+m shards (shards[i], len bytes each,
 * data first) all passed their crc32c: are they one codeword?
 * OSD_RECOVER_DEEP_OK: the parity encoded from the data equals the stored
 * parity (also when m == 0: nothing to compare). OSD_RECOVER_DEEP_ONE:
 * exactly one shard's exclusion leaves the other k+m-1 consistent: *bad
 * is its slot and scratch[0, len) holds its right bytes (decoded from the
 * others). OSD_RECOVER_DEEP_INCONSISTENT: no shard, or more than one
 * (always when m == 1), explains the mismatch: with 4+2, two bad shards
 * are told from one except when the corruption happens to lie one shard
 * away from another codeword (chance ~2^-8 per byte changed). -EINVAL
 * when the code does not decode. scratch: (m + 1) * len bytes, the
 * caller's; shards are only read. Pure; allocates nothing. */
enum { OSD_RECOVER_DEEP_OK, OSD_RECOVER_DEEP_ONE, OSD_RECOVER_DEEP_INCONSISTENT };
struct ec_code;
int osd_recover_deep_check(const struct ec_code *ec, size_t len, const uint8_t *const *shards,
			   uint8_t *scratch, unsigned *bad);

#endif
