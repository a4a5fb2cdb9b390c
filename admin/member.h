/*
 * member.h — iolake-admin's member commands: changes to the root meta
 * group's Raft configuration.
 */
#ifndef ADMIN_MEMBER_H
#define ADMIN_MEMBER_H

#include "admin/cmd.h"

/* `member add ID@HOST:PORT`, `member rm ID`: args are the words after
 * "member". Exit status 0, 1 (no leader answered), 2 (usage), or
 * ADMIN_UNKNOWN. */
int admin_member(const struct admin_ctx *x, int nargs, char **args);

#endif
