/*
 * node.h — one member of the meta service: the Raft groups it hosts
 * (canonical/raft, raft_uv over one TCP port shared by all of them:
 * meta/raft_mux.h), each driving a meta/state.h state machine, and the Meta
 * RPC service (common/proto/meta.proto) in front of them.
 *
 * Groups: the root group (id 0) holds users, buckets, the cluster map and
 * the table of the other groups; every member of the meta service is a
 * member of the root. A group >= 1 is created with CreateGroup through the
 * root, and each of its voters starts it (meta/hosting.c). Every group
 * runs the same state machine; the root's range table decides which
 * object records a group >= 1 holds (docs/architecture.md, "Key ranges";
 * the root leader keeps opts->range_groups of them).
 *
 * A member owns, under its data dir:
 *   DIR/raft    the root's raft_uv log segments, metadata and snapshot descriptors
 *   DIR/state   the root's RocksDB state (meta/state.h)
 *   DIR/snap    checkpoints of the root's state, the files of snapshots (meta/snap.h)
 *   DIR/groups/<id>/{raft,state,snap}  the same for group <id> >= 1
 * and two listening sockets: the RPC server on `listen` ("host:port") and
 * the Raft transport multiplexer on the same host, port + 1, which carries
 * every group (documented in docs/architecture.md: DESIGN.md gives a
 * member one address, so the Raft address is derived from it, and peers
 * are named by their RPC address). The Raft host must be an IPv4 address.
 *
 * Writes: Submit calls are queued per group; a group's leader packs every
 * queued op into one OpBatch entry (group commit) with at most
 * META_NODE_PIPELINE entries and META_NODE_ENTRY_BYTES per entry in
 * flight, and answers each call with its ops' results once its entry is
 * applied. Reads that must be linearizable wait for a ReadIndex round
 * (meta/node_read.c).
 *
 * Threads: everything runs on the loop given to meta_node_start, which
 * must be run by one thread (a loop_thread, or main's loop). RocksDB
 * applies and reads run on that loop (they are the state machine's own
 * calls; apply writes are not synced: the Raft log is the durable copy).
 * Snapshots are checkpoints taken on the libuv pool; installing one (fetch
 * and load) runs on a thread of its own while the loop goes on
 * (meta/group_install.c), except at start, before the loop runs.
 */
#ifndef META_NODE_H
#define META_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/metrics.h"
#include "common/proto/meta_methods.h"
#include "meta/state.h"

#define META_NODE_MAX_PEERS 9
#define META_NODE_ADDR_MAX META_ADDR_MAX /* "host:port" + NUL */
#define META_NODE_ENTRY_BYTES (128u << 10)  /* target bytes of one entry */
/* Entries proposed, not yet applied. 1 (issue 19, measured in
 * docs/performance.md "Small PUTs past the flush rate"): the ops queued
 * while an entry is written all go into the next one, proposed as soon as
 * it applies, so an op waits for about 1.5 log writes; with 2 the next
 * entry was formed a write earlier and an op waited about 2.5, in smaller
 * entries (iolake-aio on the disk, PUT 4 KiB at 32: 15.7 against 10.8 ops
 * per write, 2,119-3,177 against 1,370-2,033 PUT/s; bench-meta's three
 * voters not slower). */
#define META_NODE_PIPELINE 1
/* The root group's Raft log segment (raft_uv's default is 8 MiB). raft_uv
 * closes a full segment on the member's loop, and that close ends in an
 * io_destroy(2) of the segment writer's AIO context, which waits for an
 * RCU grace period: 27-63 ms on this project's 2-core VM, the loop (every
 * commit and answer of the member) stopped meanwhile. At PUT 4 KiB rates
 * (~4.6 KB of log per PUT, ~44 MB/s at 9.5 k PUT/s) 8 MiB segments closed
 * several times a second: that stall was the p99 of small PUTs (issue 19
 * must-show 6; docs/performance.md "Small PUTs: the p99 tail"). Larger
 * segments close that many times less often; raft_uv preallocates three
 * of them (192 MiB of disk, or memory on tmpfs). Since meta/iodestroy.c
 * the io_destroy is made on a thread, not the loop; the large segments
 * stay (fewer closes, fewer new preallocations). */
#define META_NODE_SEGMENT_BYTES (64ull << 20)
/* A range group's Raft log segment (--range-raft-segment-size). Was 1 MiB
 * (~228 inline 4 KiB PUTs): on the netns cluster with three range groups
 * each member closed a segment of one of its groups every ~75 ms of PUTs,
 * each close stopping its loop tens of ms (docs/performance.md, "Range
 * groups: what a small PUT costs"). 8 MiB is raft_uv's own default: three
 * preallocated per group, 24 MiB per range group per member. */
