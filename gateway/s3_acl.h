/*
 * s3_acl.h — S3 access control lists as values: canonical user ids, the
 * canned ACLs, grants from x-amz-acl / x-amz-grant-* headers or an
 * AccessControlPolicy XML body, the permissions an ACL gives a principal,
 * the AccessControlPolicy document of GetBucketAcl / GetObjectAcl, and the
 * compact form kept in meta's records (meta.proto Acl).
 *
 * Canonical user id: IOLake's answer to an AWS account's canonical id, the
 * 64 hex digits of SHA-256("iolake-user:" + user name). Stable (the same
 * name always has the same id, so a user removed and made again under the
 * same name holds the grants the old one had) and computable anywhere
 * without a lookup; DisplayName is the user name.
 *
 * An ACL is either a canned ACL by name, expanded when read from the
 * owner and the bucket owner (records keep 2 bytes, not the grants), or
 * an explicit list of grants (the owner's own grant included, as S3
 * stores it). No ACL at all is `private`.
 *
 * Owns nothing: values in caller storage. Does not decide what a request
 * may do (s3_authz does, with s3_acl_perms) nor read records (s3_rq).
 *
 * Pure: no I/O, no globals; any thread.
 */
#ifndef GATEWAY_S3_ACL_H
#define GATEWAY_S3_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_err.h"
#include "gateway/s3_grant.h"
#include "gateway/xml.h"
#include "proto/meta.pb-c.h"

#define S3_ACL_GRANTS_MAX 100        /* grants in one ACL, as S3 */
#define S3_ACL_XML_MAX (64 * 1024)   /* an AccessControlPolicy body */
#define S3_ID_LEN 32                 /* a canonical id, raw */
#define S3_ID_HEX 64                 /* ... and in hex */

/* Permission bits (a grant's FULL_CONTROL gives all four). */
enum s3_perm {
	S3_PERM_READ = 1u << 0,
	S3_PERM_WRITE = 1u << 1,
	S3_PERM_READ_ACP = 1u << 2,
	S3_PERM_WRITE_ACP = 1u << 3,
	S3_PERM_FULL = 0xf,
};

enum s3_group {
	S3_GROUP_NONE = 0,           /* the grant names a user */
	S3_GROUP_ALL_USERS = 1,
	S3_GROUP_AUTH_USERS = 2,
	S3_GROUP_LOG_DELIVERY = 3,   /* accepted and shown; matches no request here */
};

enum s3_canned {
	S3_CANNED_NONE = 0,          /* explicit grants (or no ACL: private) */
	S3_CANNED_PRIVATE,
	S3_CANNED_PUBLIC_READ,
	S3_CANNED_PUBLIC_READ_WRITE,
	S3_CANNED_AUTHENTICATED_READ,
	S3_CANNED_BUCKET_OWNER_READ,
	S3_CANNED_BUCKET_OWNER_FULL_CONTROL,
	S3_CANNED_LOG_DELIVERY_WRITE,
};

struct s3_grant {
	uint8_t perm;                /* enum s3_perm: one bit, or S3_PERM_FULL */
	uint8_t group;               /* enum s3_group */
	uint8_t id[S3_ID_LEN];       /* the user's canonical id (group NONE) */
};

struct s3_acl {
	uint8_t canned;              /* enum s3_canned; grants unused unless NONE */
	uint16_t n;
	struct s3_grant g[S3_ACL_GRANTS_MAX];
};

/* Who is asking: a user (by name, with its canonical id) or anonymous. */
struct s3_principal {
	const char *user;            /* NULL: anonymous */
	bool admin;                  /* User.admin: may do everything */
	uint8_t id[S3_ID_LEN];       /* s3_acl_user_id(user) */
	/* The user's per-bucket grants (issue 16; s3_grant.h), the caller's
	 * (s3_rq keeps a copy); NULL: none. s3_principal_init clears them. */
	const struct s3_user_grant *grants;
	size_t n_grants;
};

/* ------------------------------------------------------------ ids */

/* The canonical id of user name, raw and as 64 lower-case hex digits
 * (plus NUL). */
void s3_acl_user_id(const char *user, uint8_t id[S3_ID_LEN]);
void s3_acl_user_id_hex(const char *user, char hex[S3_ID_HEX + 1]);

