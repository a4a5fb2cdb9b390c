/*
 * service_internal.h — what the two halves of the Meta RPC service share,
 * and nothing else includes: service.c (the handler table, dispatch,
 * writes and the member's own calls) and service_read.c (the answers of
 * reads from a group's state). What the rest of the member calls is in
 * meta/node_internal.h (node_service_register, node_serve_read).
 */
#ifndef META_SERVICE_INTERNAL_H
#define META_SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rpc.h"

/* r's request message as its type (the server's until r is answered). */
#define REQ(type, r) ((const type *)rpc_req_msg(r))

/* service.c. The group r names: its uint64 field 100 (meta.proto), 0 when
 * the message has none (root-only calls) or leaves it unset. Any thread. */
uint64_t node_req_group_id(struct rpc_req *r);

/* service_read.c. HeadObject and GetVersion answered on the caller's
 * thread (rpc_direct_fn; ud is the struct meta_node): true when r was
 * answered, false when the call declines (nothing answered: the server
 * runs the method's handler on the loop, as if there were none). */
bool node_serve_direct_head_object(struct rpc_req *r, void *ud);
bool node_serve_direct_get_version(struct rpc_req *r, void *ud);

#endif
