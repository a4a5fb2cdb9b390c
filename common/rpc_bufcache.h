/*
 * rpc_bufcache.h — recycled buffers for the RPC layer's large messages and
 * payloads (issue 19: a native GET of 4 MiB cost its client 12 ms of CPU,
 * most of it page faults on a fresh 4 MiB buffer per answer).
 *
 * A buffer of at least RPC_BUFCACHE_MIN bytes (up to RPC_BUFCACHE_MAX)
 * comes from an idle block of its size class (powers of two) when there is
 * one; its last unref puts the block back, on whichever thread drops it,
 * unless RPC_BUFCACHE_IDLE_MAX bytes are idle already (then it is freed).
 * Memory that stays mapped is reused without faulting it in again; smaller
 * and larger buffers are plain buf_new ones.
 */
#ifndef COMMON_RPC_BUFCACHE_H
#define COMMON_RPC_BUFCACHE_H

#include <stddef.h>

#include "common/buf.h"

#define RPC_BUFCACHE_MIN (32u << 10)
#define RPC_BUFCACHE_MAX (16u << 20)
#define RPC_BUFCACHE_IDLE_MAX (32u << 20) /* idle bytes kept, all classes */

/* A buf with room for cap bytes (len 0, data 64-byte aligned), NULL when
 * out of memory. Released by buf_unref as any buf. */
struct buf *rpc_buf_new(size_t cap);

/* Idle blocks and their bytes (class sizes) now. */
void rpc_bufcache_idle(size_t *blocks, size_t *bytes);

/* Free every idle block. */
void rpc_bufcache_drain(void);

#endif
