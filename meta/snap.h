/*
 * snap.h — file snapshots of a Raft group's state (internal to meta/:
 * group.c and service.c use it). A Raft snapshot of meta is a small
 * descriptor (proto SnapshotDescriptor) naming a RocksDB checkpoint
 * directory under DIR/snap of one member (DIR: the group's directory,
 * DIR/groups/<id> for a group >= 1); the files move out of band with
 * FetchSnapshot, which names the group.
 *
 *   DIR/snap/cp-<A>-<M>     a checkpoint of member M's state at applied
 *                           index A (hard links to the live SST files:
 *                           cheap); the newest SNAP_KEEP are kept, and any
 *                           fetched recently. The name is unique in the
 *                           group: every holder of it holds the same files
 *   DIR/snap/in-cp-<A>-<M>  files being fetched from another member;
 *                           renamed cp-<A>-<M> once installed (then this
 *                           member serves it too)
 *   DIR/snap/tmp-cp         a checkpoint being taken
 *
 * Threads: snap_take runs off the loop (libraft's async work); snap_fetch
 * blocks its caller and runs its calls on a thread and loop of its own;
 * snap_serve_fetch is a handler on the node's loop whose file reads run
 * on the libuv pool. Nothing here holds the state in memory: files are
 * read and written in chunks of at most SNAP_CHUNK_BYTES.
 */
#ifndef META_SNAP_H
#define META_SNAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/metrics.h"
#include "common/rpc.h"
#include "meta/node.h"
#include "meta/state.h"

#define SNAP_CHUNK_BYTES (4u << 20)   /* one FetchSnapshot answer at most */
#define SNAP_KEEP 2                   /* own checkpoints kept */
#define SNAP_NAME_MAX 96              /* a file or checkpoint name, NUL included */
#define SNAP_FILES_MAX 100000         /* files in one descriptor */
#define SNAP_PINS 4                   /* checkpoints being fetched, remembered */
#define SNAP_PIN_MS 120000            /* a fetched checkpoint outlives pruning this long */
#define SNAP_GONE_ROUNDS 2            /* give_up_when_gone: rounds of "not here" answers */
#define SNAP_CANCEL_POLL_MS 50        /* a fetch looks at its cancel flag and deadline this often */

struct snap_file {
	char name[SNAP_NAME_MAX];     /* no '/' */
	uint64_t size;
	uint32_t crc32c;              /* of the whole file */
};

/* The C form of proto SnapshotDescriptor. */
struct snap_desc {
	uint64_t member_id;
	char member_addr[META_NODE_ADDR_MAX];
	uint64_t applied_index;       /* "A" in the checkpoint */
	char checkpoint[SNAP_NAME_MAX];
	struct snap_file *files;      /* malloc'd */
	size_t n_files;
	uint64_t bytes;               /* sum of sizes */
};

void snap_desc_free(struct snap_desc *d);   /* the files; d itself is the caller's */
int snap_desc_copy(struct snap_desc *dst, const struct snap_desc *src);

/* A name the server may open: 1..SNAP_NAME_MAX-1 bytes, no '/', not "."
 * nor "..". */
bool snap_name_ok(const char *s);

/* The Raft buffer of d: u32 magic "IOLS", u32 length, the packed
 * SnapshotDescriptor, zeros to a multiple of 8 (entry and buffer lengths
 * must be, NOTES-deps). raft_malloc'd into *base. 0 or -ENOMEM. */
int snap_desc_encode(const struct snap_desc *d, void **base, size_t *len);
/* Decode and validate (names, count). 0, or IOL_ECORRUPT. */
int snap_desc_decode(const void *base, size_t len, struct snap_desc *out);

/* One snapshot to take, off the loop. */
struct snap_take_job {
	/* in */
	struct meta_state *state;
	char dir[600];                /* DIR/snap */
	uint64_t member_id;
	char member_addr[META_NODE_ADDR_MAX];
	const struct snap_desc *prev; /* the last one (crc32c of unchanged SSTs are
	                               * reused: SST files never change), or NULL */
	char pinned[SNAP_PINS][SNAP_NAME_MAX];   /* never pruned */
	size_t n_pinned;
	/* out */
	struct snap_desc desc;
	uint64_t elapsed_ns;
	uint64_t crc_bytes;           /* bytes read to checksum */
};

