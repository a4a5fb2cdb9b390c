/*
 * fuzz_meta_apply.c — libFuzzer target for meta's state machine on the
 * bytes of a Raft entry (meta/state.c meta_state_apply): the decoder of
 * the entry frame and its OpBatch, and every op's validation and apply,
 * on a real RocksDB state under /dev/shm. An entry that does not decode
 * must be recorded as skipped (IOL_EPROTOCOL); one whose op level is
 * above this build's is refused (IOL_EBAD_FORMAT) and neither applied nor
 * skipped; ops that do must each be
 * answered, with an error for bad names, sizes or references; nothing may
 * crash, and RocksDB must never fail (-EIO would stop a member for good).
 *
 * The input is an OpBatch's protobuf bytes (the target frames it as an
 * entry), or, when it starts with the frame's magic "IOLM", a whole
 * entry. The state carries over between inputs, as a member's does
 * between entries; it is recreated every 20,000 inputs to stay small.
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/err.h"
#include "meta/state.h"

static char dir[64];
static struct meta_state *st;
static uint64_t idx, inputs;

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

static void fresh(void)
{
	if (st) {
		meta_state_close(st);
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
	snprintf(dir, sizeof(dir), "/dev/shm/fuzz-meta-apply-%d", (int)getpid());
	struct meta_state_opts o = { .cache_bytes = 8 << 20, .write_buffer_bytes = 4 << 20 };
	if (meta_state_open(dir, &o, &st))
		abort();
	idx = meta_state_applied_index(st);
}

static void cleanup(void)
{
	if (st) {
		meta_state_close(st);
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fresh();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (++inputs % 20000 == 0)
		fresh();
	static uint8_t entry[1 << 20];
	size_t len;
	if (size >= 4 && memcmp(data, "IOLM", 4) == 0) {
		if (size > sizeof(entry))
			return 0;
		memcpy(entry, data, size);
		len = size;
	} else {
		if (size + 8 + 7 > sizeof(entry))
			return 0;
		uint32_t hdr[2] = { 0x4d4c4f49u, (uint32_t)size };
		memcpy(entry, hdr, 8);
		memcpy(entry + 8, data, size);
		len = (8 + size + 7) & ~(size_t)7;
		memset(entry + 8 + size, 0, len - 8 - size);
	}
	static struct meta_op_result res[META_BATCH_MAX_OPS];
	int n = meta_state_apply(st, ++idx, entry, len, res, META_BATCH_MAX_OPS);
	if (n == IOL_EBAD_FORMAT) {
		/* OpBatch.op_level above this build's: neither applied nor
		 * skipped (the member stops; meta/state.h, op levels) */
		if (meta_state_applied_index(st) != --idx)
			__builtin_trap();
		return 0;
	}
	if (n == -EIO || n == -ENOBUFS || (n < 0 && n != IOL_EPROTOCOL))
		__builtin_trap();
	if (meta_state_applied_index(st) != idx)
		__builtin_trap();   /* applied or skipped, the index moves */
	return 0;
}
