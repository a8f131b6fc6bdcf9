/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-location.c - the one classifier of source strings: casync's URL
 * rule, file:// in any case, image kinds by suffix (queries ignored for
 * URLs only), the default store and the blob's name.
 */
#include <stdlib.h>
#include <string.h>

#include "base/location.h"
#include "base/log.h"
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

static void check_redact(const char *in, const char *want)
{
	char *s = ca_location_redact(in);
	check_str(s, want);
	free(s);
}

static void check_redact_text(const char *in, const char *want)
{
	char buf[256];
	size_t n = ca_location_redact_text(in, buf, sizeof(buf));
	check_str(buf, want);
	check_u64(n, ==, strlen(want));
}

static void keep_line(void *userdata, enum ca_log_level level, const char *line)
{
	(void)level;
	snprintf(userdata, 4096, "%s", line);
}

/* A message longer than a log line, cut inside a URL's userinfo (before
 * its '@'): no byte of the password may show (each cut point tried). */
static void check_log_cut_url(void)
{
	static char got[4096], pad[4096];
	struct ca_logger l = { .fn = keep_line, .userdata = got, .level = CA_LOG_ERROR };
	struct ca_logger *old = ca_log_use(&l);
	int leaks = 0, shown = 0;
	for (int n = 1950; n < 2048; n++) {
		memset(pad, 'p', n);
		pad[n] = 0;
		ca_log_error("%s s3+https://AKIDKEY:SECRETPW@h/b/x.caibx: HTTP 403", pad);
		leaks += strstr(got, "SECRET") || strstr(got, "AKIDKEY") || strstr(got, "SECR");
		shown += strstr(got, "s3+https://***@h/b") != NULL;
	}
	ca_log_use(old);
	check_int(leaks, ==, 0);
	check(shown > 0); /* the URL still shows where it fits */
}

int main(void)
{
	check_log_cut_url();
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
	check_default_store("host:/srv/x.caidx", "host:/srv/default.castr");
	check_default_store("host:x.caidx", "host:default.castr");
	/* a URL with no path names a host: its root, not another host */
	check_default_store("https://h.caidx", "https://h.caidx/default.castr");
	check_default_store("https://h.caidx?sig=1", "https://h.caidx/default.castr");
	check_default_store("https://h/x.caidx", "https://h/default.castr");
	/* a registry: the index is a tag of its repository, the store that repository */
	check_default_store("oci+https://r.example/team/images/app.caidx", "oci+https://r.example/team/images");
	check_default_store("OCI+http://127.0.0.1:5000/a/app.caibx", "OCI+http://127.0.0.1:5000/a");
	check_int(ca_location_kind("oci+https://r/x/a.caidx"), ==, CA_LOCATION_HTTP);
	check(ca_location_is_oci("oci+http://r/x"));
	check(!ca_location_is_oci("https://r/x"));
	check(ca_location_is_https("oci+https://r/x"));

	/* casync's HOST:PATH (ssh remoting) */
	check(ca_location_ssh_host_len("localhost:/tmp/x.caidx") == 9);
	check(ca_location_ssh_host_len("me@h-1.example_x:x.caidx") == 16);
	check(ca_location_ssh_host_len("/srv/a:b.caidx") == 0);
	check(ca_location_ssh_host_len("./a:b.caidx") == 0);
	check(ca_location_ssh_host_len("http://h/x.caidx") == 0);
	check(ca_location_ssh_host_len("host:") == 0);
	check(ca_location_ssh_host_len("a b:x") == 0);
	check(ca_location_ssh_host_len("@h:x") == 0);
	check(ca_location_ssh_host_len("u@:x") == 0);
	check(ca_location_ssh_host_len("x.caidx") == 0);
	/* a "host" that ssh would read as an option: a local name instead */
	check(ca_location_ssh_host_len("-oProxyCommand:x.caidx") == 0);
	check(ca_location_ssh_host_len("-v@h:x.caidx") == 0);
	check(ca_location_ssh_host_len("h-1:x.caidx") == 3);

	/* the blob mount's file name */
	check_basename("disk.caibx", "disk");
	check_basename("http://h/x/disk.caibx?q", "disk");
	check_basename("/srv/.caibx", ".caibx"); /* nothing but the suffix: kept, so there is a name */
	check_basename("http://h/", "h");
	check_basename("..", "image");
	/* secrets out of what is shown: userinfo and query, nothing else */
	check_redact("http://user:secret@h:8080/d/x.caidx?token=S2", "http://***@h:8080/d/x.caidx?***");
	check_redact("https://tok@h/x.caibx", "https://***@h/x.caibx");
	check_redact("http://h/a@b/x.caidx", "http://h/a@b/x.caidx"); /* '@' in the path is no userinfo */
	check_redact("http://u:p@h?x", "http://***@h?***");
	check_redact("http://h/x.caidx#frag", "http://h/x.caidx?***");
	check_redact("http://h/x.caidx", "http://h/x.caidx");
	check_redact("/srv/a@b?c", "/srv/a@b?c");
	check_redact("", "");
	check_redact_text("GET http://u:pw@h/s/ab.cacnk?t=1: HTTP status 503",
	                  "GET http://***@h/s/ab.cacnk?***: HTTP status 503");
	check_redact_text("a https://x@h/1, and 'http://h/2?k=v' (ftp://y@z/)",
	                  "a https://***@h/1, and 'http://h/2?***' (ftp://***@z/)");
	check_redact_text("no url here: a://", "no url here: a://");
	check_redact_text("9://u@h/", "9://u@h/");
	check_redact_text("1a+b://u@h/", "1a+b://***@h/");
	char small[12];
	ca_location_redact_text("http://user:pw@host/x", small, sizeof(small));
	check_str(small, "http://***@"); /* cut, never past the buffer, never the secret */
	ca_location_redact_text("xx", small, 1);
	check_str(small, "");

	/* parsed once: every field agrees with the one-question functions */
	struct ca_location l;
	ca_location_parse("S3+HTTPS://h:9000/bkt/pre/x.caidx?lookup=dns#f", &l);
	check_int(l.kind, ==, CA_LOCATION_HTTP);
	check(l.url && l.s3 && l.https);
	check(l.path == NULL);
	check_u64(l.scheme_len, ==, 8);
	check_u64(l.end, ==, strlen("S3+HTTPS://h:9000/bkt/pre/x.caidx"));
	check_int(l.image, ==, CA_IMAGE_ARCHIVE_INDEX);
	ca_location_parse("http://h/s.castr", &l);
	check(l.kind == CA_LOCATION_HTTP && !l.s3 && !l.https && l.image == CA_IMAGE_UNKNOWN);
	ca_location_parse("FILE:///srv/a?b.caibx", &l);
	check(l.kind == CA_LOCATION_PATH && l.url && !l.s3);
	check_str(l.path, "/srv/a?b.caibx");
	check_u64(l.end, ==, strlen("FILE:///srv/a")); /* a URL's query ends it, as image_kind reads it */
	ca_location_parse("/srv/a?b.caibx", &l);
	check(l.kind == CA_LOCATION_PATH && !l.url && l.image == CA_IMAGE_BLOB_INDEX);
	check_u64(l.end, ==, strlen("/srv/a?b.caibx")); /* in a path, '?' is a name's */
	check(l.path && !strcmp(l.path, l.s));
	ca_location_parse("me@host:img.caidx", &l);
	check(l.kind == CA_LOCATION_PATH && l.ssh_host_len == 7);
	ca_location_parse("s3://h/b", &l);
	check(l.kind == CA_LOCATION_OTHER && !l.s3 && l.path == NULL);

	return tap_done();
}
