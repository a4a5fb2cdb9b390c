/*
 * pb_block.h — a deep copy of a protobuf-c message whose pieces live in
 * one block of memory (a few when the first is too small), freed in one
 * go.
 *
 * For messages copied on a hot path and freed whole: a submit's Op, which
 * meta's client keeps (every attempt sends the same bytes) and its key
 * range router keeps again. The copy is the message's packed form
 * unpacked with a bump allocator, so it costs one pack, one unpack and one
 * or two malloc calls, where protobuf-c's default allocator pays a malloc
 * and a free per string, bytes field, sub-message and repeated array.
 *
 * The copy may be read and its scalar fields set; pointer fields must not
 * be replaced or freed one by one (nothing in it was allocated alone).
 * Any thread; no state.
 */
#ifndef COMMON_PB_BLOCK_H
#define COMMON_PB_BLOCK_H

#include <protobuf-c/protobuf-c.h>

/* A copy of m in one block. Free it with pb_block_free() only, never
 * protobuf_c_message_free_unpacked(). NULL: out of memory (or m does not
 * pack into something protobuf-c unpacks again: never for a valid m). */
ProtobufCMessage *pb_block_copy(const ProtobufCMessage *m);

/* Frees a pb_block_copy() result and every piece of it; NULL is a no-op. */
void pb_block_free(ProtobufCMessage *copy);

#endif /* COMMON_PB_BLOCK_H */
