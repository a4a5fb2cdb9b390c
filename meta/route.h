/*
 * route.h — internal to meta/client.c: routing of object and multipart
 * calls by key range (meta.proto RangeDesc). The client hands a call here
 * when it addresses the root (group 0, range id 0) and names a bucket's
 * key; route.c reads the bucket's range table from the root (GetRanges,
 * cached per bucket), sends the call to the range's group with its range
 * id, and on WRONG_RANGE (or a group no member hosts) re-reads the table,
 * opens a range its group has not opened yet, and retries, at most
 * ROUTE_TRIES times. Listings walk the ranges in order (meta/range.h);
 * DeleteBucket seals every range first (and unseals them when one is not
 * empty), and CheckShards is asked of the root and every live group (a
 * shard is referenced when any group says so; any group not answering
 * fails the call). A bucket without ranges goes to the root as before.
 *
 * Thread: the client's loop. Every routed call has one inner call in
 * flight at all times, so closing the client finishes them all.
 */
#ifndef META_ROUTE_H
#define META_ROUTE_H

#include <stdbool.h>

#include "meta/client.h"

struct meta_route;

int meta_route_new(struct meta_client *c, struct meta_route **out);
void meta_route_free(struct meta_route *r);

/* Whether meta_route_call / meta_route_submit take this call or op. */
bool meta_route_wants_call(unsigned method, const ProtobufCMessage *req);
bool meta_route_wants_op(const Iolake__Meta__Op *op);

/* This client submitted an op to the root: bucket records it cached for
 * HeadObject may be stale (route.c: struct bucket_slot). */
void meta_route_root_changed(struct meta_route *r);

/* As meta_client_call / meta_client_submit. */
int meta_route_call(struct meta_route *r, unsigned method, const ProtobufCMessage *req,
		    meta_client_cb cb, void *ud);
int meta_route_submit(struct meta_route *r, const Iolake__Meta__Op *op,
		      meta_client_submit_cb cb, void *ud);

#endif
