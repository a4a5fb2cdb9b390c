/*
 * cmd.h — what iolake-admin's command files share: the context a command
 * runs in (the meta client, its loop, --json, where to print), meta calls
 * that end the process when no leader answers (as every command of main.c
 * always did: exit 1 with one line naming the members tried), and the
 * JSON and human-unit printing helpers.
 *
 * A command group's entry point takes the context and the words after its
 * group name ("osd", "pg", ...); it returns the exit status (0, 1 refused
 * or unreachable, 2 usage, 3 pg check found gaps) or ADMIN_UNKNOWN for a
 * verb or arity it does not know, which main reports as an unknown command.
 * Single-threaded: everything runs on ctx->loop, one call at a time.
 */
#ifndef ADMIN_CMD_H
#define ADMIN_CMD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "admin/aio.h"
#include "meta/client.h"

/* Not a command of this group: main prints "unknown command" (exit 2). */
#define ADMIN_UNKNOWN (-1)

struct admin_ctx {
	struct meta_client *cli;
	uv_loop_t *loop;
	bool json;     /* --json */
	FILE *out;     /* tables and JSON */
	FILE *err;     /* one line of why, on failure */
	/* --data-dir: the aio's dir and aio.json, whose admin API answers for
	 * its in-process OSDs; NULL with --meta */
	const char *aio_dir;
	const struct admin_aio_info *aio;
};

/* A call that ended in err, and exits 1: what the last member to answer
 * said when it refused; when none did (err a timeout, or no answer at
 * all), that no meta leader answered, the members tried and the last
 * answer seen. */
_Noreturn void admin_die_unreachable(const struct admin_ctx *x, int err);

/* method(req) through meta_client_call: an owned answer (free with
 * protobuf_c_message_free_unpacked). Exits 1 if the call cannot start or
 * no leader answers. */
ProtobufCMessage *admin_must_call(const struct admin_ctx *x, unsigned method,
				  const ProtobufCMessage *req);

/* The same, but a failure the command handles itself (an older meta
 * without the method, no leader): NULL and *err instead of exiting. */
ProtobufCMessage *admin_try_call(const struct admin_ctx *x, unsigned method,
				 const ProtobufCMessage *req, int *err);

/* op through Raft: an owned copy of its result (res->status may still say
 * NOT_FOUND, CONFLICT, ...). Exits 1 as admin_must_call. */
Iolake__Meta__OpResult *admin_must_submit(const struct admin_ctx *x, const Iolake__Meta__Op *op);

/* "OK", "NOT_FOUND", ... (the enum's name without "STATUS_"). */
const char *admin_status_name(Iolake__Meta__Status s);

/* 0 if r is OK, else 1 after printing "error: WHAT: STATUS" on x->err. */
int admin_check_result(const struct admin_ctx *x, const char *what,
		       const Iolake__Meta__OpResult *r);

/* s as a JSON string (quote, backslash and control bytes escaped). */
void admin_jstr(FILE *f, const char *s);

/* 1536 -> "1.5 KiB" (binary units, one decimal); out is the caller's. */
const char *admin_human_bytes(uint64_t v, char out[32]);
/* Seconds as "45s", "12m03s", "3h07m", "2d04h"; "-" for 0. */
const char *admin_human_eta(uint64_t s, char out[32]);
/* Bytes per second as "1.5 MiB/s"; "-" for 0. */
const char *admin_human_rate(uint64_t bps, char out[40]);

#endif
