/*
 * quota.h — iolake-admin's quota commands (issue 20): set, show and clear
 * a bucket's or a user's quota (max bytes, max objects), with the usage
 * meta counts. As Ceph's `radosgw-admin quota set --quota-scope=bucket|user`
 * and MinIO's `mc quota set`.
 */
#ifndef ADMIN_QUOTA_H
#define ADMIN_QUOTA_H

#include <stdbool.h>
#include <stdio.h>
#include <uv.h>

#include "meta/client.h"

/* `quota set (--bucket B | --user U) [--max-bytes N] [--max-objects N]`,
 * `quota get (--bucket B | --user U)`, `quota clear (--bucket B | --user
 * U)`: args are the words after "quota". N takes a size suffix (KiB, MiB,
 * GiB, ...) for bytes; 0 is no limit on that dimension. Exit status 0, 1
 * (refused: no such bucket or user; meta unreachable), 2 (usage). */
int admin_quota(struct meta_client *c, uv_loop_t *loop, int nargs, char **args, bool json,
		FILE *out, FILE *err);

#endif
