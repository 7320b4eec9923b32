// SPDX-License-Identifier: MIT
/* The ownership record's encoding (plugins/record.c,
 * docs/backing-store.md): what is read, what is refused, what is written. */
#include "check_main.h"
#include <string.h>
#include <sys/stat.h>

#include "../../plugins/record.h"

/* the example of docs/backing-store.md: a character device 1:3, owner
 * and group 2001, mode 0600 */
static const unsigned char example[32] = {
	0x52, 0x46, 0x73, 0x74, 0x02, 0x00, 0x20, 0x00, 0xd1, 0x07, 0x00,
	0x00, 0xd1, 0x07, 0x00, 0x00, 0x80, 0x21, 0x00, 0x00, 0x01, 0x00,
	0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

START_TEST(test_encode_is_the_documented_layout)
{
	struct rf_record r = { 2001, 2001, S_IFCHR | 0600, 1, 3 };
	unsigned char b[RF_RECORD_V2_SIZE];

	rf_record_encode(&r, b);
	ck_assert_mem_eq(b, example, sizeof(example));
}
END_TEST

START_TEST(test_decode_v2)
{
	struct rf_record r;

	ck_assert_int_eq(rf_record_decode(example, sizeof(example), &r), 2);
	ck_assert_uint_eq(r.uid, 2001);
	ck_assert_uint_eq(r.gid, 2001);
	ck_assert_uint_eq(r.mode, S_IFCHR | 0600);
	ck_assert_uint_eq(r.rdev_major, 1);
	ck_assert_uint_eq(r.rdev_minor, 3);
}
END_TEST

START_TEST(test_decode_v1)
{
	/* 1, uid 2002, gid 2003, mode 0100640 */
	static const unsigned char v1[16] = { 1,    0,	  0, 0, 0xd2, 0x07, 0, 0,
					      0xd3, 0x07, 0, 0, 0xa0, 0x81, 0, 0 };
	struct rf_record r;

	ck_assert_int_eq(rf_record_decode(v1, sizeof(v1), &r), 1);
	ck_assert_uint_eq(r.uid, 2002);
	ck_assert_uint_eq(r.gid, 2003);
	ck_assert_uint_eq(r.mode, S_IFREG | 0640);
	ck_assert_uint_eq(r.rdev_major, 0);
}
END_TEST

/* a later version: our magic, a higher version, its own size */
START_TEST(test_decode_newer)
{
	unsigned char b[40] = { 0 };
	struct rf_record r;

	memcpy(b, example, sizeof(example));
	b[4] = 3;
	b[6] = sizeof(b);
	ck_assert_int_eq(rf_record_decode(b, sizeof(b), &r), RF_RECORD_NEWER);
	ck_assert_uint_eq(r.uid, 0); /* never guessed at */
	b[4] = 0xff;
	b[5] = 0xff;
	ck_assert_int_eq(rf_record_decode(b, sizeof(b), &r), RF_RECORD_NEWER);
}
END_TEST

START_TEST(test_decode_damaged)
{
	unsigned char b[RF_RECORD_MAX];
	struct rf_record r;

	memcpy(b, example, sizeof(example));
	ck_assert_int_eq(rf_record_decode(b, 0, &r), RF_RECORD_DAMAGED);
	ck_assert_int_eq(rf_record_decode(b, 2, &r), RF_RECORD_DAMAGED);
	/* cut short: the size field disagrees */
	ck_assert_int_eq(rf_record_decode(b, 31, &r), RF_RECORD_DAMAGED);
	/* version 2 of another size, even one its size field says */
	b[6] = 36;
	memset(b + 32, 0, 4);
	ck_assert_int_eq(rf_record_decode(b, 36, &r), RF_RECORD_DAMAGED);
	b[6] = 32;
	/* version 0, and 1 in the new layout */
	b[4] = 0;
	ck_assert_int_eq(rf_record_decode(b, 32, &r), RF_RECORD_DAMAGED);
	b[4] = 1;
	ck_assert_int_eq(rf_record_decode(b, 32, &r), RF_RECORD_DAMAGED);
	b[4] = 2;
	/* another magic */
	b[0] = 'X';
	ck_assert_int_eq(rf_record_decode(b, 32, &r), RF_RECORD_DAMAGED);
	ck_assert_uint_eq(r.uid, 0);
	/* version 1's size with another first field */
	memset(b, 0, 16);
	b[0] = 2;
	ck_assert_int_eq(rf_record_decode(b, 16, &r), RF_RECORD_DAMAGED);
}
END_TEST

START_TEST(test_round_trip)
{
	struct rf_record in = { 0xfffffffe, 7, S_IFDIR | 02775, 0, 0 }, out;
	unsigned char b[RF_RECORD_V2_SIZE];

	rf_record_encode(&in, b);
	ck_assert_int_eq(rf_record_decode(b, sizeof(b), &out), 2);
	ck_assert_mem_eq(&in, &out, sizeof(in));
}
END_TEST

START_TEST(test_types_and_names)
{
	ck_assert(rf_record_type_ok(S_IFREG | 0644));
	ck_assert(rf_record_type_ok(S_IFBLK));
	ck_assert(rf_record_type_ok(S_IFSOCK | 0777));
	ck_assert(!rf_record_type_ok(0644));
	ck_assert(!rf_record_type_ok(0170000));
	ck_assert(!rf_record_type_ok(0030000));
	ck_assert(rf_record_is_tmp_name(".ringfence.tmp.12"));
	ck_assert(!rf_record_is_tmp_name(".ringfence.tm"));
	ck_assert(!rf_record_is_tmp_name("x.ringfence.tmp.1"));
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, test_encode_is_the_documented_layout);
	tcase_add_test(tc, test_decode_v2);
	tcase_add_test(tc, test_decode_v1);
	tcase_add_test(tc, test_decode_newer);
	tcase_add_test(tc, test_decode_damaged);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_types_and_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(record_suite());
}
