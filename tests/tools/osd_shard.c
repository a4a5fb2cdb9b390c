/*
 * osd_shard.c — osd-shard, a test tool: reach behind the gateway to one
 * OSD's shards over its RPC port, as a bug or a misdirected write would.
 *
 *   osd-shard corrupt ADDR NPGS MINLEN MAXSHARD
 *       The first shard of PGs 0..NPGS-1 on the OSD at ADDR (host:port)
 *       with length >= MINLEN and shard index < MAXSHARD gets other bytes
 *       (every 97th byte flipped) written back with PutShard and their own
 *       crc32c: a "consistent" corruption that every crc check passes.
 *       Prints {"pg":P,"oid":"HEX","shard":S,"len":L,"crc_before":C,
 *       "crc_after":C2}; exit 3 when no shard fits.
 *   osd-shard crc ADDR PG OIDHEX SHARD
 *       Prints {"crc":C,"len":L} of the stored shard (payload checked
 *       against its range crc).
 *   osd-shard put ADDR PG OIDHEX SHARD LEN EPOCH
 *       PutShard of LEN bytes (a pattern) placed with map epoch EPOCH
 *       (PutShardRequest.map_epoch; 0: none), as a gateway holding that
 *       map would. Prints {"stored":L}; a refusal exits 1 with its status
 *       and message on stderr.
 *   osd-shard unreferenced ADDR NPGS META[,META...]
 *       Lists every shard of PGs 0..NPGS-1 on the OSD at ADDR and asks
 *       meta (CheckShards, the orphan sweep's question) whether a live
 *       object names each one's object id. Prints {"shards":N,"bytes":B,
 *       "unreferenced":U,"unreferenced_bytes":UB}: shards of deleted
 *       objects left behind show as unreferenced (so do PUTs in flight:
 *       ask when none is).
 *
 * Not for production: synchronous calls on a private loop (tests/lib/
 * osd_call.h). Exit 0, 1 (a call failed: message on stderr), 2 (usage).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/buf.h"
#include "common/crc.h"
#include "common/rpc.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta/state.h"
#include "tests/lib/osd_call.h"

static int usage(void)
{
	fprintf(stderr, "usage: osd-shard corrupt ADDR NPGS MINLEN MAXSHARD\n"
			"       osd-shard crc ADDR PG OIDHEX SHARD\n"
			"       osd-shard put ADDR PG OIDHEX SHARD LEN EPOCH\n"
			"       osd-shard unreferenced ADDR NPGS META[,META...]\n");
	return 2;
}

static void key_of(Iolake__Osd__ShardKey *k, uint32_t pg, uint8_t *oid, size_t len,
		   uint32_t shard)
{
	iolake__osd__shard_key__init(k);
	k->pg = pg;
	k->object_id.data = oid;
	k->object_id.len = len;
	k->shard = shard;
}

/* GetShard the whole shard; 0 and a reference in *out, or 1. */
static int get(uv_loop_t *loop, struct rpc_channel *ch, Iolake__Osd__ShardKey *k,
	       struct osd_call *c)
{
	Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	q.key = k;
	int st = osd_call_sync(loop, ch, OSD_M_GET, &q.base, NULL, c);
	if (st != RPC_OK) {
		fprintf(stderr, "osd-shard: GetShard: %s %s\n", rpc_status_name(st), c->message);
		return 1;
	}
	const Iolake__Osd__GetShardResponse *g = (const void *)c->resp;
	if (crc32c(0, buf_slice_data(&c->payload), c->payload.len) != g->range_crc32c) {
		fprintf(stderr, "osd-shard: GetShard payload fails its crc\n");
		return 1;
	}
	return 0;
}

static void print_hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static int corrupt(uv_loop_t *loop, struct rpc_channel *ch, uint32_t npgs, uint64_t minlen,
		   uint32_t maxshard)
{
	for (uint32_t pg = 0; pg < npgs; pg++) {
		Iolake__Osd__ListShardsRequest lq = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
		lq.pg = pg;
		lq.limit = 1000;
		struct osd_call lc;
		int st = osd_call_sync(loop, ch, OSD_M_LIST, &lq.base, NULL, &lc);
		if (st != RPC_OK) {
			fprintf(stderr, "osd-shard: ListShards: %s %s\n", rpc_status_name(st),
				lc.message);
			return 1;
		}
		const Iolake__Osd__ListShardsResponse *l = (const void *)lc.resp;
		for (size_t i = 0; i < l->n_shards; i++) {
			const Iolake__Osd__ShardInfo *si = l->shards[i];
			if (!si->key || si->key->pg != pg || si->length < minlen ||
			    si->key->shard >= maxshard)
				continue;
			uint8_t oid[64];
			size_t oid_len = si->key->object_id.len <= 64 ? si->key->object_id.len : 64;
			memcpy(oid, si->key->object_id.data, oid_len);
			uint32_t shard = si->key->shard;
			osd_call_clear(&lc);
			Iolake__Osd__ShardKey k;
			key_of(&k, pg, oid, oid_len, shard);
			struct osd_call gc;
			if (get(loop, ch, &k, &gc))
				return 1;
			size_t len = gc.payload.len;
			struct buf *b = buf_copy(buf_slice_data(&gc.payload), len);
			uint32_t before = crc32c(0, b->data, len);
			osd_call_clear(&gc);
			for (size_t at = 0; at < len; at += 97)
				b->data[at] ^= 0x5a;
			Iolake__Osd__PutShardRequest pq = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
			pq.key = &k;
			pq.length = len;
			pq.crc32c = crc32c(0, b->data, len);
			struct buf_slice pl = { .buf = b, .off = 0, .len = len };
			struct osd_call pc;
			st = osd_call_sync(loop, ch, OSD_M_PUT, &pq.base, &pl, &pc);
			osd_call_clear(&pc);
			if (st != RPC_OK) {
				fprintf(stderr, "osd-shard: PutShard: %s\n", rpc_status_name(st));
				buf_unref(b);
				return 1;
			}
			printf("{\"pg\":%u,\"oid\":\"", pg);
			print_hex(oid, oid_len);
			printf("\",\"shard\":%u,\"len\":%zu,\"crc_before\":%" PRIu32
			       ",\"crc_after\":%" PRIu32 "}\n", shard, len, before, pq.crc32c);
			buf_unref(b);
			return 0;
		}
		osd_call_clear(&lc);
	}
	fprintf(stderr, "osd-shard: no shard of length >= %" PRIu64 " below shard %u\n", minlen,
		maxshard);
	return 3;
}

