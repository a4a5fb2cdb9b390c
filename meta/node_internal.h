/*
 * node_internal.h — what the files of a meta member share: node.c (the
 * member), group.c (one Raft group), hosting.c (the member's table of
 * groups: their lifecycle from the root's state, leader spread),
 * node_read.c (linearizable reads), service.c (the Meta RPC handlers) and
 * service_read.c (reads answered from a group's state) and node_direct.c
 * (reads from other threads of the same process).
 * Not for other modules: they use meta/node.h. Everything here runs on the
 * member's loop except node_direct_acquire and node_direct_release (any
 * thread).
 *
 * A member (struct meta_node) owns the loop's timers, the RPC server, the
 * Raft transport multiplexer (one port for every group), the shared
 * RocksDB block cache, the table of the groups it hosts and what only the
 * root group's leader does (OSD liveness, the map cache and WatchMap, PG
 * health, membership changes). A group (struct meta_group) owns what is
 * per Raft group: raft and its raft_uv, transport and FSM, its meta_state,
 * its group-commit queue and entries in flight, its reads, snapshots,
 * digest, view of its leader, and its metrics. Group 0 is the root.
 */
#ifndef META_NODE_INTERNAL_H
#define META_NODE_INTERNAL_H

#include <pthread.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdatomic.h>

#include "common/loop.h"
#include "common/rpc.h"
#include "meta/node.h"
#include "meta/pgstate.h"
#include "meta/range_heat.h"
#include "meta/raft_mux.h"
#include "meta/snap.h"

struct meta_node;
struct meta_group;

/* FlagPgs reasons counted apart (iolake_pg_flags_total{reason}); anything
 * else counts as "other". */
#define NODE_FLAG_REASONS 4
extern const char *const node_flag_reasons[NODE_FLAG_REASONS];

#define GROUP_DIR_MAX 560              /* DIR or DIR/groups/<id> */
#define GROUP_MIN_WRITE_BUFFER (4ull << 20)   /* memtable floor of groups >= 1 */
#define GROUP_MAX_OPEN_FILES 64        /* RocksDB table files of groups >= 1 */
#define GROUP_MANIFEST_BYTES (64u << 10)   /* RocksDB MANIFEST preallocation, groups >= 1 */
#define NODE_PEER_CHANNELS 16        /* peers a member keeps a channel to */
#define SPREAD_INTERVAL_MS 1000        /* leader spread: one look a second */
#define SPREAD_GROUP_QUIET_MS 5000     /* at most one transfer per group per this */

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
	struct meta_group *g;
	struct sub *subs;              /* in op order */
	size_t n_ops;
	struct meta_op_result *res;    /* filled by the FSM when it applies the entry */
	uint64_t term;                 /* current term when proposed */
	bool applied;
};

/* A linearizable read waiting for a ReadIndex round or a barrier. */
struct read_req {
	struct read_req *next;
	struct rpc_req *req;
	unsigned method;
};

