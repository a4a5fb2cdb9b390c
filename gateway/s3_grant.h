/*
 * s3_grant.h — a user's per-bucket grants (issue 16) as the gateway
 * carries them: from meta's GetAccessKey (User.grants) through the
 * credential cache (s3_auth) onto the request's principal, where s3_authz
 * reads them as an identity-based Allow. Types only.
 */
#ifndef GATEWAY_S3_GRANT_H
#define GATEWAY_S3_GRANT_H

#include <stdint.h>

#define S3_GRANTS_MAX 32            /* meta keeps at most as many per user */
#define S3_GRANT_BUCKET_MAX 63      /* S3 bucket names */

/* Cumulative: each level allows what the one below does (s3_authz.c
 * says which actions). Values as meta.proto's GrantLevel. */
enum s3_grant_level { S3_GRANT_NONE = 0, S3_GRANT_READ = 1, S3_GRANT_WRITE = 2,
		      S3_GRANT_FULL = 3 };

struct s3_user_grant {
	char bucket[S3_GRANT_BUCKET_MAX + 1];
	uint8_t level;                  /* enum s3_grant_level */
	uint64_t bucket_created_ms;     /* the bucket it was granted on: a bucket made
	                                 * again under the name is not it */
};

#endif
