/*
 * bucket.h — iolake-admin's bucket commands.
 */
#ifndef ADMIN_BUCKET_H
#define ADMIN_BUCKET_H

#include "admin/cmd.h"

/* `bucket ls`: every bucket's name and owner (created_ms with --json).
 * args are the words after "bucket". Exit status 0, 1 (no leader
 * answered), or ADMIN_UNKNOWN. */
int admin_bucket(const struct admin_ctx *x, int nargs, char **args);

#endif