/* A principal for user (NULL or "": anonymous). */
void s3_principal_init(struct s3_principal *p, const char *user, bool admin);

/* ------------------------------------------------------------ making ACLs */

/* "public-read" -> S3_CANNED_PUBLIC_READ; false for an unknown name. */
bool s3_acl_canned_parse(const char *s, size_t n, enum s3_canned *out);
const char *s3_acl_canned_name(enum s3_canned c);

/* A canned ACL. */
void s3_acl_canned(struct s3_acl *a, enum s3_canned c);

/* What a request's ACL headers say. hdr(ctx, name, &len) returns a
 * header's value (not NUL-terminated) or NULL. Looks at x-amz-acl and the
 * five x-amz-grant-* headers. Returns:
 *   S3E_OK and *present false: none given;
 *   S3E_OK and *present true: *a filled (canned, or the grants; a grant
 *     header of "id=..., uri=..." pairs);
 *   InvalidRequest: both a canned ACL and grant headers;
 *   InvalidArgument: an unknown canned name, a malformed grant list, an
 *     id that is not 64 hex digits, an unknown group URI, over 100 grants;
 *   UnresolvableGrantByEmailAddress: a grant by e-mail address (users
 *     here have none). */
typedef const char *(*s3_acl_hdr_fn)(void *ctx, const char *name, size_t *len);
enum s3_err s3_acl_from_headers(s3_acl_hdr_fn hdr, void *ctx, struct s3_acl *a, bool *present);

/* An AccessControlPolicy body (bounded by S3_ACL_XML_MAX, parsed by
 * xml_parse's xmlp_acl: no DOCTYPE, bounded depth and text). owner_id: the
 * resource owner's canonical id; a document naming another Owner ID is
 * refused (AccessDenied, as S3). Returns S3E_OK and *a, MalformedACLError
 * (not well-formed, an unknown permission, a grantee of no known kind),
 * InvalidArgument (a bad id or group URI, over 100 grants),
 * UnresolvableGrantByEmailAddress, AccessDenied, InternalError (memory). */
enum s3_err s3_acl_from_xml(const char *body, size_t len, const uint8_t owner_id[S3_ID_LEN],
			    struct s3_acl *a);

/* ------------------------------------------------------------ reading ACLs */

/* a's grants, a canned ACL expanded for a resource owned by owner whose
 * bucket is owned by bucket_owner (the same for a bucket; bucket-owner-*
 * canned ACLs on a bucket are `private`, as S3 ignores them there). */
void s3_acl_expand(const struct s3_acl *a, const uint8_t owner[S3_ID_LEN],
		   const uint8_t bucket_owner[S3_ID_LEN], struct s3_acl *out);

/* The permission bits an expanded ACL grants p: its grants by p's id,
 * AllUsers for everyone, AuthenticatedUsers for a user. */
unsigned s3_acl_perms(const struct s3_acl *expanded, const struct s3_principal *p);

/* The ACL gives nobody but owner anything (private or
 * bucket-owner-full-control on the owner's own bucket): what a bucket
 * with ACLs disabled (BucketOwnerEnforced) still accepts. */
bool s3_acl_owner_only(const struct s3_acl *expanded, const uint8_t owner[S3_ID_LEN]);

/* Write the AccessControlPolicy document (declaration, namespace, Owner,
 * AccessControlList) of an expanded ACL. Names are shown for the ids the
 * caller knows: owner and bucket owner (user names), NULL for none. */
void s3_acl_render(struct xml_w *w, const struct s3_acl *expanded, const char *owner,
		   const char *bucket_owner);

/* ------------------------------------------------------------ records */

/* A record's ACL (NULL: private) into *a; false when the stored form is
 * not one apply accepts (read as private by callers that must go on). */
bool s3_acl_from_msg(const Iolake__Meta__Acl *m, struct s3_acl *a);

/* The record form of a, built in caller storage (grants[] and gp[] of
 * S3_ACL_GRANTS_MAX each); *m is valid while a and the arrays are. */
struct s3_acl_msg {
	Iolake__Meta__Acl m;
	Iolake__Meta__AclGrant grants[S3_ACL_GRANTS_MAX];
	Iolake__Meta__AclGrant *gp[S3_ACL_GRANTS_MAX];
};
void s3_acl_to_msg(const struct s3_acl *a, struct s3_acl_msg *out);

#endif
