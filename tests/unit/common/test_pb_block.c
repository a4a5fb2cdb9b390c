/*
 * test_pb_block.c — one-block copies of protobuf-c messages
 * (common/pb_block.c): a PutObject Op with a 4 KiB inline body, user
 * metadata and tags copies to the same packed bytes and lives on after
 * its source is gone; a record whose unpacked form outgrows the first
 * block (thousands of small map entries) chains more blocks and still
 * copies exactly; scalar fields of a copy may be set; an empty message
 * copies; NULL frees as a no-op. Leaks and overruns show under ASan
 * (make B=build-asan SAN=1 build-asan/tests/unit/common/test_pb_block).
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pb_block.h"
#include "proto/meta.pb-c.h"

/* Packed bytes of m (malloc'd, *len set). */
static uint8_t *packed(const ProtobufCMessage *m, size_t *len)
{
	*len = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(*len ? *len : 1);
	ck_assert_ptr_nonnull(b);
	protobuf_c_message_pack(m, b);
	return b;
}

static void assert_same(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la, lb;
	uint8_t *pa = packed(a, &la), *pb = packed(b, &lb);
	ck_assert_uint_eq(la, lb);
	ck_assert_mem_eq(pa, pb, la);
	free(pa);
	free(pb);
}

/* A heap Op with a record of n_meta user metadata entries and a body of
 * body bytes (freed with protobuf_c_message_free_unpacked(NULL)). */
static Iolake__Meta__Op *make_op(size_t n_meta, size_t body)
{
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	r.bucket = "bench";
	r.key = "p4KiB/000123";
	r.size = body;
	r.etag = "0123456789abcdef0123456789abcdef";
	r.content_type = "application/octet-stream";
	uint8_t *data = malloc(body ? body : 1);
	for (size_t i = 0; i < body; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	r.inline_data.data = data;
	r.inline_data.len = body;
	Iolake__Meta__ObjectRecord__UserMetaEntry *e = calloc(n_meta ? n_meta : 1, sizeof(*e));
	Iolake__Meta__ObjectRecord__UserMetaEntry **ep = calloc(n_meta ? n_meta : 1, sizeof(*ep));
	char (*names)[24] = calloc(n_meta ? n_meta : 1, sizeof(*names));
	for (size_t i = 0; i < n_meta; i++) {
		iolake__meta__object_record__user_meta_entry__init(&e[i]);
		snprintf(names[i], sizeof(names[i]), "m%zu", i);
		e[i].key = names[i];
		e[i].value = "v";
		ep[i] = &e[i];
	}
	r.n_user_meta = n_meta;
	r.user_meta = ep;
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	po.record = &r;
	po.if_none_match = true;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op.put_object = &po;
	op.client_id = 7;
	op.request_id = 42;
	/* A heap copy by the default allocator: the test frees its stack
	 * parts now, so a copy that pointed into them would fail below. */
	size_t len;
	uint8_t *p = packed(&op.base, &len);
	Iolake__Meta__Op *heap = iolake__meta__op__unpack(NULL, len, p);
	ck_assert_ptr_nonnull(heap);
	free(p);
	free(data);
	free(e);
	free(ep);
	free(names);
	return heap;
}

START_TEST(test_inline_put)
{
	Iolake__Meta__Op *src = make_op(3, 4096);
	Iolake__Meta__Op *c = (Iolake__Meta__Op *)pb_block_copy(&src->base);
	ck_assert_ptr_nonnull(c);
	assert_same(&src->base, &c->base);
	/* Independent of its source: the source's memory is gone. */
	protobuf_c_message_free_unpacked(&src->base, NULL);
	ck_assert_int_eq(c->body_case, IOLAKE__META__OP__BODY_PUT_OBJECT);
	ck_assert_str_eq(c->put_object->record->key, "p4KiB/000123");
	ck_assert_uint_eq(c->put_object->record->inline_data.len, 4096);
	ck_assert_uint_eq(c->put_object->record->inline_data.data[4095], (uint8_t)(4095 * 7 + 3));
	ck_assert_uint_eq(c->put_object->record->n_user_meta, 3);
	ck_assert_str_eq(c->put_object->record->user_meta[2]->key, "m2");
	/* Scalars may be set (the client stamps ids and acked_below). */
	c->request_id = 43;
	c->acked_below = 40;
	c->range_id = 9;
	Iolake__Meta__Op *again = (Iolake__Meta__Op *)pb_block_copy(&c->base);
	ck_assert_uint_eq(again->request_id, 43);
	ck_assert_uint_eq(again->acked_below, 40);
	ck_assert_uint_eq(again->range_id, 9);
	assert_same(&c->base, &again->base);
	pb_block_free(&again->base);
	pb_block_free(&c->base);
}
END_TEST

START_TEST(test_outgrows_first_block)
{
	/* ~5 packed bytes per entry, ~100 unpacked: far past the first
	 * block's 2x, so most entries land in chained blocks. */
	Iolake__Meta__Op *src = make_op(5000, 10);
	Iolake__Meta__Op *c = (Iolake__Meta__Op *)pb_block_copy(&src->base);
	ck_assert_ptr_nonnull(c);
	assert_same(&src->base, &c->base);
	protobuf_c_message_free_unpacked(&src->base, NULL);
	ck_assert_uint_eq(c->put_object->record->n_user_meta, 5000);
	ck_assert_str_eq(c->put_object->record->user_meta[4999]->key, "m4999");
	pb_block_free(&c->base);
}
END_TEST

START_TEST(test_empty_and_null)
{
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	Iolake__Meta__Op *c = (Iolake__Meta__Op *)pb_block_copy(&op.base);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->body_case, IOLAKE__META__OP__BODY__NOT_SET);
	assert_same(&op.base, &c->base);
	pb_block_free(&c->base);
	pb_block_free(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pb_block");
	TCase *tc = tcase_create("pb_block");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_inline_put);
	tcase_add_test(tc, test_outgrows_first_block);
	tcase_add_test(tc, test_empty_and_null);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
