/*
 * s3_list.h — what the listing handlers (s3_list.c) share with the other
 * listing, ListObjectVersions (s3_version.c).
 */
#ifndef GATEWAY_S3_LIST_H
#define GATEWAY_S3_LIST_H

#include <stdbool.h>

#include "gateway/xml.h"

/* <name>v</name>, v percent-encoded when url (encoding-type=url: every
 * byte but unreserved characters and '/'). */
void s3_list_key_elem(struct xml_w *w, const char *name, const char *v, bool url);

#endif