struct barrier {
	struct raft_barrier req;
	struct meta_group *g;
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

/* A membership change of the root group in progress (AddMember /
 * RemoveMember). */
struct change {
	struct raft_change c;
	struct change *next;
	struct meta_node *n;
	struct rpc_req *req;
	uint64_t id;
	bool add;
	/* remove: the range groups drop the member first (group_members.c),
	 * until drained or drain_deadline_ms, then the root's raft_remove */
	bool draining;
	bool drained;                  /* seen drained: a grace for the member to hear it */
	uint64_t drain_deadline_ms;
};

/* A group's metrics. The root's carry {member} (the series of a member
 * before groups existed); a group >= 1 registers a subset with {member,
 * group}, the others stay NULL (the m_* helpers skip them). */
struct group_metrics {
	struct metrics_gauge *term, *commit, *applied, *is_leader, *last_index;
	struct metrics_counter *leader_changes, *entries, *ops, *snapshots, *restores;
	struct metrics_gauge *installing;   /* a snapshot install running: 1 */
	struct metrics_histogram *apply_us, *batch_ops;
	struct metrics_gauge *snap_bytes;
	struct metrics_counter *fetch_bytes;
	struct metrics_histogram *snap_seconds;
	struct metrics_counter *read_barriers, *read_rounds, *read_rounds_failed;
	struct metrics_gauge *ranges;   /* key ranges the root's table gives it */
	struct metrics_gauge *mem_tables;  /* its RocksDB's memtables */
	struct metrics_gauge *mem_cache;   /* root only: the member's shared block cache */
};

static inline void m_add(struct metrics_counter *c, uint64_t v)
{
	if (c)
		metrics_counter_add(c, v);
}
static inline void m_inc(struct metrics_counter *c)
{
	m_add(c, 1);
}
static inline void m_set(struct metrics_gauge *g, int64_t v)
{
	if (g)
		metrics_gauge_set(g, v);
}
static inline void m_observe(struct metrics_histogram *h, uint64_t v)
{
	if (h)
		metrics_histogram_observe(h, v);
}

/* One Raft group hosted by this member. */
struct meta_group {
	struct meta_node *n;
	uint64_t id;                   /* 0: the root */
	char dir[GROUP_DIR_MAX];       /* DIR (root) or DIR/groups/<id> */
	struct meta_state *state;

	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport transport;   /* on the member's mux, for this id */
	struct raft_fsm fsm;
	bool started;                  /* raft_start returned: restores now come from a leader */
	unsigned snapshot_threshold;   /* entries */
	uint64_t snapshot_bytes;       /* or command bytes applied */

	/* deferred work: on the member's kick list */
	bool kicked;
	struct meta_group *kick_next;

	/* group commit */
	struct sub *q_head, *q_tail;
	size_t q_ops;
	struct inflight *inflight;
	unsigned n_inflight;
	uint64_t entries_proposed, ops_committed;
	uint64_t read_barriers, read_rounds;

	/* reads (node_read.c) */
	struct read_req *r_head, *r_tail;
	size_t n_reads;                /* queued + under a barrier or round */
	bool barrier_inflight;
	uint64_t read_term;            /* a barrier of this term committed: rounds allowed */
	struct read_round *round;      /* confirming, at most one */
	struct read_round *ready, *ready_tail; /* confirmed, waiting for the applied index */

	/* leadership, as the tick last saw it */
	int role;
	uint64_t leader_id;
	uint64_t restores;

	/* leader spread (hosting.c): one transfer at a time */
	struct raft_transfer xfer;
	bool xfer_busy;
	uint64_t xfer_ms;              /* when the last transfer of this group started */
	uint64_t mem_gauges_ms;        /* group_tick: when the RocksDB memory gauges were read */

	/* membership (group_members.c): the leader's one change at a time
	 * toward the members the root's table gives the group */
	struct raft_change mchange;
	bool mchange_busy;
	uint64_t mchange_retry_ms;     /* after a refused or failed change: not before */

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
	char snap_dir[GROUP_DIR_MAX + 8];   /* <dir>/snap */
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
	atomic_bool snap_taking;       /* a checkpoint job between snapshot and finalize */
	struct group_install *inst;    /* a snapshot being installed off the loop, or NULL */

	struct group_metrics m;

	/* Load per open range (meta/range_heat.h): counted while this member
	 * leads a range group; made on the first request counted. */
	struct range_heat *heat;

	/* closing */
	bool closing;
	bool raft_closed;              /* the state waits for a digest scan to end */
	bool remove_dir;               /* deleted: remove dir once closed */
	int close_pending;
	struct meta_group *close_next; /* on the member's closing list */
};

struct meta_node {
	uv_loop_t *loop;
	struct meta_node_opts o;       /* defaults filled; peers not kept */
	char dir[512];
	char rpc_addr[META_NODE_ADDR_MAX];
	char raft_addr[META_NODE_ADDR_MAX];
	struct raft_mux *mux;          /* every group's Raft transport: RPC port + 1 */
	struct meta_state_cache *cache;   /* one block cache for every group's state */