/* OIDHEX into oid[64]: its length, or 0 when it is not 1..64 hex bytes. */
static size_t oid_of(const char *hex, uint8_t oid[64])
{
	size_t n = strlen(hex) / 2;
	if (n < 1 || n > 64 || strlen(hex) % 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 0;
		oid[i] = (uint8_t)v;
	}
	return n;
}

static int put(uv_loop_t *loop, struct rpc_channel *ch, uint32_t pg, const char *hex,
	       uint32_t shard, size_t len, uint64_t epoch)
{
	uint8_t oid[64];
	size_t n = oid_of(hex, oid);
	if (!n || len > (64u << 20))
		return usage();
	struct buf *b = buf_new(len ? len : 1);
	if (!b)
		return 1;
	for (size_t i = 0; i < len; i++)
		b->data[i] = (uint8_t)(i * 31 + shard);
	Iolake__Osd__ShardKey k;
	key_of(&k, pg, oid, n, shard);
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	q.key = &k;
	q.length = len;
	q.crc32c = crc32c(0, b->data, len);
	q.map_epoch = epoch;
	struct buf_slice pl = { .buf = b, .off = 0, .len = len };
	struct osd_call pc;
	int st = osd_call_sync(loop, ch, OSD_M_PUT, &q.base, len ? &pl : NULL, &pc);
	if (st != RPC_OK)
		fprintf(stderr, "osd-shard: PutShard: %s: %s\n", rpc_status_name(st), pc.message);
	else
		printf("{\"stored\":%zu}\n", len);
	osd_call_clear(&pc);
	buf_unref(b);
	return st == RPC_OK ? 0 : 1;
}

static int crc(uv_loop_t *loop, struct rpc_channel *ch, uint32_t pg, const char *hex,
	       uint32_t shard)
{
	uint8_t oid[64];
	size_t n = oid_of(hex, oid);
	if (!n)
		return usage();
	Iolake__Osd__ShardKey k;
	key_of(&k, pg, oid, n, shard);
	struct osd_call gc;
	if (get(loop, ch, &k, &gc))
		return 1;
	printf("{\"crc\":%" PRIu32 ",\"len\":%zu}\n",
	       crc32c(0, buf_slice_data(&gc.payload), gc.payload.len), gc.payload.len);
	osd_call_clear(&gc);
	return 0;
}

struct check_call {
	bool done;
	int err;
	size_t n;
	bool referenced[META_CHECK_SHARDS_MAX];
};

static void on_checked(void *ud, int err, const ProtobufCMessage *resp)
{
	struct check_call *c = ud;
	c->done = true;
	c->err = err;
	if (err)
		return;
	const Iolake__Meta__CheckShardsResponse *r = (const void *)resp;
	if (r->status != IOLAKE__META__STATUS__STATUS_OK || r->n_referenced != c->n) {
		c->err = -EPROTO;
		return;
	}
	for (size_t i = 0; i < c->n; i++)   /* protobuf_c_boolean is an int, not a bool */
		c->referenced[i] = r->referenced[i] != 0;
}

/* One page of a PG's shards: ask meta about their object ids, count. */
static char unref_list[4096];   /* "pg/shard" of the first unreferenced ones */

