/*
 * rpc_bufcache.c — recycled blocks for the RPC layer's large buffers
 * (rpc_bufcache.h): the received messages and payloads of grpc_parser and
 * the answers a handler builds whole (the native Get's payload).
 *
 * Owns the idle blocks, one LIFO list per power-of-two class (the most
 * recently used block, the likeliest to be in cache, goes out first).
 * A block is one allocation: a struct buf header (embedded, see
 * buf_init_embedded), then the data at a 64-byte boundary. Does not own
 * the buffers in use: their holders do, and the last unref (any thread)
 * brings the block back here.
 */
#include "common/rpc_bufcache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define MIN_SHIFT 15 /* RPC_BUFCACHE_MIN */
#define MAX_SHIFT 24 /* RPC_BUFCACHE_MAX */
#define NCLASS (MAX_SHIFT - MIN_SHIFT + 1)
#define HDR 128      /* the header's room (a multiple of 64: data stays 64-byte aligned) */

struct block {
	struct buf b;
	unsigned cls;
	struct block *next; /* idle list */
};

_Static_assert(sizeof(struct block) <= HDR, "block header larger than its room");

/* Process-wide on purpose: a buffer is often dropped on another thread
 * than the one that took it (an OSD's shard, a gateway's payload), and
 * blocks are worth keeping only if every loop can reuse them. One mutex,
 * taken once per large buffer. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *idle[NCLASS];
static size_t idle_bytes, idle_blocks;

static size_t class_bytes(unsigned cls)
{
	return (size_t)1 << (cls + MIN_SHIFT);
}

static unsigned class_of(size_t cap)
{
	unsigned cls = 0;
	while (class_bytes(cls) < cap)
		cls++;
	return cls;
}

static void block_release(struct buf *b)
{
	struct block *k = b->owner;
	size_t n = class_bytes(k->cls);
	pthread_mutex_lock(&lock);
	if (idle_bytes + n <= RPC_BUFCACHE_IDLE_MAX) {
		k->next = idle[k->cls];
		idle[k->cls] = k;
		idle_bytes += n;
		idle_blocks++;
		k = NULL;
	}
	pthread_mutex_unlock(&lock);
	free(k);
}

struct buf *rpc_buf_new(size_t cap)
{
	if (cap < RPC_BUFCACHE_MIN || cap > RPC_BUFCACHE_MAX)
		return buf_new(cap);
	unsigned cls = class_of(cap);
	pthread_mutex_lock(&lock);
	struct block *k = idle[cls];
	if (k) {
		idle[cls] = k->next;
		idle_bytes -= class_bytes(cls);
		idle_blocks--;
	}
	pthread_mutex_unlock(&lock);
	if (!k) {
		void *mem = NULL;
		if (posix_memalign(&mem, HDR, HDR + class_bytes(cls)))
			return NULL;
		k = mem;
		k->cls = cls;
	}
	buf_init_embedded(&k->b, (uint8_t *)k + HDR, cap, block_release, k);
	k->b.len = 0;
	return &k->b;
}

void rpc_bufcache_idle(size_t *blocks, size_t *bytes)
{
	pthread_mutex_lock(&lock);
	*blocks = idle_blocks;
	*bytes = idle_bytes;
	pthread_mutex_unlock(&lock);
}

void rpc_bufcache_drain(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned c = 0; c < NCLASS; c++) {
		while (idle[c]) {
			struct block *k = idle[c];
			idle[c] = k->next;
			free(k);
		}
	}
	idle_bytes = idle_blocks = 0;
	pthread_mutex_unlock(&lock);
}
