/*
 * recover_int.h — what the two files of the recovery driver share
 * (osd/recover.c: map, queue, reports, life; osd/recover_scan.c: scans,
 * rebuild jobs, token bucket). Internal to osd/recover*: nothing else
 * includes it. Contracts of the driver are in recover.h.
 */
#ifndef OSD_RECOVER_INT_H
#define OSD_RECOVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <uv.h>

#include "common/buf.h"
#include "common/ec.h"
#include "common/metrics.h"
#include "common/proto/osd_methods.h"
#include "common/shard_oid.h"
#include "meta/client.h"
#include "meta/mapwatch.h"
#include "osd/recover.h"
#include "proto/osd.pb-c.h"

#define TICK_MS 250
#define PAGE_LIMIT 1000
#define BAD_MAX 4096                 /* bad-shard records kept per scan */
#define FLAG_MAX 256                 /* PGs batched into one FlagPgs */
#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 10000
#define ERROR_RETRY_MS 60000         /* after inconsistent stripes */
#define UNFOUND_IDS_MAX 1000         /* unfound ids asked of meta per scan (CheckShards' cap) */
#define UNFOUND_RETRY_MIN_MS 5000    /* rescan of a PG with live unfound stripes: 5 s .. */
#define UNFOUND_RETRY_MAX_MS 300000  /* ... doubling to 5 min */
#define MAX_JOBS 16



/* ------------------------------------------------------------ state */

enum phase { PH_BAD, PH_COUNT, PH_REBUILD, PH_DEEP };

struct ent {                         /* one listed shard of the cursor's slot */
	uint8_t oid[64];
	uint8_t oid_len;
	uint32_t crc;
	uint64_t len;
};

struct cursor {                      /* one slot's OSD listing */
	bool active;                 /* slot up with an OSD */
	bool pending, more, started;
	struct ent *ents;            /* PAGE_LIMIT */
	size_t n, idx;
	uint8_t after_oid[64];       /* last key of the last page */
	uint8_t after_len;
	uint32_t after_shard, after_pg;
	struct scan *s;
	uint8_t slot;
};

struct bad {
	uint8_t oid[64];
	uint8_t oid_len;
	uint8_t slot;
};

struct job;
struct getctx {
	struct job *j;
	uint8_t slot;
};

struct job {
	struct scan *s;
	bool used;
	uint8_t oid[64];
	uint8_t oid_len;
	uint64_t len;
	uint32_t present, missing, fetched, tried, bad_src;
	bool gone;                   /* a source said NOT_FOUND: deleted meanwhile */
	uint32_t crc[16];
	unsigned pending;            /* calls in flight */
	bool failed;                 /* a put or a source failed: stripe not done */
	struct buf *buf;             /* width * len */
	struct getctx ctx[16];
	struct job *next_wait;       /* token bucket queue */
	bool waiting;
	bool deep;                   /* a deep scrub: fetch all k+m, compare, fix one */
	uint64_t cost;               /* token bucket charge: bytes written, or read (deep) */
};

struct scan {
	struct osd_recover *r;
	bool used;
	uint32_t pg;
	struct osd_recover_sig sig;
	uint64_t epoch;
	unsigned k, m;
	enum phase phase;
	struct cursor cur[16];
	struct bad *bads;
	size_t n_bads;
	unsigned pending;            /* listing calls in flight */
	unsigned jobs;               /* jobs in use */
	bool failed;                 /* a call failed: wind down, retry later */
	bool superseded;             /* signature moved: wind down, requeue */
	bool recovering;             /* some missing slot holds an OSD new to it */
	uint64_t errors;             /* inconsistent stripes this scan */
	uint64_t failed_stripes;     /* rebuilds that did not complete */
	bool in_step;                /* scan_step is on the stack */
	bool count_only;             /* BAD and COUNT only: size the work first */
	bool skip_count;             /* BAD then REBUILD: a count of this signature stands */
	bool deep;                   /* DEEP after a COUNT that found nothing to rebuild */
	/* The unfound stripes' 16-byte gw_data ids (COUNT; at most
	 * UNFOUND_IDS_MAX, distinct), asked of meta (CheckShards) once the
	 * COUNT ends: the referenced ones are live objects unreadable now. */
	uint8_t (*unf_ids)[SHARD_DATA_ID_LEN];
	size_t n_unf;
	bool unf_asked;
	uint64_t deep_failed;        /* deep jobs that did not complete (retry soon) */
	uint64_t deep_stripes, deep_repaired, deep_inconsistent; /* this scan's, for its log */
	struct job job[MAX_JOBS];
};

