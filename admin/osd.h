/*
 * osd.h — iolake-admin's OSD commands.
 */
#ifndef ADMIN_OSD_H
#define ADMIN_OSD_H

#include "admin/cmd.h"

/* `osd ls` (the map's OSDs), `osd df` (each OSD's space, asked of it),
 * `osd scrub-status` (each OSD's scrubber and the bad shards it found),
 * `osd out ID` / `osd in ID` (held out until in), `osd rm ID` (a down
 * and out OSD only) and `osd expect N` (how many OSDs a new cluster's
 * first PG table waits for, while it waits; 0: place it now): args are
 * the words after "osd". Exit status 0, 1 (refused; no leader answered),
 * 2 (not an OSD id or count), or ADMIN_UNKNOWN. */
int admin_osd(const struct admin_ctx *x, int nargs, char **args);

#endif
