/*
 * aio_banner.h — what iolake-aio prints on stdout once it is up: its
 * endpoints, the root credentials and a first command to try. Split out
 * of aio/main.c (issue 14).
 *
 * Owns the banner's text (README.md shows it). Not aio.json (aio_files.h),
 * nor deciding when aio is up (main.c).
 *
 * Thread: aio's main thread.
 */
#ifndef AIO_AIO_BANNER_H
#define AIO_AIO_BANNER_H

#include "aio/aio_flags.h"

/* Print the banner for o's addresses (as bound), n_osds OSDs and the root
 * key ak / sk, and flush stdout. */
void aio_banner_print(const struct aio_opts *o, int n_osds, const char *ak, const char *sk);

#endif
