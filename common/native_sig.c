/*
 * native_sig.c — the canonical request and signature of a native call
 * (contract in native_sig.h). Owns nothing: the caller's structs hold
 * every string. The arguments' hash packs the message once more with its
 * auth pointer cleared; protobuf-c packs fields in number order, so both
 * sides agree on the bytes.
 */
#include "common/native_sig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

static ProtobufCMessage **auth_slot(const ProtobufCMessage *msg)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, "auth");
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE || f->label == PROTOBUF_C_LABEL_REPEATED)
		return NULL;
	return (ProtobufCMessage **)((char *)msg + f->offset);
}

void native_sig_payload_sha256(const void *data, size_t len, char out[65])
{
	uint8_t d[32];
	hash_sha256(data ? data : "", len, d);
	hash_hex(d, 32, out);
}

int native_sig_args_sha256(const ProtobufCMessage *msg, char out[65])
{
	ProtobufCMessage **slot = auth_slot(msg);
	if (!slot)
		return -EINVAL;
	ProtobufCMessage *saved = *slot;
	*slot = NULL;
	size_t n = protobuf_c_message_get_packed_size(msg);
	uint8_t stack[512], *b = n <= sizeof(stack) ? stack : malloc(n);
	if (!b) {
		*slot = saved;
		return -ENOMEM;
	}
	protobuf_c_message_pack(msg, b);
	*slot = saved;
	native_sig_payload_sha256(b, n, out);
	if (b != stack)
		free(b);
	return 0;
}

/* A header value must be one line (sigv4 trims and folds spaces, which
 * the protocol's fixed values never have). */
static int hdr(struct native_sig_req *r, const char *name, const char *value)
{
	if (!value || strpbrk(value, "\r\n"))
		return -EINVAL;
	struct sigv4_header *h = &r->hdrs[r->n_hdrs++];
	h->name = name;
	h->name_len = strlen(name);
	h->value = value;
	h->value_len = strlen(value);
	return 0;
}

int native_sig_build(struct native_sig_req *r, const ProtobufCServiceDescriptor *svc,
		     unsigned method, const ProtobufCMessage *msg, const char *amz_date,
		     const char *content_sha256, const char *authorization)
{
	memset(r, 0, sizeof(*r));
	if (method >= svc->n_methods || !amz_date || !content_sha256)
		return -EINVAL;
	int n = snprintf(r->path, sizeof(r->path), "/%s/%s", svc->name, svc->methods[method].name);
	if (n < 0 || (size_t)n >= sizeof(r->path))
		return -EINVAL;
	int rc = native_sig_args_sha256(msg, r->args_sha256);
	if (rc)
		return rc;
	if (hdr(r, "host", NATIVE_SIG_HOST) || hdr(r, "x-amz-content-sha256", content_sha256) ||
	    hdr(r, "x-amz-date", amz_date) || hdr(r, "x-iolake-args-sha256", r->args_sha256) ||
	    (authorization && hdr(r, "authorization", authorization)))
		return -EINVAL;
	r->req.method = NATIVE_SIG_METHOD;
	r->req.path = r->path;
	r->req.path_len = (size_t)n;
	r->req.query = "";
	r->req.query_len = 0;
	r->req.headers = r->hdrs;
	r->req.n_headers = r->n_hdrs;
	r->req.payload_hash = content_sha256;
	return 0;
}

int native_sig_sign(const uint8_t key[32], const char *access_key, const char *region,
		    const char *amz_date, const ProtobufCServiceDescriptor *svc, unsigned method,
		    const ProtobufCMessage *msg, const char *content_sha256,
		    char authz[NATIVE_SIG_AUTHZ_MAX])
{
	struct native_sig_req r;
	int rc = native_sig_build(&r, svc, method, msg, amz_date, content_sha256, NULL);
	if (rc)
		return rc;
	struct sigv4_auth a;
	memset(&a, 0, sizeof(a));
	if (strlen(access_key) >= sizeof(a.access_key) || strlen(region) >= sizeof(a.region) ||
	    strlen(amz_date) != 16)
		return -EINVAL;
	strcpy(a.access_key, access_key);
	memcpy(a.date, amz_date, 8);
	strcpy(a.region, region);
	strcpy(a.service, "s3");
	memcpy(a.amz_date, amz_date, 16);
	strcpy(a.signed_headers, NATIVE_SIG_SIGNED_HEADERS);
	if ((rc = sigv4_sign(key, &r.req, &a, a.signature)))
		return rc;
	return sigv4_format_header(&a, authz, NATIVE_SIG_AUTHZ_MAX) < 0 ? -ENOSPC : 0;
}
