/*
 * user.h — iolake-admin's user commands: add and rm, and (issue 16)
 * per-bucket grants, the admin flag, listing and showing users with them,
 * sealing old clear secrets, and making a cluster key. They run their
 * calls on loop one after another and print to out / err; none but
 * `user add` prints a secret (once).
 */
#ifndef ADMIN_USER_H
#define ADMIN_USER_H

#include <stdbool.h>
#include <stdio.h>
#include <uv.h>

#include "admin/cmd.h"
#include "meta/client.h"

/* Every `user` command: args are the words after "user" (add, rm, ls,
 * show, grant, revoke, admin, rekey). Exit status as below; `user add`
 * 0, 1 (refused: the key id in use, the user exists) or 2 (usage);
 * ADMIN_UNKNOWN for another verb. */
int admin_user(const struct admin_ctx *x, int nargs, char **args);

/* `user ls` (names, admin, key ids, grants) and `user show NAME`. Exit
 * status 0, or 1 (unreachable; no such user). */
int admin_user_ls(struct meta_client *c, uv_loop_t *loop, const char *name, bool json,
		  FILE *out, FILE *err);

/* `user grant NAME --bucket B (--read|--write|--full)`, `user revoke
 * NAME --bucket B` and `user admin NAME on|off`: args are the words after
 * "user". Exit status 0, 1 (refused: no such user or bucket), 2 (usage). */
int admin_user_set(struct meta_client *c, uv_loop_t *loop, int nargs, char **args, bool json,
		   FILE *out, FILE *err);

/* `user rekey`: every key whose secret is still in clear (a record
 * written before the cluster key, or by a meta without one) is written
 * again and sealed by the meta that takes it. Exit status 0, 1 (a key
 * could not be sealed: meta has no --secret-key-file). */
int admin_user_rekey(struct meta_client *c, uv_loop_t *loop, bool json, FILE *out, FILE *err);

/* `cluster init-key --out FILE`: a new cluster key file (mode 0600,
 * never overwritten). No meta call. Exit status 0, 1, or 2 (usage). */
int admin_cluster_init_key(int nargs, char **args, FILE *out, FILE *err);

#endif