/* Checkpoint the state into DIR/snap/cp-<A>-<member> (A read back from the
 * checkpoint: applies go on meanwhile, so A may be above the index Raft
 * snapshots at), list its files with sizes and crc32c, prune older
 * checkpoints. Any thread but the loop's. 0, -EIO, -ENOMEM. */
int snap_take(struct snap_take_job *j);

/* One checkpoint to fetch (blocking). */
struct snap_fetch_job {
	const struct snap_desc *desc;
	uint64_t group;               /* the Raft group whose checkpoint it is (0: root) */
	char dir[600];                /* DIR/snap: files go to DIR/snap/in-<checkpoint> */
	char addrs[META_NODE_MAX_PEERS + 1][META_NODE_ADDR_MAX];   /* source first */
	size_t n_addrs;
	uint64_t timeout_ms;          /* give up after (0: 300 s) */
	uint32_t chunk_bytes;         /* per call (0 or above: SNAP_CHUNK_BYTES) */
	bool give_up_when_gone;       /* -ENOENT once every source failed SNAP_GONE_ROUNDS
	                               * times since the last chunk and one of them said
	                               * it lacks the checkpoint (a dead source does not
	                               * keep the fetch waiting for a checkpoint the live
	                               * ones have pruned) */
	atomic_bool *cancel;          /* may be NULL: set by another thread, the fetch
	                               * ends within SNAP_CANCEL_POLL_MS with -ECANCELED */
	struct metrics_counter *m_fetch_bytes;   /* may be NULL */
	/* out */
	uint64_t fetched_bytes;       /* over the network, this call */
	char path[700];               /* the complete checkpoint directory */
};

/* Fetch every file of desc that DIR/snap/in-<checkpoint> does not already hold
 * whole (a partial file resumes from its size; a file whose size and
 * crc32c do not match is fetched again), from addrs in turn: a source
 * that does not answer or lost the checkpoint costs a switch to the next,
 * a round of failures a backoff (100 ms doubling to 2 s). The deadline
 * (timeout_ms) holds whatever is in flight. Runs its calls on a
 * loop_thread of its own and blocks the caller until done. 0, -ETIMEDOUT,
 * -EIO, -ECANCELED, -ENOENT (give_up_when_gone: no source holds it). */
int snap_fetch(struct snap_fetch_job *j);

/* Ask every source for its newest checkpoint of the group (FetchSnapshot
 * with `newest`): the one with the highest applied index, at least
 * min_applied. For a descriptor whose checkpoint no member holds any more
 * (libraft 0.15 can deliver an InstallSnapshot it queued for a member
 * while that member was down, naming a checkpoint its source has pruned
 * since): a newer checkpoint of the same group is an equally good state to
 * install, as apply skips every entry at or below the state's "A". */
struct snap_newest_job {
	uint64_t group;
	char addrs[META_NODE_MAX_PEERS + 1][META_NODE_ADDR_MAX];
	size_t n_addrs;
	uint64_t min_applied;
	atomic_bool *cancel;          /* may be NULL: as snap_fetch_job's */
	/* out */
	bool found;
	struct snap_desc out;         /* the caller frees it (snap_desc_free) */
};
/* Blocking, calls on a loop_thread of its own. 0 and j->out, -ENOENT (no
 * source has one at min_applied or above), -EINVAL, -ENOMEM, -ECANCELED. */
int snap_newest(struct snap_newest_job *j);
/* The server side of FetchSnapshot `newest`: answer last (this member's
 * newest checkpoint of the group, taken or installed) when dir holds it
 * whole, else NOT_FOUND. 0, or -ENOENT / -ENOMEM (answered). */
int snap_serve_newest(const char *dir, const struct snap_desc *last, struct rpc_req *r);

/* Whether DIR/snap/<desc->checkpoint> holds every file of desc with its
 * size (a local checkpoint, e.g. this member's own). */
bool snap_local_complete(const char *dir, const struct snap_desc *d, char *path, size_t cap);

/* After an install from DIR/snap/in-<checkpoint>: rename it <checkpoint> so this member
 * can serve it too. Best effort. */
void snap_adopt(const char *dir, const struct snap_desc *d);

/* FetchSnapshot handler body: validate, then read the range on the libuv
 * pool and answer. dir is DIR/snap (copied). */
void snap_serve_fetch(uv_loop_t *loop, const char *dir, struct rpc_req *r);

#endif
