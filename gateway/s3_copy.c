/*
 * s3_copy.c — CopyObject and UploadPartCopy over one server-side copy
 * pump (placeholder: bound in a later commit).
 */
#include "gateway/s3_ops_int.h"

void s3_copy_bind(struct s3_server_cfg *s)
{
	(void)s;
}
