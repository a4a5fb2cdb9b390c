/*
 * member.c — iolake-admin member add|rm (contract in member.h): AddMember
 * and RemoveMember of the root group, asked of its leader; the leader
 * checks the change again and applies it (meta/node.c). Owns only the
 * parsing of its words and what it prints.
 */
#include "admin/member.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* "ID@HOST:PORT": a member id above 0 and its RPC address (checked again,
 * fully, by the leader that applies the change). 0 or -EINVAL. */
static int parse_member(const char *s, uint64_t *id, const char **addr)
{
	char *end;
	const char *at = strchr(s, '@'), *colon = at ? strrchr(at, ':') : NULL;
	if (!at || at == s || !colon || colon == at + 1 || !colon[1])
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end != at || v == 0 || errno)
		return -EINVAL;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port >= 65535)
		return -EINVAL;
	*id = v;
	*addr = at + 1;
	return 0;
}

static int add_rm(const struct admin_ctx *x, bool add, const char *arg)
{
	Iolake__Meta__MemberChangeRequest req = IOLAKE__META__MEMBER_CHANGE_REQUEST__INIT;
	if (add) {
		uint64_t id;
		const char *addr;
		if (parse_member(arg, &id, &addr)) {
			fprintf(x->err, "iolake-admin: member add: %s is not ID@HOST:PORT\n", arg);
			return 2;
		}
		req.id = id;
		req.address = (char *)addr;
	} else {
		char *end;
		req.id = strtoull(arg, &end, 10);
		if (*end || !req.id) {
			fprintf(x->err, "iolake-admin: member rm: %s is not a member id\n", arg);
			return 2;
		}
	}
	ProtobufCMessage *resp =
		admin_must_call(x, add ? META_M_ADD_MEMBER : META_M_REMOVE_MEMBER, &req.base);
	protobuf_c_message_free_unpacked(resp, NULL);
	fprintf(x->out, x->json ? "{\"ok\":true}\n" : "done\n");
	return 0;
}

int admin_member(const struct admin_ctx *x, int nargs, char **args)
{
	const char *verb = args[0];
	if ((!strcmp(verb, "add") || !strcmp(verb, "rm")) && nargs == 2)
		return add_rm(x, !strcmp(verb, "add"), args[1]);
	return ADMIN_UNKNOWN;
}
