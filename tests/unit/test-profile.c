/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-profile - prefetch profiles (core/image/profile.c): recording merges a
 * file's reads however they complete, the text written parses back, and
 * the parser refuses every malformed line. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "image/profile.h"
#include "tap.h"

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

static int parses(const char *text)
{
	struct ca_profile *p = NULL;
	int r = ca_profile_parse(text, strlen(text), &p);
	ca_profile_free(p);
	return r;
}

int main(void)
{
	char dir[] = "/tmp/test-profile.XXXXXX", path[64];
	struct ca_profile_rec *rec;
	struct stat st;
	check(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/p", dir);

	/* a file read out of order, another in between, a blob range */
	check_int(ca_profile_rec_new(&rec), ==, 0);
	ca_profile_rec_read(rec, 100, 1000, 0, 10);
	ca_profile_rec_read(rec, 200, 5000, 0, 4);
	ca_profile_rec_read(rec, 100, 1000, 20, 10);
	ca_profile_rec_read(rec, 100, 1000, 10, 10); /* fills the gap: one range */
	ca_profile_rec_read(rec, 100, 1000, 5, 5);   /* already there */
	ca_profile_rec_read(rec, UINT64_MAX, 0, 7, 0); /* nothing read */
	ca_profile_rec_read(rec, UINT64_MAX, 0, 70000, 100);
	/* names looked up (and a symlink read) need a sidecar for their paths */
	ca_profile_rec_lookup(rec, 0, "nosuch");
	ca_profile_rec_lookup(rec, 0, "nosuch"); /* once */
	ca_profile_rec_lookup(rec, 200, NULL);
	check_int(ca_profile_rec_write(rec, path, NULL, NULL), ==, 0);
	ca_profile_rec_free(rec);
	/* without a sidecar, files are written as archive ranges */
	check_str(slurp(path), "cafs-profile 1\nindex -\nr 1000 30\nr 5000 4\nr 70000 100\n");
	check(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	check_int(parses(slurp(path)), ==, 0);

	/* round trip through the formatter with a digest */
	struct ca_profile *p = NULL;
	struct ca_buf b = CA_BUF_INIT;
	uint8_t d[CA_CHUNK_ID_SIZE];
	memset(d, 0xab, sizeof(d));
	const char *good = "cafs-profile 1\nindex -\n# a comment\n\nf 0 6 etc/a\nf 3 4 sp%20ace/x%25y%C3%A9\nr 1 2\n"
	                   "#l usr/local/bin/s%20h\n#l a b\n";
	const char *name, *fpath;
	uint64_t fstart, flen;
	check_int(ca_profile_parse(good, strlen(good), &p), ==, 0);
	check_int((int)ca_profile_count(p), ==, 4);
	check(ca_profile_lookup(p, 3, &name) && !strcmp(name, "usr/local/bin/s h"));
	check(!ca_profile_file(p, 3, &fpath, &fstart, &flen));
	check(ca_profile_file(p, 0, &fpath, &fstart, &flen) && !strcmp(fpath, "etc/a") && flen == 6);
	check(!ca_profile_lookup(p, 0, &name));
	check(ca_profile_index_digest(p) == NULL);
	check_int(ca_profile_format(p, d, &b), ==, 0);
	ca_buf_append(&b, "", 1, SIZE_MAX);
	check_str((char *)b.data, "cafs-profile 1\nindex "
	          "abababababababababababababababababababababababababababababababab\n"
	          "f 0 6 etc/a\nf 3 4 sp%20ace/x%25y%C3%A9\nr 1 2\n#l usr/local/bin/s%20h\n");
	ca_profile_free(p);
	p = NULL;
	check_int(ca_profile_parse(b.data, b.size - 1, &p), ==, 0);
	check(ca_profile_index_digest(p) && !memcmp(ca_profile_index_digest(p), d, sizeof(d)));
	ca_profile_free(p);
	ca_buf_release(&b);

	/* refusals: each one line off the good profile */
	const char *bad[] = {
		"",
		"cafs-profile 2\nindex -\n",
		"cafs-profile 1",
		"cafs-profile 1\nindex -\nf 0 6 etc/a",         /* no newline at the end */
		"cafs-profile 1\nf 0 6 etc/a\nindex -\n",       /* index out of place */
		"cafs-profile 1\nindex abc\n",
		"cafs-profile 1\nindex -\nf 0 0 etc/a\n",       /* empty range */
		"cafs-profile 1\nindex -\nf 0 6\n",             /* no path */
		"cafs-profile 1\nindex -\nf 0 6 \n",            /* empty path */
		"cafs-profile 1\nindex -\nf 0 6 a b\n",         /* a raw space */
		"cafs-profile 1\nindex -\nf 0 6 a%00b\n",       /* NUL */
		"cafs-profile 1\nindex -\nf 0 6 a%4\n",         /* short escape */
		"cafs-profile 1\nindex -\nr 1 2 x\n",           /* junk */
		"cafs-profile 1\nindex -\nr -1 2\n",
		"cafs-profile 1\nindex -\nr 99999999999999999999 2\n",
		"cafs-profile 1\nindex -\nr 1  2\n",
		"cafs-profile 1\nindex -\nx 1 2\n",
		"cafs-profile 1\nindex -\nl \n",                /* a name without a path */
		"cafs-profile 1\nindex -\nl a b\n",             /* a raw space */
		"cafs-profile 1\nindex -\nl\n",
		"cafs-profile 1\r\nindex -\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parses(bad[i]);
		check_int(r, ==, -EBADMSG);
		if (r != -EBADMSG)
			tap_diag(bad[i]);
	}
	struct ca_profile *q = NULL;
	check_int(ca_profile_parse("cafs-profile 1\nindex -\n\0", 24, &q), ==, -EBADMSG); /* binary */

	unlink(path);
	rmdir(dir);
	return tap_done();
}
