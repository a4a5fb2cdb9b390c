/*
 * test_proto_methods.c — the method numbers defined once beside the
 * .proto files (common/proto/SVC_methods.h) name the methods the generated
 * service descriptors have at those indexes, and every method has one.
 */
#include <check.h>
#include <string.h>

#include "common/proto/meta_methods.h"
#include "common/proto/native_methods.h"
#include "common/proto/osd_methods.h"

START_TEST(osd_methods_match_descriptor)
{
	static const struct {
		unsigned m;
		const char *name;
	} want[] = {
		{ OSD_M_PUT, "PutShard" },     { OSD_M_GET, "GetShard" },
		{ OSD_M_DEL, "DeleteShard" },  { OSD_M_STAT, "StatShard" },
		{ OSD_M_STATS, "StatShards" }, { OSD_M_LIST, "ListShards" },
		{ OSD_M_STATUS, "Status" },    { OSD_M_LIST_BAD, "ListBadShards" },
	};
	ck_assert_uint_eq(OSD_SVC->n_methods, OSD_M_COUNT);
	ck_assert_uint_eq(sizeof(want) / sizeof(want[0]), OSD_M_COUNT);
	for (size_t i = 0; i < OSD_M_COUNT; i++)
		ck_assert_str_eq(OSD_SVC->methods[want[i].m].name, want[i].name);
}
END_TEST

START_TEST(meta_methods_match_descriptor)
{
	static const struct {
		unsigned m;
		const char *name;
	} want[] = {
		{ META_M_SUBMIT, "Submit" },
		{ META_M_GET_BUCKET, "GetBucket" },
		{ META_M_LIST_BUCKETS, "ListBuckets" },
		{ META_M_HEAD_OBJECT, "HeadObject" },
		{ META_M_LIST_OBJECTS, "ListObjects" },
		{ META_M_GET_ACCESS_KEY, "GetAccessKey" },
		{ META_M_LIST_USERS, "ListUsers" },
		{ META_M_GET_MAP, "GetMap" },
		{ META_M_WATCH_MAP, "WatchMap" },
		{ META_M_HEARTBEAT, "Heartbeat" },
		{ META_M_STATUS, "Status" },
		{ META_M_ADD_MEMBER, "AddMember" },
		{ META_M_REMOVE_MEMBER, "RemoveMember" },
		{ META_M_METRICS, "Metrics" },
		{ META_M_GET_UPLOAD, "GetUpload" },
		{ META_M_LIST_PARTS, "ListParts" },
		{ META_M_LIST_UPLOADS, "ListUploads" },
		{ META_M_LIST_GC, "ListGc" },
		{ META_M_REPORT_PGS, "ReportPgs" },
		{ META_M_FLAG_PGS, "FlagPgs" },
		{ META_M_PG_STATS, "PgStats" },
		{ META_M_CHECK_SHARDS, "CheckShards" },
		{ META_M_CONFIRM_LEADER, "ConfirmLeader" },
		{ META_M_FETCH_SNAPSHOT, "FetchSnapshot" },
		{ META_M_GET_RANGES, "GetRanges" },
		{ META_M_GET_VERSION, "GetVersion" },
		{ META_M_LIST_VERSIONS, "ListVersions" },
		{ META_M_READ_RANGE, "ReadRange" },
		{ META_M_GET_PART_ROWS, "GetPartRows" },
	};
	ck_assert_uint_eq(META_SERVICE->n_methods, META_M_COUNT);
	ck_assert_uint_eq(sizeof(want) / sizeof(want[0]), META_M_COUNT);
	for (size_t i = 0; i < META_M_COUNT; i++)
		ck_assert_str_eq(META_SERVICE->methods[want[i].m].name, want[i].name);
}
END_TEST

START_TEST(native_methods_match_descriptor)
{
	static const struct {
		unsigned m;
		const char *name;
	} want[] = {
		{ NATIVE_M_PUT, "Put" },           { NATIVE_M_PUT_BEGIN, "PutBegin" },
		{ NATIVE_M_PUT_APPEND, "PutAppend" }, { NATIVE_M_PUT_COMMIT, "PutCommit" },
		{ NATIVE_M_PUT_ABORT, "PutAbort" }, { NATIVE_M_GET, "Get" },
		{ NATIVE_M_HEAD, "Head" },         { NATIVE_M_DELETE, "Delete" },
		{ NATIVE_M_LIST, "List" },
		{ NATIVE_M_HELLO, "Hello" },
		{ NATIVE_M_LOGIN, "Login" },
	};
	ck_assert_uint_eq(NATIVE_SVC->n_methods, NATIVE_M_COUNT);
	ck_assert_uint_eq(sizeof(want) / sizeof(want[0]), NATIVE_M_COUNT);
	for (size_t i = 0; i < NATIVE_M_COUNT; i++)
		ck_assert_str_eq(NATIVE_SVC->methods[want[i].m].name, want[i].name);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proto_methods");
	TCase *tc = tcase_create("proto_methods");
	tcase_add_test(tc, osd_methods_match_descriptor);
	tcase_add_test(tc, meta_methods_match_descriptor);
	tcase_add_test(tc, native_methods_match_descriptor);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