	struct rpc_server *srv;
	struct rpc_server *admin_srv;  /* opts.admin_listen's; NULL: none */
	uv_timer_t tick;               /* leadership poll, OSD sweep, watch expiry */
	uv_timer_t kick;               /* deferred flush / reads / map refresh / groups */
	/* Issue 19 (group commit, measured): the root's entries applied in
	 * one loop turn, i.e. made committed by one log write (on a single
	 * voter) or one replication round; the check handle closes the count
	 * after the turn's callbacks. */
	uv_check_t commit_turn;
	unsigned turn_entries;
	struct metrics_histogram *m_entries_per_commit;
	bool kick_armed;
	struct meta_group *kicked;     /* groups with deferred work */

	/* groups (hosting.c): sorted by id, the root first */
	struct meta_group *root;
	struct meta_group **groups;
	size_t n_groups, cap_groups;
	struct meta_group *closing_groups;
	bool groups_dirty;             /* the root's table changed: reconcile on the kick */
	uint64_t groups_retry_ms;      /* a group failed to open: reconcile again then */
	unsigned rm_busy;              /* group dirs being removed off the loop */
	uint64_t last_spread_ms;
	uint64_t spread_transfers;     /* leadership transfers started by the spread */

	/* RPC channels to peers (ReadIndex rounds and forwarding, every group) */
	struct node_peer_ch peer_ch[NODE_PEER_CHANNELS];

	/* forwarding (node_fwd.c): calls and request bytes in flight */
	size_t fwd_calls, fwd_bytes;
	uint64_t fwd_total;
	struct metrics_counter *m_fwd, *m_fwd_refused;
	struct metrics_gauge *m_fwd_bytes;

	/* FSM and flush scratch, shared by the groups (one loop, no re-entry) */
	struct meta_op_result *res;    /* META_BATCH_MAX_OPS */
	Iolake__Meta__Op **batch_ops;  /* META_BATCH_MAX_OPS */

	/* map (root) */
	uint64_t epoch;
	bool map_dirty;                /* an apply or restore changed it */
	Iolake__Meta__ClusterMap *map; /* cached, refreshed on the kick */
	struct watch *watches;
	size_t n_watches;
	bool init_map_pending;
	unsigned range_group_pending;  /* CreateGroups of the range keeper in flight */
	struct node_mover *mover;      /* node_move.c: moves of records (root leader) */
	uint64_t last_range_keep_ms;
	bool members_pending;          /* group_members.c: a root op of ours in flight */
	uint64_t members_leaving;      /* a RemoveMember draining it out of the groups; 0: none */
	uint64_t last_members_ms;

	/* root leadership and OSD liveness */
	uint64_t leader_since_ms;
	uint64_t last_sweep_ms;
	struct beat *beats;
	size_t n_beats, cap_beats;
	struct change *changes;

	/* PG health (leader memory, dropped on every leadership change) */
	struct meta_pgstate *pgs;
	uint64_t last_pg_metrics_ms;

	/* metrics */
	struct metrics_registry *metrics;
	bool own_metrics;
	struct metrics_gauge *m_epoch;
	struct metrics_gauge *m_pg_state[META_PG__COUNT];
	struct metrics_gauge *m_rec_bytes, *m_rec_stripes, *m_rec_rate, *m_rec_eta, *m_unfound,
		*m_unfound_live;
	struct metrics_counter *m_pg_flags[NODE_FLAG_REASONS];
	struct metrics_counter *m_pg_reports, *m_pg_reports_bad;
	struct metrics_gauge *m_groups;

	/* Direct reads (node_direct.c): the root published for reads on
	 * callers' threads. direct_g is written by the loop under direct_lk
	 * held for writing, read by callers under it held for reading (the
	 * loop reads it bare). */
	pthread_rwlock_t direct_lk;
	struct meta_group *direct_g;   /* NULL: every read goes through the loop */
	struct metrics_counter *m_direct_reads;   /* answered directly (any thread) */

