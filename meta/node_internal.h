/*
 * node_internal.h — what node.c (Raft, group commit, reads, liveness) and
 * service.c (the Meta RPC handlers) share. Not for other modules: they use
 * meta/node.h. Everything here runs on the node's loop.
 */
#ifndef META_NODE_INTERNAL_H
#define META_NODE_INTERNAL_H

#include <raft.h>
#include <raft/uv.h>

#include "common/loop.h"
#include "common/rpc.h"
#include "meta/node.h"
#include "meta/pgstate.h"
#include "meta/snap.h"

struct meta_node;

/* FlagPgs reasons counted apart (iolake_pg_flags_total{reason}); anything
 * else counts as "other". */
#define NODE_FLAG_REASONS 4
extern const char *const node_flag_reasons[NODE_FLAG_REASONS];

/* One Submit call (or a leader-internal op, req NULL) waiting for its
 * entry. ops point into the call's request message, valid until the call
 * is answered. */
struct sub {
	struct sub *next;
	struct rpc_req *req;
	Iolake__Meta__Op **ops;
	size_t n_ops;
	size_t bytes;                  /* packed size of the ops, framing slack included */
	void (*done)(struct meta_node *n, struct sub *s, int err);   /* internal ops */
};

/* An entry proposed by this member and not yet applied. */
struct inflight {
	struct raft_apply req;         /* req.index: the entry's index */
	struct inflight *next;
	struct meta_node *n;
	struct sub *subs;              /* in op order */
	size_t n_ops;
	struct meta_op_result *res;    /* filled by the FSM when it applies the entry */
	uint64_t term;                 /* current term when proposed */
	bool applied;
};

/* A linearizable read waiting for a barrier. */
struct read_req {
	struct read_req *next;
	struct rpc_req *req;
	unsigned method;
};

struct barrier {
	struct raft_barrier req;
	struct meta_node *n;
	struct read_req *reads;
	size_t count;
	uint64_t term;                 /* current term when proposed */
};

struct read_round;                 /* node_read.c */

/* A peer voter's RPC channel for ReadIndex rounds. */
struct node_peer_ch {
	uint64_t id;
	char addr[META_NODE_ADDR_MAX]; /* RPC address: its Raft address, port - 1 */
	struct rpc_channel *ch;        /* NULL: slot free */
};

/* Last beat of an OSD (leader memory only). */
struct beat {
	uint32_t id;
	uint64_t last_ms;              /* loop_now_ms of the last beat; 0: none */
	uint64_t down_proposed_ms;     /* last down/out SetOsdState proposed */
	uint64_t up_proposed_ms;       /* last up/in SetOsdState proposed */
};

/* A parked WatchMap call. */
struct watch {
	struct watch *next;
	struct rpc_req *req;
	uint64_t epoch;
	uint64_t deadline_ms;
};

/* A Status call waiting for the state digest. */
struct digest_wait {
	struct digest_wait *next;
	struct rpc_req *req;
};

/* A membership change in progress (AddMember / RemoveMember). */
struct change {
	struct raft_change c;
	struct change *next;
	struct meta_node *n;
	struct rpc_req *req;
	uint64_t id;
	bool add;
};

struct meta_node {
	uv_loop_t *loop;
	struct meta_node_opts o;       /* defaults filled; peers not kept */
	void *peers_copy;
	char dir[512];
	char rpc_addr[META_NODE_ADDR_MAX];
	char raft_addr[META_NODE_ADDR_MAX];
	struct meta_state *state;

	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport transport;
	struct raft_fsm fsm;
	bool started;                  /* raft_start returned: restores now come from a leader */

	struct rpc_server *srv;
	uv_timer_t tick;               /* leadership poll, OSD sweep, watch expiry */
	uv_timer_t kick;               /* deferred flush / barrier / map refresh */
	bool kick_armed;

	/* group commit */
	struct sub *q_head, *q_tail;
	size_t q_ops;
	struct inflight *inflight;
	unsigned n_inflight;
	struct meta_op_result *res;    /* FSM scratch, META_BATCH_MAX_OPS */
	Iolake__Meta__Op **batch_ops;  /* flush scratch, META_BATCH_MAX_OPS */
	uint64_t entries_proposed, ops_committed;
	uint64_t read_barriers, read_rounds;

	/* reads (node_read.c) */
	struct read_req *r_head, *r_tail;
	size_t n_reads;                /* queued + under a barrier or round */
	bool barrier_inflight;
	uint64_t read_term;            /* a barrier of this term committed: rounds allowed */
	struct read_round *round;      /* confirming, at most one */
	struct read_round *ready, *ready_tail; /* confirmed, waiting for the applied index */
	struct node_peer_ch peer_ch[META_NODE_MAX_PEERS];

	/* map */
	uint64_t epoch;
	bool map_dirty;                /* an apply or restore changed it */
	Iolake__Meta__ClusterMap *map; /* cached, refreshed on the kick */
	struct watch *watches;
	size_t n_watches;
	bool init_map_pending;

	/* leadership and liveness */
	int role;
	uint64_t leader_id;
	uint64_t leader_since_ms;
	uint64_t last_sweep_ms;
	struct beat *beats;
	size_t n_beats, cap_beats;
	struct change *changes;
	uint64_t restores;

