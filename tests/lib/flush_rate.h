/*
 * flush_rate.h — the single-writer flush rate of a file system: 4 KiB
 * pwrite + fdatasync in place, one after another. The figure a group
 * commit is judged against (benches print theirs next to it).
 */
#ifndef TESTS_LIB_FLUSH_RATE_H
#define TESTS_LIB_FLUSH_RATE_H

/* Flushes per second over about secs seconds, writing a scratch file in
 * dir (removed afterwards); 0 when the file cannot be created. */
double flush_rate(const char *dir, double secs);

#endif
