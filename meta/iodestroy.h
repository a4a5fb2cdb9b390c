/*
 * iodestroy.h — io_destroy(2) off the caller's thread, for libraft.
 *
 * canonical/raft's raft_uv closes a segment writer on the member's loop,
 * and the close ends in syscall(SYS_io_destroy) of the writer's kernel
 * AIO context; the kernel does not return before an RCU grace period
 * (25-65 ms on a loaded 2-core VM), so every commit and answer of the
 * member stops that long. raft_uv does it when a segment fills and, in
 * 0.15, when a snapshot is taken (docs/performance.md, "PUT 64 KiB: the
 * tail in make bench").
 *
 * After iodestroy_defer_start(), this module's syscall(3) (which the
 * linker exports from the executable, so libraft's calls land in it)
 * queues each io_destroy and returns 0 at once; one background thread
 * does the real calls in order. Every other syscall number goes straight
 * to libc's syscall(3). Before the start, or when the queue is full,
 * io_destroy runs on the caller as before.
 *
 * Why that is sound: raft_uv destroys a context only after the writer
 * closed its fd and no write is in flight on it (UvWriterClose waits for
 * them), and it ignores io_destroy's result. Durability is not touched:
 * the records were durable when their append callbacks ran. A context
 * still queued at exit is freed by the kernel with the process.
 */
#ifndef META_IODESTROY_H
#define META_IODESTROY_H

#include <stdint.h>

/* Start the background thread and route io_destroy to it. Idempotent
 * and thread-safe; in a forked child io_destroy stays on the caller until
 * the child calls this (it gets its own thread). Returns 0, or a negative
 * errno (the thread could not start, or libc's syscall could not be
 * found): io_destroy then stays on the caller. */
int iodestroy_defer_start(void);

struct iodestroy_stats {
	uint64_t queued;      /* io_destroy calls handed to the thread */
	uint64_t done;        /* ... of those, made */
	uint64_t failed;      /* ... of those, the kernel refused (-1) */
	uint64_t inline_full; /* made on the caller: the queue was full */
};

void iodestroy_get_stats(struct iodestroy_stats *st);

#endif