struct pgst {
	bool primary, queued, active, flagged, have_clean;
	struct osd_recover_sig clean;  /* signature of the last finished scan */
	struct osd_recover_sig cur;    /* in the current map */
	uint64_t epoch;                /* of the signature reported */
	struct osd_recover_sig rep;    /* signature the report describes */
	const char *state;
	uint64_t stripes, stripes_missing, bytes_missing, stripes_done, bytes_done;
	uint64_t unfound, bad_shards;
	/* Of the unfound, stripes of objects meta says are live (acknowledged
	 * data not readable now), as the last check found (kept across scans
	 * until the next check), and the backoff of the rescans that look again. */
	uint64_t unfound_live;
	uint32_t unfound_backoff_ms;
	uint32_t min_shards;
	uint64_t scan_started_ms, last_clean_ms, last_scan_end_ms, retry_at_ms;
	uint32_t backoff_ms;
	/* A count-only scan sized this signature's work (its counters stand
	 * until the rebuild): every queued PG is counted before any is
	 * rebuilt, so bytes_missing, and the ETA meta derives from it, cover
	 * the whole recovery from its start, not only the PGs being worked. */
	bool counted, count_recovering;
	struct osd_recover_sig counted_sig;
	uint64_t rebuild_started_ms;   /* loop ms its REBUILD phase began; 0: none */
	double rate;                   /* bytes/s of that rebuild so far; 0 when idle */
	/* Deep scrub (in memory: a restart staggers every PG anew): due at
	 * deep_due_ms (loop ms; 0: not scheduled, set on becoming primary);
	 * deep_wanted: the next scan of the PG runs the DEEP phase. */
	uint64_t deep_due_ms, last_deep_ms;
	bool deep_wanted;
};

struct osd_recover {
	uv_loop_t *loop;
	uint32_t osd_id;
	struct osd_recover_opts o;
	struct meta_mapwatch *mw;
	struct meta_client *mc;
	struct ec_code *ec;
	unsigned k, m;
	uint64_t epoch;

	struct pgst *pgs;
	uint32_t n_pgs;
	struct scan *scans;          /* max_pgs */

	uv_timer_t tick, wake, kick; /* wake: token bucket; kick: pump after a scan */
	double tokens;
	uint64_t tokens_ms;
	struct job *wait_head, *wait_tail;

	uint64_t next_report_ms, next_flag_ms;
	/* This OSD's round of work: from the tick that first saw bytes to
	 * rebuild to the one that saw none; its rate is the bytes rebuilt
	 * since over the time since (at least 1 s), for ReportPgs. */
	uint64_t busy_since_ms, busy_bytes0;
	uint64_t osd_rate;
	bool report_inflight, flag_inflight, unimpl_logged;
	uint32_t flags[FLAG_MAX];
	size_t n_flags;

	/* The strays (recover_stray.c): one round at a time, one call in
	 * flight; stray_mode[pg] = what the round does with this OSD's
	 * shards of pg (STRAY_KEEP, STRAY_DROP: meta called pg active+clean
	 * at stray_epoch without this OSD; STRAY_PUSH: its report counts
	 * unfound stripes). */
	bool stray_busy, stray_failed, stray_skipped;
	unsigned stray_calls;         /* 0 or 1: PgStats, ListShards, CheckShards,
	                               * StatShards, GetShard, PutShard or DeleteShard */
	uint64_t stray_epoch, stray_epoch_done, stray_next_ms, stray_deleted_round;
	uint64_t stray_pushed_round, stray_pushed_pg;
	uint8_t *stray_mode;
	/* Per PG (n_pgs): the report (epoch, unfound) of its last push that
	 * moved nothing: pushed again only once that report changes. */
	uint64_t *stray_push_seen;
	uint32_t stray_pg;
	unsigned stray_n, stray_i;
	/* A push's page: where the next listing starts, whether the PG has
	 * more, which phase (recover_stray.c), the StatShards target. */
	bool stray_have_after, stray_more;
	int stray_phase;
	uint32_t stray_target;
	struct stray_key {
		uint32_t shard;
		uint8_t oid_len;
		uint8_t oid[64];
		uint32_t crc;
		uint64_t len;
		bool live;            /* CheckShards: its object is referenced */
		bool statted;         /* its slot's OSD answered StatShards for it */
		bool missing;         /* ... with NOT_FOUND: to push */
	} stray_keys[64], stray_after;

	bool stopping;
	unsigned handles;
	bool closing_handles;
	void (*done_cb)(void *arg);
	void *done_arg;

	struct osd_recover_stats st;
	char id_label[12];
	struct metrics_counter *m_bytes, *m_stripes, *m_errors;
	struct metrics_gauge *m_primary, *m_active, *m_missing;
	struct metrics_counter *m_deep_stripes, *m_deep_bytes, *m_deep_repaired,
		*m_deep_inconsistent, *m_deep_pgs;
};

static inline uint64_t unix_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static inline unsigned popcount(uint32_t x)
{
	return (unsigned)__builtin_popcount(x);
}

/* recover_scan.c: start a scan of pg in the free slot s (the PG is
 * primary, queued and not active). count_only: list and count, rebuild
 * nothing (the PG stays queued when it found work). */
void osd_recover_scan_start(struct osd_recover *r, struct scan *s, uint32_t pg, bool count_only);

/* recover_scan.c: end every job waiting for tokens (at stop). */
void osd_recover_scan_drop_waiters(struct osd_recover *r);

/* recover.c: a scan ended (r->st.pgs_active already decremented): start
 * the next from a clean stack, or finish stopping. */
void osd_recover_scan_ended(struct osd_recover *r);

/* recover_stray.c: from the tick: start a stray round when one is
 * due (the map moved since the last complete one, or a retry is due) and
 * no scan runs. */
void osd_recover_stray_tick(struct osd_recover *r, uint64_t now);

/* recover.c: a stray call ended while stopping: finish stopping when
 * nothing else is in flight. */
void osd_recover_stray_stopped(struct osd_recover *r);

#endif
