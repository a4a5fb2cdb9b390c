/*
 * fuzz_ca_req.c — libFuzzer target for what `iolake-admin ca issue` checks
 * before it makes a certificate (admin/ca.c ca_check_req): the subject
 * name, the --ip and --dns lists and --days. Input: lines; the first is
 * the name, then "ip:ADDR" or "dns:HOST" lines, the first byte's value is
 * the days (0 refused). An accepted request must give a subjectAltName
 * that OpenSSL parses into exactly one entry per --ip and --dns (no name
 * may smuggle in a second entry or another type), and a name without '/'
 * or control bytes of at most 64.
 */
#include <openssl/x509v3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin/ca.h"
#include "common/rpc_authz.h"

#define MAX_ITEMS 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = 0;
	const char *ips[MAX_ITEMS], *dns[MAX_ITEMS];
	struct ca_issue_req r = { .ips = ips, .dns = dns, .days = (unsigned)data[0],
				  .roles = RPC_ROLE_GW };
	char *save = NULL;
	char *line = strtok_r(buf + 1, "\n", &save);
	r.name = line;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (!strncmp(line, "ip:", 3) && r.n_ips < MAX_ITEMS)
			ips[r.n_ips++] = line + 3;
		else if (!strncmp(line, "dns:", 4) && r.n_dns < MAX_ITEMS)
			dns[r.n_dns++] = line + 4;
	}
	char why[256];
	if (ca_check_req(&r, why, sizeof(why)) != 0) {
		if (!why[0])
			__builtin_trap(); /* a refusal says why */
		free(buf);
		return 0;
	}
	size_t n = strlen(r.name);
	if (n == 0 || n > 64 || strchr(r.name, '/'))
		__builtin_trap();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)r.name[i] < 0x20 || (unsigned char)r.name[i] > 0x7e)
			__builtin_trap();
	if (r.n_ips + r.n_dns > 0) {
		/* The same string admin/ca.c gives OpenSSL. */
		size_t cap = 1;
		for (size_t i = 0; i < r.n_ips; i++)
			cap += strlen(ips[i]) + 5;
		for (size_t i = 0; i < r.n_dns; i++)
			cap += strlen(dns[i]) + 6;
		char *san = calloc(1, cap);
		for (size_t i = 0; i < r.n_ips; i++)
			sprintf(san + strlen(san), "%sIP:%s", san[0] ? "," : "", ips[i]);
		for (size_t i = 0; i < r.n_dns; i++)
			sprintf(san + strlen(san), "%sDNS:%s", san[0] ? "," : "", dns[i]);
		X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
		if (!ex)
			__builtin_trap(); /* accepted, but OpenSSL refuses it */
		GENERAL_NAMES *gn = X509V3_EXT_d2i(ex);
		if (!gn || (size_t)sk_GENERAL_NAME_num(gn) != r.n_ips + r.n_dns)
			__builtin_trap();
		GENERAL_NAMES_free(gn);
		X509_EXTENSION_free(ex);
		free(san);
	}
	free(buf);
	return 0;
}