	/* closing */
	bool closing;
	int close_pending;
	void (*close_cb)(void *ud);
	void *close_ud;
};

/* ------------------------------------------------------------ node.c */
uint64_t node_wall_ms(void);
/* Whether this member leads the root group. */
bool node_is_leader(struct meta_node *n);
/* While the member closes: one of the things meta_node_close waits for
 * (a group closing, a group dir being removed) is done. */
void node_close_step(struct meta_node *n);
/* Arm the member's kick: deferred work runs on the next loop turn
 * (callbacks from inside libraft must not re-enter it). */
void node_kick(struct meta_node *n);
/* The root applied ops (results res[0..nops)): map epoch, group table. */
void node_root_applied(struct meta_node *n, const struct meta_op_result *res, int nops);
/* The root's state was replaced by a snapshot install. */
void node_root_restored(struct meta_node *n);
uint64_t node_read_epoch(struct meta_node *n);
struct beat *node_beat(struct meta_node *n, uint32_t id, bool create);
void node_osd_beat(struct meta_node *n, const Iolake__Meta__OsdInfo *osd);
/* Leader: set the PG state and recovery gauges from the PG table (zero
 * them on a follower). */
void node_pg_metrics(struct meta_node *n, uint64_t now_ms);

/* ------------------------------------------------------------ group.c */
/* Open group id under the member (the root: DIR, else DIR/groups/<id>,
 * created), its state on the shared cache and its raft on the mux, and
 * start it. boot: the configuration to bootstrap when the log is empty
 * (RAFT_CANTBOOTSTRAP, a restart, is fine), or NULL (join: never). 0 and
 * *out; else a negative error, and whatever was started is closed on its
 * own (the member counts it on its closing list until it is). */
int group_open(struct meta_node *n, uint64_t id, const struct raft_configuration *boot,
	       struct meta_group **out);
/* Fail everything queued on g, close its raft and its state; the member
 * hears of the end through hosting_group_closed. remove_dir: a deleted
 * group, whose directory goes too. */
void group_close(struct meta_group *g, bool remove_dir);
/* Free a group hosting_group_closed was handed. */
void group_free(struct meta_group *g);
bool group_is_leader(struct meta_group *g);
/* The leader's RPC address as this member knows it ("" when none). */
void group_leader_addr(struct meta_group *g, uint64_t *id, char out[META_NODE_ADDR_MAX]);
/* FAILED_PRECONDITION "not leader; leader=HOST:PORT" (this group's). */
void group_fail_not_leader(struct meta_group *g, struct rpc_req *r);
/* Run g's flush and reads on the member's next kick. */
void group_kick(struct meta_group *g);
/* The kick's work for g: propose queued calls, serve and start reads. */
void group_on_kick(struct meta_group *g);
/* Poll raft (libraft has no leadership callback): role and leader, and
 * the group's gauges. Returns the role the previous tick saw. */
int group_tick(struct meta_group *g, uint64_t now_ms);
/* Propose queued calls while the pipeline has room. */
void group_flush(struct meta_group *g);
/* Queue s for the next entry. 0, or -EAGAIN when the queue is full (s
 * stays the caller's). */
int group_enqueue(struct meta_group *g, struct sub *s);
void group_info(struct meta_group *g, struct meta_node_info *out);
/* Answer Status r with the group's state digest: now when the last one
 * still covers the applied state, else once a scan off the loop ended. */
void group_status_digest(struct meta_group *g, struct rpc_req *r);
/* Remember that checkpoint `name` is being fetched from this member: the
 * next snapshots do not prune it for SNAP_PIN_MS. */
void group_snap_pin(struct meta_group *g, const char *name);
/* group_snap.c: set g->fsm's snapshot, snapshot_async (when g->io has
 * async_work), snapshot_finalize and restore. */
void group_snap_fsm(struct meta_group *g);
/* Apply one committed entry at index to g's state (fsm apply's body; also
 * the entries kept while a snapshot was installed). */
void group_apply_entry(struct meta_group *g, uint64_t index, const void *base, size_t len);

/* ------------------------------------------------------------ group_install.c */
/* Install snapshot descriptor d (moved: d is left empty) into g's state:
 * on a thread of its own once the member runs (returns at once; g->inst
 * is set until it ends), here at start. While one runs, a newer d
 * replaces it. 0, or a negative error (at start: the install's). */
int group_install(struct meta_group *g, struct snap_desc *d);
/* fsm apply while g->inst: keep the entry for after the install. false
 * when it could not be kept: the install was waited for here instead,
 * and the caller applies the entry. */
bool group_install_defer(struct meta_group *g, uint64_t index, const void *base, size_t len);
/* On the tick: finish an install whose job ended. */
void group_install_poll(struct meta_group *g);
/* On the kick: apply the next slice of the entries kept during an
 * install that has loaded its checkpoint. */
void group_install_drain(struct meta_group *g);
/* Closing: cancel a running install and wait for its thread. */
void group_install_stop(struct meta_group *g);
/* The index applied to g's state as reads may rely on it: libraft's, but
 * while an install runs the one from before it. */
uint64_t group_applied(struct meta_group *g);
/* The state's "A" (meta_state_applied_index); while an install runs, the
 * index from before it (the job's thread owns the state). */
uint64_t group_state_applied(struct meta_group *g);

/* ------------------------------------------------------------ hosting.c */
/* The hosted group with this id, or NULL (not hosted, or closing). */
struct meta_group *hosting_find(struct meta_node *n, uint64_t id);
/* Add g to the table (sorted by id). 0 or -ENOMEM. */
int hosting_add(struct meta_node *n, struct meta_group *g);
/* Start what the root's table gives this member and close what it no
 * longer does (deleted groups' dirs removed). On the kick, never from
 * inside libraft; also at start, after the root's state opened. */
void hosting_reconcile(struct meta_node *n);
/* A group closed by group_close is done: free it (and its dir, when
 * deleted). */
void hosting_group_closed(struct meta_group *g);
/* Leader spread: when this member leads more than its share of the
 * groups it hosts, transfer one to the member leading the fewest. On the
 * tick. */
void hosting_spread(struct meta_node *n, uint64_t now_ms);

/* ------------------------------------------------------------ node_read.c */
/* Queue a linearizable read of g for the next ReadIndex round (or
 * barrier). 0, -EAGAIN (full), -ENOMEM. */
int node_queue_read(struct meta_group *g, struct rpc_req *r, unsigned method);
/* Serve confirmed reads the applied index reached; start the next round
 * for the queued ones. On the kick (never from inside libraft). */
void node_start_reads(struct meta_group *g);
/* Closing g: fail every read (a round in flight is left to its answers). */
void node_reads_close(struct meta_group *g);
/* Closing the member, after its groups: close the peer channels. */
void node_peers_close(struct meta_node *n);
/* Answer ConfirmLeader r (for the group it names). */
void node_confirm_leader(struct meta_node *n, struct rpc_req *r);
/* The RPC channel to voter id at Raft address raft_addr (its RPC address
 * is one port below), opened on first use, reopened if it moved; NULL
 * when no slot is free. Shared by ReadIndex rounds and forwarding. */
struct rpc_channel *node_peer_channel(struct meta_node *n, uint64_t id, const char *raft_addr);

/* ------------------------------------------------------------ node_fwd.c */
/* A follower's Submit or linearizable read r of g (method): pass it to
 * g's leader and relay the answer (the leader's "not leader" redirect,
 * if it lost the lead meanwhile, included). 0: forwarded (r is answered
 * later); else r is untouched and the caller answers the redirect: no
 * leader known, r was forwarded already (one hop at most), its message
 * has no `forwarded` field (20), the bytes in flight are at their bound
 * (NODE_FWD_MAX_BYTES) or r's deadline is too near. */
int node_forward(struct meta_group *g, struct rpc_req *r, unsigned method);
/* Whether r came forwarded from a follower (its `forwarded` field). */
bool node_req_forwarded(const struct rpc_req *r);

/* ------------------------------------------------------------ node_direct.c
 * Linearizable reads on the caller's thread (in process, rpc_local's
 * direct handlers): the root is published while its state alone answers
 * as the loop would (see node_direct.c). */
/* Loop: publish or withdraw the root as its state says now. */
void node_direct_update(struct meta_node *n);
/* Loop: withdraw it now (before a change that ends eligibility: a
 * membership change, an install, closing); the next update may publish
 * it again. Returns once no caller reads through it. */
void node_direct_withdraw(struct meta_node *n);
/* Any thread: the published group with id gid held for a direct read,
 * or NULL (decline). A non-NULL one is released by node_direct_release,
 * after the reader's last row; nothing may block or call in between. */
struct meta_group *node_direct_acquire(struct meta_node *n, uint64_t gid);
void node_direct_release(struct meta_node *n);
void node_direct_init(struct meta_node *n);
void node_direct_free(struct meta_node *n);

/* ------------------------------------------------------------ service.c */
int node_service_register(struct meta_node *n);
/* Answer Status with g's view and this digest ("" when none) of its state
 * at applied index digest_index, and every hosted group's summary. */
void node_status_respond(struct meta_group *g, struct rpc_req *r, const char *digest,
			 uint64_t digest_index);
/* service_read.c. Answer a read of g now, from its applied state. */
void node_serve_read(struct meta_group *g, struct rpc_req *r, unsigned method);

/* node_range.c. Whether range range_id is open in g, of bucket, and covers
 * key (NULL: any key): 0 (and *out, when out is not NULL, to free with
 * meta_state_free_msg), META_EWRONG_RANGE, or a storage error. */
int node_range_gate(struct meta_group *g, uint64_t range_id, const char *bucket, const char *key,
		    Iolake__Meta__RangeDesc **out);
/* GetRanges: the root's table, or a range group's open-range rows (with
 * the leader's load figures, RangeDesc 24-27). */
void node_serve_get_ranges(struct meta_group *g, struct rpc_req *r);
/* Load splits: one request served by this range group's leader for range
 * range_id touching key (nothing for the root, or range_id 0). */
void node_range_note(struct meta_group *g, uint64_t range_id, const char *key);
/* The ops of a committed Submit whose result is OK. */
void node_range_note_ops(struct meta_group *g, Iolake__Meta__Op *const *ops, size_t n_ops,
			 const struct meta_op_result *res);
void node_serve_read_range(struct meta_group *g, struct rpc_req *r);
/* group_members.c (issue 13): range groups follow the root's voters. On
 * the tick: the root leader records the members every live group must
 * have (SetGroupMembers) and which groups match them (GroupReconciled);
 * each group's leader makes the next Raft change toward them. */
void group_members_tick(struct meta_node *n, uint64_t now_ms, bool root_leader);
/* Whether any live group has member id among its members (the root's
 * table as this member has it). */
bool group_members_lists(struct meta_node *n, uint64_t id);
#define MEMBER_DRAIN_MS 15000          /* RemoveMember: the groups drop it within */
#define MEMBER_DRAIN_GRACE_MS 1000     /* then the root waits 4 heartbeats (at most this) */
/* The members group d must have now (GroupDesc.members, else voters). */
void group_members_desired(const Iolake__Meta__GroupDesc *d, Iolake__Meta__GroupVoter *const **v,
			   size_t *n);
/* node_move.c: the root leader drives moves of records to their end. */
void node_move_tick(struct meta_node *n, uint64_t now, bool leader);
void node_move_close(struct meta_node *n);
/* Answer watches whose epoch is passed (all of them when closing). */
void node_wake_watches(struct meta_node *n, bool closing);
void node_expire_watches(struct meta_node *n, uint64_t now_ms);
void node_cancel_changes(struct meta_node *n);
/* A RemoveMember draining its member out of the range groups is done
 * (or out of time): remove it from the root now. */
void node_change_drained(struct change *ch);
/* End a draining RemoveMember with status (a RAFT_* error). */
void node_change_fail(struct change *ch, int status);

#endif
