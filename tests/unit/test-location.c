/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-location.c - the one classifier of source strings: casync's URL
 * rule, file:// in any case, image kinds by suffix (queries ignored for
 * URLs only), the default store and the blob's name.
 */
#include <stdlib.h>

#include "location.h"
#include "tap.h"

static void check_default_store(const char *index, const char *want)
{
	char *s = ca_location_default_store(index);
	check_str(s, want);
	free(s);
}

static void check_basename(const char *source, const char *want)
{
	char *s = ca_location_basename(source);
	check_str(s, want);
	free(s);
}

int main(void)
{
	/* what is a URL */
	check(ca_location_is_url("http://h/x.caidx"));
	check(ca_location_is_url("s3+https://h/b"));
	check(ca_location_is_url("FILE:///x"));
	check(!ca_location_is_url("/srv/x.caidx"));
	check(!ca_location_is_url("./a://b"));
	check(!ca_location_is_url("://x"));
	check(!ca_location_is_url("a b://x"));

	/* kinds of location: file:// is a path in any case */
	check_int(ca_location_kind("/srv/x.caidx"), ==, CA_LOCATION_PATH);
	check_int(ca_location_kind("file:///srv/x.caidx"), ==, CA_LOCATION_PATH);
	check_int(ca_location_kind("FILE:///srv/x.caidx"), ==, CA_LOCATION_PATH);
	check_int(ca_location_kind("HTTPS://h/x.caidx"), ==, CA_LOCATION_HTTP);
	check_int(ca_location_kind("http://h/x.caidx"), ==, CA_LOCATION_HTTP);
	check_int(ca_location_kind("ssh://h/x.caidx"), ==, CA_LOCATION_OTHER);
	check_int(ca_location_kind("httpx://h/x.caidx"), ==, CA_LOCATION_OTHER);
	check(!ca_location_is_remote("FiLe:///x"));
	check(ca_location_is_remote("ssh://h/x"));
	check(ca_location_is_https("HTTPS://h/"));
	check(!ca_location_is_https("http://h/"));
	check_str(ca_location_path("FILE:///srv/x.caidx"), "/srv/x.caidx");
	check_str(ca_location_path("x.caidx"), "x.caidx");
	check(ca_location_path("http://h/x.caidx") == NULL);

	/* image kinds: a URL's query and fragment do not count, a path's '#' does */
	check_int(ca_location_image_kind("a.caibx"), ==, CA_IMAGE_BLOB_INDEX);
	check_int(ca_location_image_kind("a.caidx"), ==, CA_IMAGE_ARCHIVE_INDEX);
	check_int(ca_location_image_kind("a.catar"), ==, CA_IMAGE_ARCHIVE);
	check_int(ca_location_image_kind("http://h/a.caidx?sig=1#f"), ==, CA_IMAGE_ARCHIVE_INDEX);
	check_int(ca_location_image_kind("/tmp/a#b.caidx"), ==, CA_IMAGE_ARCHIVE_INDEX);
	check_int(ca_location_image_kind("a.caidx.bak"), ==, CA_IMAGE_UNKNOWN);
	check_int(ca_location_image_kind("dir"), ==, CA_IMAGE_UNKNOWN);

	/* casync's default store */
	check_default_store("x.caidx", "default.castr");
	check_default_store("/srv/img/x.caidx", "/srv/img/default.castr");
	check_default_store("http://h/img/x.caidx?token=1", "http://h/img/default.castr");

	/* the blob mount's file name */
	check_basename("disk.caibx", "disk");
	check_basename("http://h/x/disk.caibx?q", "disk");
	check_basename("/srv/.caibx", ".caibx"); /* nothing but the suffix: kept, so there is a name */
	check_basename("http://h/", "h");
	check_basename("..", "image");
	return tap_done();
}
