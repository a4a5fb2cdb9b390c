/*
 * test_xml_parse.c — request XML: CompleteMultipartUpload and Delete as
 * aws-cli and boto3 send them (with and without the S3 namespace), the
 * rejections S3 makes (malformed, wrong root, missing fields, part numbers
 * out of range, 1,001 keys), and hostile input (billion laughs, external
 * entities, deep nesting, huge text) refused without expanding anything;
 * Tagging documents (empty TagSet, escapes, missing Key/Value, too many).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/xml_parse.h"

#define MAX (1u << 20)

static int mpu(const char *x, struct xmlp_part *parts, size_t max, size_t *n)
{
	return xmlp_complete_mpu(x, strlen(x), MAX, parts, max, n);
}

START_TEST(test_complete_mpu)
{
	struct xmlp_part parts[4];
	size_t n;
	const char *ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			 "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			 "<Part><ETag>\"a54357aff0632cce46d942af68356b38\"</ETag><PartNumber>1</PartNumber></Part>\n"
			 "  <Part><PartNumber>2</PartNumber><ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag>"
			 "<ChecksumCRC32>x</ChecksumCRC32></Part></CompleteMultipartUpload>";
	ck_assert_int_eq(mpu(ok, parts, 4, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(parts[0].part_number, 1);
	ck_assert_str_eq(parts[0].etag, "\"a54357aff0632cce46d942af68356b38\"");
	ck_assert_uint_eq(parts[1].part_number, 2);
	ck_assert_str_eq(parts[1].etag, "\"0c78aef83f66abc1fa1e8477f296d394\"");
	ck_assert_uint_eq(parts[0].ck_algo, 0);
	ck_assert_str_eq(parts[0].ck, "");
	ck_assert_uint_eq(parts[1].ck_algo, 1);   /* CRC32 */
	ck_assert_str_eq(parts[1].ck, "x");
	ck_assert_int_eq(mpu("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag>"
			     "<ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME><ChecksumFoo>z</ChecksumFoo>"
			     "</Part></CompleteMultipartUpload>", parts, 4, &n), 0);
	ck_assert_uint_eq(parts[0].ck_algo, 5);
	ck_assert_str_eq(parts[0].ck, "AAAAAAAAAAA=");
	/* Out of order is parsed as sent: InvalidPartOrder is the caller's. */
	ck_assert_int_eq(mpu("<CompleteMultipartUpload><Part><PartNumber>3</PartNumber><ETag>e</ETag></Part>"
			     "<Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
			     parts, 4, &n), 0);
	ck_assert_uint_eq(parts[0].part_number, 3);

	const char *bad[] = {
		"",
		"<CompleteMultipartUpload>",
		"<CompleteMultipartUpload></CompleteMultipartUpload>",
		"<Other><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></Other>",
		"<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload><x/>",
		/* two checksums in a part, an empty one, one too long */
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag><ChecksumCRC32>a</ChecksumCRC32>"
		"<ChecksumSHA1>b</ChecksumSHA1></Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag><ChecksumCRC32></ChecksumCRC32>"
		"</Part></CompleteMultipartUpload>",
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag><ChecksumSHA256>"
		"0123456789012345678901234567890123456789012345678</ChecksumSHA256></Part></CompleteMultipartUpload>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(mpu(bad[i], parts, 4, &n) == -EBADMSG, "bad %zu", i);
	/* More parts than the caller allows. */
	ck_assert_int_eq(mpu("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>"
			     "<Part><PartNumber>2</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
			     parts, 1, &n), -E2BIG);
	/* Over the size limit: refused unread. */
	ck_assert_int_eq(xmlp_complete_mpu(ok, strlen(ok), 10, parts, 4, &n), -E2BIG);
}
END_TEST

