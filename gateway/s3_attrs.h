/*
 * s3_attrs.h — an object's additional checksums on the S3 surface: the
 * record's Checksum entry from a PUT's verified body, the
 * x-amz-checksum-<algo> response headers, and GetObjectAttributes (a
 * handler in s3_attrs.c's table, s3_handlers.h).
 *
 * A checksum goes out only for the bytes it was computed over, the whole
 * object: the callers do not ask for it on a range or one part.
 *
 * Owns nothing. Does not compute checksums (s3_checksum and the front end
 * do) nor commit records (s3_put.c).
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_ATTRS_H
#define GATEWAY_S3_ATTRS_H

#include <stdbool.h>

#include "gateway/s3_server.h"
#include "proto/meta.pb-c.h"

/* The verified body's additional checksum (s3_call_checksum) as a record
 * entry into *out, pointing into the call (valid while it is); false when
 * the request had none. */
bool s3_attrs_record_checksum(const struct s3_call *c, Iolake__Meta__Checksum *out);

/* An upload's response: x-amz-checksum-<algo> of the verified body, when
 * there was one. */
void s3_attrs_put_checksum_header(struct s3_call *c);

/* The request says x-amz-checksum-mode: ENABLED. */
bool s3_attrs_checksum_mode(struct s3_call *c);

/* The record's checksum as response headers (x-amz-checksum-<algo>,
 * x-amz-checksum-type). Only for a response carrying the whole object. */
void s3_attrs_checksum_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r);

/* A record's Checksum entry as a value; false when it is not one. */
bool s3_attrs_value(const Iolake__Meta__Checksum *ck, struct s3_ck_value *v);

/* <Checksum<ALGO>>value</...> of ck into w ("-<parts>" after a composite
 * value when parts > 0); nothing when ck is NULL or not a value. */
void s3_attrs_xml_checksum(struct xml_w *w, const Iolake__Meta__Checksum *ck, uint32_t parts);

/* A whole-object response of a multipart object read with partNumber=
 * (x-amz-checksum-mode: ENABLED): the part's own checksum, when the
 * object kept its parts' (ObjectRecord.part_list). */
void s3_attrs_part_checksum_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r,
				    uint32_t part_number);

#endif