	/* PG health (leader memory, dropped on every leadership change) */
	struct meta_pgstate *pgs;
	uint64_t last_pg_metrics_ms;

	/* Status digest: one state scan at a time on the libuv pool; the
	 * last result is kept while the state stays at dg_index. */
	uv_work_t dg_work;
	bool dg_busy, dg_valid;
	unsigned dg_tries;
	int dg_rc;                     /* the scan's result (worker writes it) */
	uint8_t dg_raw[32];
	uint64_t dg_index, dg_restores; /* applied "A" and restores the scan started at */
	char dg_hex[65];
	struct digest_wait *dg_waiters;
	size_t dg_n_waiters;           /* at most META_NODE_DIGEST_WAITERS */

	/* file snapshots (meta/snap.h) */
	char snap_dir[600];            /* DIR/snap */
	struct snap_desc snap_last;    /* the last snapshot taken or installed;
	                                * applied_index 0: none */
	struct snap_take_job *snap_job;  /* between fsm snapshot and finalize */
	bool snap_reuse;               /* that one reuses snap_last: no checkpoint */
	uint64_t snap_bytes_since;     /* command bytes applied since the last one */
	bool snap_lowered;             /* raft's entry threshold lowered to 1 */
	struct {
		char name[SNAP_NAME_MAX];
		uint64_t at_ms;
	} snap_pins[SNAP_PINS];        /* checkpoints fetched from us lately */
	uint64_t snaps_taken, fetch_bytes, last_install_ms;

	/* metrics */
	struct metrics_registry *metrics;
	bool own_metrics;
	struct metrics_gauge *m_term, *m_commit, *m_applied, *m_is_leader, *m_epoch;
	struct metrics_counter *m_leader_changes, *m_entries, *m_ops, *m_snapshots, *m_restores;
	struct metrics_histogram *m_apply_us, *m_batch_ops;
	struct metrics_gauge *m_pg_state[META_PG__COUNT];
	struct metrics_gauge *m_rec_bytes, *m_rec_stripes, *m_rec_rate, *m_rec_eta, *m_unfound;
	struct metrics_counter *m_pg_flags[NODE_FLAG_REASONS];
	struct metrics_counter *m_pg_reports, *m_pg_reports_bad;
	struct metrics_counter *m_read_barriers, *m_read_rounds, *m_read_rounds_failed;
	struct metrics_gauge *m_last_index;
	struct metrics_gauge *m_snap_bytes;
	struct metrics_counter *m_fetch_bytes;
	struct metrics_histogram *m_snap_seconds;

	/* closing */
	bool closing;
	bool raft_closed;              /* the state waits for a digest scan to end */
	int close_pending;
	void (*close_cb)(void *ud);
	void *close_ud;
};

/* node.c */
uint64_t node_wall_ms(void);
bool node_is_leader(struct meta_node *n);
void node_leader_addr(struct meta_node *n, uint64_t *id, char out[META_NODE_ADDR_MAX]);
void node_fail_not_leader(struct meta_node *n, struct rpc_req *r);
void node_kick(struct meta_node *n);
void node_on_kick(uv_timer_t *t);
void node_flush(struct meta_node *n);
/* Queue s for the next entry. 0, or -EAGAIN when the queue is full (s
 * stays the caller's). */
int node_enqueue(struct meta_node *n, struct sub *s);
/* node_read.c. Queue a linearizable read for the next ReadIndex round (or
 * barrier). 0, -EAGAIN (full), -ENOMEM. */
int node_queue_read(struct meta_node *n, struct rpc_req *r, unsigned method);
/* Serve confirmed reads the applied index reached; start the next round
 * for the queued ones. On the kick (never from inside libraft). */
void node_start_reads(struct meta_node *n);
/* Closing: fail every read, close the peer channels. */
void node_reads_close(struct meta_node *n);
/* Answer ConfirmLeader r. */
void node_confirm_leader(struct meta_node *n, struct rpc_req *r);
uint64_t node_read_epoch(struct meta_node *n);
/* Answer Status r with the state digest: now when the last one still
 * covers the applied state, else once a scan off the loop has ended. */
void node_status_digest(struct meta_node *n, struct rpc_req *r);
struct beat *node_beat(struct meta_node *n, uint32_t id, bool create);
void node_osd_beat(struct meta_node *n, const Iolake__Meta__OsdInfo *osd);

/* Leader: set the PG state and recovery gauges from the PG table (zero
 * them on a follower). */
void node_pg_metrics(struct meta_node *n, uint64_t now_ms);

/* Remember that checkpoint `name` is being fetched from this member: the
 * next snapshots do not prune it for SNAP_PIN_MS. */
void node_snap_pin(struct meta_node *n, const char *name);

/* service.c */
int node_service_register(struct meta_node *n);
/* Answer Status with the member's view and this digest ("" when none)
 * of the state at applied index digest_index. */
void node_status_respond(struct meta_node *n, struct rpc_req *r, const char *digest,
			 uint64_t digest_index);
/* Answer a read now, from the applied state. */
void node_serve_read(struct meta_node *n, struct rpc_req *r, unsigned method);
/* Answer watches whose epoch is passed (all of them when closing). */
void node_wake_watches(struct meta_node *n, bool closing);
void node_expire_watches(struct meta_node *n, uint64_t now_ms);
void node_cancel_changes(struct meta_node *n);

#endif
