/*
 * aio_ports.h — the addresses iolake-aio settles before its services
 * start: meta's RPC address (chosen on first start, kept in
 * DIR/meta/rpc-addr) and whether a default address's port is free.
 * Split out of aio/main.c (issue 14).
 *
 * Owns those checks. Not the listeners (each service binds its own).
 *
 * Thread: aio's main thread, before the services start.
 */
#ifndef AIO_AIO_PORTS_H
#define AIO_AIO_PORTS_H

#include "aio/aio_flags.h"

/* DIR/meta/rpc-addr's address into addr, or on first start a free port
 * on 127.0.0.1 whose successor (Raft's) is free too, written there. 0,
 * -EADDRINUSE (no such pair in 50 tries) or -errno. */
int aio_ports_meta_address(const char *data_dir, char addr[64]);

/* Meta's admin address: a default one (a->is_default) whose port is
 * taken (aio started on a random S3 port, whose + 1 someone holds) gets
 * port 0, any free one, with a warning, before meta starts: a failed
 * meta_node_start cannot simply be retried (its metrics are registered
 * by then). An address given by flag is kept, to fail loudly. */
void aio_ports_check_madm(struct aio_addr *a);

#endif