#define META_RANGE_SEGMENT_BYTES (8ull << 20)
#define META_NODE_QUEUE_OPS 16384       /* ops queued: beyond, RESOURCE_EXHAUSTED */
#define META_NODE_READS_MAX 16384       /* reads waiting for a barrier */
#define META_NODE_WATCHES_MAX 4096      /* WatchMap long polls parked */
/* --range-groups defaults, by measurement (docs/performance.md, "Key
 * ranges"): on one member (iolake-aio) every group shares one loop, so range
 * groups only split the group commit; on this project's 2-core machine a
 * three-member cluster with three range groups and spread leaders also
 * measured slower than one group (CPU-bound: more, smaller entries). Both
 * 0 until a multi-host measurement says otherwise; --range-groups N turns
 * ranges on. */
#define META_RANGE_GROUPS_DEFAULT 0      /* iolake-meta */
#define META_RANGE_GROUPS_DEFAULT_AIO 0  /* iolake-aio */
#define META_RANGE_SPLIT_OBJECTS_DEFAULT 100000   /* --range-split-objects: the sealed
                                                 * time of a split grows with it
                                                 * (docs/performance.md) */
/* --range-split-load / --range-split-load-secs: TiKV's load-based split
 * defaults (split.qps-threshold 3000, split.detect-times 10 one-second
 * looks); docs/operations.md says why. */
#define META_RANGE_SPLIT_LOAD_DEFAULT 3000
#define META_RANGE_SPLIT_LOAD_SECS_DEFAULT 10
#define META_NODE_DIGEST_WAITERS 256    /* Status calls waiting for a digest scan;
                                         * beyond, answered without a digest */


struct meta_peer {
	uint64_t id;                     /* > 0 */
	const char *addr;                /* RPC "host:port"; Raft on port + 1 */
};

struct meta_node_opts {
	uint64_t id;                     /* this member, one of peers */
	const char *data_dir;            /* must exist */
	const char *listen;              /* RPC "host:port" (the Raft port is +1) */
	const char *local_name;          /* also serve "local:NAME"; NULL: no */
	const char *admin_listen;        /* also serve the same RPC service on this
	                                  * "host:port" (port 0: any free one), an
	                                  * address that is not the member's name in
	                                  * Raft (aio's fixed admin address); NULL: no */
	const struct meta_peer *peers;   /* initial voters (bootstrap), this one included */
	size_t n_peers;
	bool join;                       /* never bootstrap: an empty member waits for a
	                                  * leader to add it (AddMember); peers need only
	                                  * hold this one */
	unsigned snapshot_threshold;     /* entries between snapshots; 0: 1024 */
	uint64_t snapshot_bytes;         /* or command bytes applied between them,
	                                  * whichever comes first; 0: 64 MiB */
	uint64_t snapshot_fetch_timeout_ms;  /* an install gives up after; 0: 300 s */
	uint32_t snapshot_fetch_chunk_bytes; /* per FetchSnapshot; 0: 4 MiB */
	uint64_t cache_bytes;            /* RocksDB block cache; 0: 256 MiB */
	uint64_t write_buffer_bytes;     /* RocksDB memtable; 0: 64 MiB */
	unsigned snapshot_trailing;      /* entries kept after one; 0: 128, unless
	                                  * snapshot_trailing_given */
	bool snapshot_trailing_given;    /* snapshot_trailing as it is, 0 included
	                                  * (iolake-meta's --snapshot-trailing) */
	uint64_t raft_segment_bytes;     /* the root group's Raft log segment; 0:
	                                  * META_NODE_SEGMENT_BYTES */
	uint64_t range_segment_bytes;    /* each range group's (groups >= 1); 0:
	                                  * META_RANGE_SEGMENT_BYTES */
	unsigned election_timeout_ms;    /* 0: 500 */
	uint32_t debug_op_level;         /* tests only (--debug-op-level): act as a build
	                                  * of this op level, applying entries up to it
	                                  * and writing every entry at it; 0: the build's
	                                  * META_OP_LEVEL (meta/state.h) */
	unsigned heartbeat_timeout_ms;   /* 0: 100 */
	uint64_t osd_down_after_ms;      /* 0: 10000 */
	uint64_t osd_out_after_ms;       /* 0: 60000 */
	uint32_t pg_count;               /* InitMap on first leadership; 0: 256 */
	uint32_t ec_k, ec_m;             /* 0: 4 + 2 */
	uint32_t expect_osds;            /* InitMap: the first PG table waits for this
	                                  * many OSDs (ClusterMap.expect_osds); 0: none */
	struct metrics_registry *metrics;  /* NULL: the member makes its own */
	unsigned range_groups;           /* the root's leader keeps this many Raft groups
	                                  * >= 1 for key ranges (CreateGroup over every
	                                  * root voter when fewer exist); 0: none made,
	                                  * object records stay in the root */
	const struct meta_secret *secret; /* the cluster key (--secret-key-file): secrets
	                                  * are sealed before proposing; NULL: stored in
	                                  * clear (an old setup). Must outlive the node */
	/* The RPC call log (rpc_server_opts.log_calls): calls answered
	 * slow_op_ms or more after they arrived are logged with their request
	 * id (--slow-op-ms); failures too. false: off. */
	bool log_calls;
	uint32_t slow_op_ms;
	/* Automatic moves (meta/node_move.c; 0: off): the root leader splits a
	 * range at its median key once it holds this many objects, or this
	 * many bytes of objects, and merges two adjacent ranges of a bucket
	 * holding fewer than range_merge_objects together. */
	uint64_t range_split_objects, range_split_bytes, range_merge_objects;
	/* Splits by load: a range whose leader served more than
	 * range_split_load requests per second (object ops committed,
	 * HeadObject and ListObjects) for range_split_load_secs seconds in a
	 * row is split at the key that divides its sampled requests (0: off;
	 * secs 0: META_RANGE_SPLIT_LOAD_SECS_DEFAULT). */
	uint64_t range_split_load;
	unsigned range_split_load_secs;
	unsigned range_poll_ms;          /* between looks at the groups' counters; 0: 5000,
	                                  * or with range_split_load, half of its secs
	                                  * (1000..5000) */
};

