/*
 * flush_rate.h — what a single writer gets from a file system when every
 * write is made durable before the next: 4 KiB pwrite + fdatasync in place
 * (the flush rate a group commit is judged against; benches print theirs
 * next to it), and the same for larger writes (what one group of a given
 * size can cost at best: the ceiling of any group commit there).
 */
#ifndef TESTS_LIB_FLUSH_RATE_H
#define TESTS_LIB_FLUSH_RATE_H

#include <stddef.h>

/* Flushes per second over about secs seconds, writing a scratch file in
 * dir (removed afterwards); 0 when the file cannot be created. */
double flush_rate(const char *dir, double secs);

/* The same with bytes per write (rounded up to 4 KiB): pwrite + fdatasync
 * per second, cycling in place over 256 such writes. */
double sync_write_rate(const char *dir, double secs, size_t bytes);

#endif