START_TEST(test_delete)
{
	const char *keys[1000];
	size_t lens[1000];
	char *arena = malloc(1 << 20);
	struct xmlp_delete d = { .keys = keys, .key_lens = lens, .max_keys = 1000,
				 .arena = arena, .arena_cap = 1 << 20 };
	const char *x = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
			"<Object><Key>a/b.txt</Key></Object><Object><Key>x&amp;y &lt;z&gt;</Key>"
			"<VersionId>null</VersionId></Object></Delete>";
	ck_assert_int_eq(xmlp_delete(x, strlen(x), MAX, &d), 0);
	ck_assert(d.quiet);
	ck_assert_uint_eq(d.n_keys, 2);
	ck_assert_str_eq(keys[0], "a/b.txt");
	ck_assert_str_eq(keys[1], "x&y <z>");
	ck_assert_uint_eq(lens[1], 7);

	x = "<Delete><Object><Key>k</Key></Object></Delete>";
	ck_assert_int_eq(xmlp_delete(x, strlen(x), MAX, &d), 0);
	ck_assert(!d.quiet);

	const char *bad[] = {
		"<Delete></Delete>",
		"<Delete><Object></Object></Delete>",
		"<Delete><Object><Key></Key></Object></Delete>",
		"<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>",
		"<Delete><Object><Key>k</Key><Key>j</Key></Object></Delete>",
		"<Remove><Object><Key>k</Key></Object></Remove>",
		"<Delete><Object><Key>k</Key></Object>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(xmlp_delete(bad[i], strlen(bad[i]), MAX, &d) == -EBADMSG, "bad %zu", i);

	/* 1,000 keys are fine; 1,001 are MalformedXML, as S3 says. */
	char *big = malloc(1 << 20);
	size_t n = (size_t)sprintf(big, "<Delete>");
	for (int i = 0; i < 1001; i++) {
		n += (size_t)sprintf(big + n, "<Object><Key>key-%d</Key></Object>", i);
		if (i == 999) {
			memcpy(big + n, "</Delete>", 9);
			ck_assert_int_eq(xmlp_delete(big, n + 9, MAX, &d), 0);
			ck_assert_uint_eq(d.n_keys, 1000);
			ck_assert_str_eq(keys[999], "key-999");
		}
	}
	n += (size_t)sprintf(big + n, "</Delete>");
	ck_assert_int_eq(xmlp_delete(big, n, MAX, &d), -EBADMSG);
	/* Arena too small for the keys. */
	d.arena_cap = 10;
	x = "<Delete><Object><Key>0123456789abc</Key></Object></Delete>";
	ck_assert_int_eq(xmlp_delete(x, strlen(x), MAX, &d), -E2BIG);
	free(big);
	free(arena);
}
END_TEST

START_TEST(test_hostile)
{
	struct xmlp_part parts[4];
	size_t n;
	const char *laughs =
		"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">"
		"<!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">"
		"<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">]>"
		"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&lol3;</ETag></Part>"
		"</CompleteMultipartUpload>";
	ck_assert_int_eq(mpu(laughs, parts, 4, &n), -EBADMSG);
	const char *xxe = "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
			  "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&x;</ETag></Part>"
			  "</CompleteMultipartUpload>";
	ck_assert_int_eq(mpu(xxe, parts, 4, &n), -EBADMSG);
	/* An undeclared entity is simply malformed. */
	ck_assert_int_eq(mpu("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&x;</ETag>"
			     "</Part></CompleteMultipartUpload>", parts, 4, &n), -EBADMSG);
	/* Deep nesting. */
	char deep[512] = "";
	for (int i = 0; i < 20; i++)
		strcat(deep, "<a>");
	ck_assert_int_eq(mpu(deep, parts, 4, &n), -EBADMSG);
	/* Huge text in one element. */
	char *huge = malloc(10000);
	int k = sprintf(huge, "<CompleteMultipartUpload><Part><ETag>");
	memset(huge + k, 'e', 5000);
	strcpy(huge + k + 5000, "</ETag></Part></CompleteMultipartUpload>");
	ck_assert_int_eq(mpu(huge, parts, 4, &n), -EBADMSG);
	free(huge);
}
END_TEST

static int tagging(const char *x, struct xmlp_tagging *t)
{
	return xmlp_tagging(x, strlen(x), MAX, t);
}

START_TEST(test_tagging)
{
	const char *keys[3], *vals[3];
	char arena[256];
	struct xmlp_tagging t = { .keys = keys, .values = vals, .max_tags = 3, .arena = arena,
				  .arena_cap = sizeof(arena) };
	ck_assert_int_eq(tagging("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
				 "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
				 "<Tag><Key>project</Key><Value>a &amp; b</Value></Tag>\n"
				 "<Tag><Value></Value><Key>empty</Key></Tag>"
				 "</TagSet></Tagging>", &t), 0);
	ck_assert_uint_eq(t.n_tags, 2);
	ck_assert_str_eq(keys[0], "project");
	ck_assert_str_eq(vals[0], "a & b");
	ck_assert_str_eq(keys[1], "empty");
	ck_assert_str_eq(vals[1], "");
	/* An empty TagSet is valid (it clears the tags). */
	ck_assert_int_eq(tagging("<Tagging><TagSet/></Tagging>", &t), 0);
	ck_assert_uint_eq(t.n_tags, 0);
	/* Duplicate keys are parsed: InvalidTag is the caller's. */
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
				 "<Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>", &t), 0);
	ck_assert_uint_eq(t.n_tags, 2);
	/* Malformed: no TagSet, wrong root, Key or Value missing or twice,
	 * not well-formed. */
	ck_assert_int_eq(tagging("<Tagging></Tagging>", &t), -EBADMSG);
	ck_assert_int_eq(tagging("<Delete><TagSet/></Delete>", &t), -EBADMSG);
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Key>a</Key></Tag></TagSet></Tagging>", &t),
			 -EBADMSG);
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Value>a</Value></Tag></TagSet></Tagging>", &t),
			 -EBADMSG);
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Key>a</Key><Key>b</Key><Value>v</Value>"
				 "</Tag></TagSet></Tagging>", &t), -EBADMSG);
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Key>a</Key>", &t), -EBADMSG);
	ck_assert_int_eq(tagging("<!DOCTYPE Tagging [<!ENTITY x \"y\">]><Tagging><TagSet><Tag>"
				 "<Key>&x;</Key><Value>v</Value></Tag></TagSet></Tagging>", &t),
			 -EBADMSG);
	/* More tags than max, a body over max_len. */
	ck_assert_int_eq(tagging("<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag>"
				 "<Tag><Key>b</Key><Value>1</Value></Tag><Tag><Key>c</Key><Value>1</Value></Tag>"
				 "<Tag><Key>d</Key><Value>1</Value></Tag></TagSet></Tagging>", &t), -E2BIG);
	const char *small = "<Tagging><TagSet/></Tagging>";
	ck_assert_int_eq(xmlp_tagging(small, strlen(small), 10, &t), -E2BIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xml_parse");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_complete_mpu);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_tagging);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
