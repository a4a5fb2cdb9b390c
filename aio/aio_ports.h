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

/* How long a start waits for its kept pair while another socket holds it. */
#define AIO_PORTS_WAIT_MS 120000

/* DIR/meta/rpc-addr's address into addr, or on first start a free port
 * on 127.0.0.1 whose successor (Raft's) is free too, drawn below the
 * kernel's ephemeral range and written there (fsynced). A kept
 * 127.0.0.1 pair is waited for, up to AIO_PORTS_WAIT_MS, while either
 * port is in use (the Raft configuration names it, so it cannot move).
 * When the range leaves no room below it, or no draw there is free, the
 * kernel's pick. 0; -EADDRINUSE with addr set (the kept pair stayed in
 * use) or with addr "" (no free pair at all); or -errno. Blocks: aio's main
 * thread, before the services start. */
int aio_ports_meta_address(const char *data_dir, char addr[64]);

/* Meta's admin address: a default one (a->is_default) whose port is
 * taken (aio started on a random S3 port, whose + 1 someone holds) gets
 * port 0, any free one, with a warning, before meta starts: a failed
 * meta_node_start cannot simply be retried (its metrics are registered
 * by then). An address given by flag is kept, to fail loudly. */
void aio_ports_check_madm(struct aio_addr *a);

#endif