struct meta_node;
struct meta_secret;

/* Open the root's state, start its Raft (bootstrapping the peers as
 * voters when the log is empty and not opts->join; a restart, even after a
 * crash in the first seconds, finds RAFT_CANTBOOTSTRAP and carries on),
 * start every group the root's table gives this member, and start
 * serving. On the loop's thread. 0 and *out, -EINVAL (bad options, id not
 * among peers, address not "host:port", Raft host not IPv4), -errno, or
 * -EIO (Raft, its port or RocksDB failed: text logged). */
int meta_node_start(uv_loop_t *loop, const struct meta_node_opts *opts, struct meta_node **out);

/* Stop serving (pending calls fail UNAVAILABLE), close every group (Raft
 * and state) and the sockets; cb(ud) runs on the loop once everything is
 * released and the node freed. Loop thread. */
void meta_node_close(struct meta_node *n, void (*cb)(void *ud), void *ud);

/* Reads answered on their caller's thread so far (meta/node_direct.c:
 * HeadObject and GetVersion of the root, in process, while this member
 * is its only voter). Any thread. */
uint64_t meta_node_direct_reads(struct meta_node *n);

/* A snapshot of the member's view of one group (loop thread). */
struct meta_node_info {
	uint64_t id;
	int role;                        /* RAFT_LEADER, RAFT_FOLLOWER, ... */
	uint64_t term, commit_index, applied_index, last_index;
	uint64_t leader_id;              /* 0: none known */
	char leader_addr[META_NODE_ADDR_MAX];  /* RPC address; "" when none */
	uint64_t epoch;                  /* map epoch */
	uint64_t restores;               /* snapshots installed (files loaded) */
	uint64_t snapshots;              /* snapshots taken */
	uint64_t snapshot_fetch_bytes;   /* snapshot bytes fetched from peers */
	uint64_t last_install_ms;        /* time the last install took (fetch and load, off the
	                                  * loop once the member runs) */
	bool installing;                 /* a snapshot install is running */
	uint64_t entries_proposed, ops_committed;
	uint64_t read_barriers, read_rounds;   /* since start (node_read.c) */
	uint64_t forwarded;              /* calls this member forwarded to a leader (any group) */
};
/* The root group's view. */
void meta_node_info(struct meta_node *n, struct meta_node_info *out);
/* Group `group`'s view (0: the root). 0, or -ENOENT when not hosted. */
int meta_node_group_info(struct meta_node *n, uint64_t group, struct meta_node_info *out);

/* The TCP port opts.admin_listen bound (useful with port 0), or 0. */
int meta_node_admin_port(const struct meta_node *n);

/* The root's state machine, for reads and digests on the loop thread. */
struct meta_state *meta_node_state(struct meta_node *n);
/* Group `group`'s, or NULL when not hosted. */
struct meta_state *meta_node_group_state(struct meta_node *n, uint64_t group);
/* The ids of the groups hosted (root first, then ascending), up to cap of
 * them into ids; returns how many are hosted. */
size_t meta_node_groups(struct meta_node *n, uint64_t *ids, size_t cap);

/* "leader", "follower", "candidate", "unavailable". */
const char *meta_node_role_name(int role);

/* Parse "ID@HOST:PORT" into p (addr points into s). 0 or -EINVAL. */
int meta_node_parse_peer(const char *s, struct meta_peer *p);

/* The Raft address of an RPC address: same host, port + 1 (and back).
 * 0, or -EINVAL when addr is not "host:port" or the port is out of range. */
int meta_node_raft_addr(const char *rpc_addr, char out[META_NODE_ADDR_MAX]);
int meta_node_rpc_addr(const char *raft_addr, char out[META_NODE_ADDR_MAX]);

#endif