static int check_page(uv_loop_t *loop, struct meta_client *mc, uint32_t pg,
		      const Iolake__Osd__ListShardsResponse *l, uint64_t out[4])
{
	ProtobufCBinaryData ids[META_CHECK_SHARDS_MAX];
	struct check_call c = { .n = 0 };
	for (size_t i = 0; i < l->n_shards; i++) {
		const Iolake__Osd__ShardInfo *si = l->shards[i];
		if (si->key->object_id.len < META_REF_ID_LEN)
			return 1;
		ids[c.n].data = si->key->object_id.data;
		ids[c.n].len = META_REF_ID_LEN;   /* object id || be32(segment) */
		c.n++;
	}
	if (!c.n)
		return 0;
	Iolake__Meta__CheckShardsRequest q = IOLAKE__META__CHECK_SHARDS_REQUEST__INIT;
	q.pg = pg;
	q.object_ids = ids;
	q.n_object_ids = c.n;
	if (meta_client_call(mc, META_M_CHECK_SHARDS, &q.base, on_checked, &c))
		return 1;
	while (!c.done)
		uv_run(loop, UV_RUN_ONCE);
	if (c.err) {
		fprintf(stderr, "osd-shard: CheckShards pg %u: %d\n", pg, c.err);
		return 1;
	}
	for (size_t i = 0; i < l->n_shards; i++) {
		out[0]++;
		out[1] += l->shards[i]->length;
		if (!c.referenced[i]) {
			out[2]++;
			out[3] += l->shards[i]->length;
			size_t at = strlen(unref_list);
			if (at + 24 < sizeof(unref_list))
				snprintf(unref_list + at, sizeof(unref_list) - at, "%s\"%u/%u\"",
					 at ? "," : "", pg, l->shards[i]->key->shard);
		}
	}
	return 0;
}

static int unreferenced(uv_loop_t *loop, struct rpc_channel *ch, uint32_t npgs, char *meta)
{
	const char *members[META_CLIENT_MAX_MEMBERS];
	size_t n = 0;
	for (char *tok = strtok(meta, ","); tok && n < META_CLIENT_MAX_MEMBERS;
	     tok = strtok(NULL, ","))
		members[n++] = tok;
	struct meta_client *mc;
	struct meta_client_opts mo = { .members = members, .n_members = n };
	if (!n || meta_client_new(loop, &mo, &mc))
		return usage();
	uint64_t sum[4] = { 0 };
	int rc = 0;
	for (uint32_t pg = 0; pg < npgs && !rc; pg++) {
		Iolake__Osd__ShardKey after;
		uint8_t after_oid[64];
		bool have_after = false, more = true;
		while (more && !rc) {
			Iolake__Osd__ListShardsRequest lq = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
			lq.pg = pg;
			lq.limit = META_CHECK_SHARDS_MAX;
			if (have_after)
				lq.after = &after;
			struct osd_call lc;
			int st = osd_call_sync(loop, ch, OSD_M_LIST, &lq.base, NULL, &lc);
			if (st != RPC_OK) {
				fprintf(stderr, "osd-shard: ListShards: %s %s\n", rpc_status_name(st),
					lc.message);
				rc = 1;
				break;
			}
			const Iolake__Osd__ListShardsResponse *l = (const void *)lc.resp;
			rc = check_page(loop, mc, pg, l, sum);
			more = l->more && l->n_shards;
			if (more) {
				const Iolake__Osd__ShardKey *k = l->shards[l->n_shards - 1]->key;
				size_t len = k->object_id.len <= 64 ? k->object_id.len : 64;
				memcpy(after_oid, k->object_id.data, len);
				key_of(&after, pg, after_oid, len, k->shard);
				have_after = true;
			}
			osd_call_clear(&lc);
		}
	}
	meta_client_close(mc);
	if (!rc)
		printf("{\"shards\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"unreferenced\":%" PRIu64
		       ",\"unreferenced_bytes\":%" PRIu64 ",\"unreferenced_at\":[%s]}\n", sum[0],
		       sum[1], sum[2], sum[3], unref_list);
	return rc;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 3)
		return usage();
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct rpc_channel *ch = rpc_channel_open(&loop, argv[2], NULL);
	if (!ch) {
		fprintf(stderr, "osd-shard: cannot open a channel to %s\n", argv[2]);
		return 1;
	}
	int rc;
	if (!strcmp(argv[1], "corrupt") && argc == 6)
		rc = corrupt(&loop, ch, (uint32_t)strtoul(argv[3], NULL, 10),
			     strtoull(argv[4], NULL, 10), (uint32_t)strtoul(argv[5], NULL, 10));
	else if (!strcmp(argv[1], "unreferenced") && argc == 5)
		rc = unreferenced(&loop, ch, (uint32_t)strtoul(argv[3], NULL, 10), argv[4]);
	else if (!strcmp(argv[1], "crc") && argc == 6)
		rc = crc(&loop, ch, (uint32_t)strtoul(argv[3], NULL, 10), argv[4],
			 (uint32_t)strtoul(argv[5], NULL, 10));
	else if (!strcmp(argv[1], "put") && argc == 8)
		rc = put(&loop, ch, (uint32_t)strtoul(argv[3], NULL, 10), argv[4],
			 (uint32_t)strtoul(argv[5], NULL, 10), strtoull(argv[6], NULL, 10),
			 strtoull(argv[7], NULL, 10));
	else
		rc = usage();
	rpc_channel_close(ch);
	while (uv_run(&loop, UV_RUN_DEFAULT))
		;
	uv_loop_close(&loop);
	return rc;
}
