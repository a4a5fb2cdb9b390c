/*
 * pg.h — iolake-admin's placement group commands.
 */
#ifndef ADMIN_PG_H
#define ADMIN_PG_H

#include "admin/cmd.h"

/* `pg ls` (one line per PG: state, OSDs, primary, stripes and bytes left,
 * rate, ETA) and `pg check` (stripes lacking a shard on an up slot's OSD,
 * asked of the OSDs): args are the words after "pg". Exit status 0, 1
 * (no leader answered), 3 (pg check found incomplete stripes or could
 * not reach a PG's OSD), or ADMIN_UNKNOWN. */
int admin_pg(const struct admin_ctx *x, int nargs, char **args);

/* The PG summary of the leader's PgStats (ps NULL: not known, why says
 * why): PGs per state, recovery left, rate, ETA and unfound stripes. The
 * JSON form is members of the enclosing object, each led by a comma. */
void admin_pg_summary_json(const struct admin_ctx *x, const Iolake__Meta__PgStatsResponse *ps);
void admin_pg_summary_text(const struct admin_ctx *x, const Iolake__Meta__PgStatsResponse *ps,
			   const char *why);

#endif
