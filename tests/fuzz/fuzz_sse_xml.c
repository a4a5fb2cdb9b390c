/*
 * fuzz_sse_xml.c — libFuzzer target for PutBucketEncryption's document,
 * the ServerSideEncryptionConfiguration parser (xml_parse's xmlp_sse).
 *
 * Input: the document, copied into an exactly-sized buffer (no NUL), so
 * a read past the end is an ASan report. Checked: on success every value
 * is NUL-terminated inside its field; on failure the error is one of the
 * documented ones.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/xml_parse.h"

static void terminated(const char *f, size_t cap)
{
	if (!memchr(f, '\0', cap))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *doc = malloc(size ? size : 1);
	memcpy(doc, data, size);
	struct xmlp_sse x;
	int rc = xmlp_sse(doc, size, 4096, &x);
	if (rc == 0) {
		terminated(x.algorithm, sizeof(x.algorithm));
		terminated(x.kms_key_id, sizeof(x.kms_key_id));
		terminated(x.bucket_key, sizeof(x.bucket_key));
	} else if (rc != -EBADMSG && rc != -E2BIG && rc != -ENOMEM) {
		abort();
	}
	free(doc);
	return 0;
}
