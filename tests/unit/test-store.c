/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-store.c - the local chunk store, the codec and the chunk source:
 * round trips, byte-identical zstd with the zstd CLI, dedup, corrupt and
 * foreign chunks (xz, gzip, bare), symlinks, concurrent writers, and the
 * chunk source's LRU, in-flight sharing, cache write-back and offline mode.
 *
 * The chunk source tests wrap a real store in a backend that counts calls:
 * the only way to see how many fetches happened. For in-flight sharing the
 * backend's fetch is held at a gate until every other getter is parked in
 * the chunk source waiting for it (seen through a wrapped
 * pthread_cond_wait, linked with -Wl,--wrap=pthread_cond_wait): no sleeps.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/chunksrc.h"
#include "chunk/compress.h"
#include "base/digest.h"
#include "base/log.h"
#include "store/store.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-store.XXXXXX";

struct chunk {
	uint8_t *data;
	size_t size;
	uint8_t id[CA_CHUNK_ID_SIZE];
};

static void chunk_make(struct chunk *c, size_t size, uint32_t seed)
{
	struct ca_digest *d = NULL;
	c->data = malloc(size ? size : 1);
	c->size = size;
	if (!c->data || ca_digest_new(CA_DIGEST_SHA512_256, &d) < 0)
		abort();
	testdata_xorshift(c->data, size, seed);
	ca_digest_once(d, c->data, size, c->id);
	ca_digest_free(d);
}

static void chunk_free(struct chunk *c)
{
	free(c->data);
}

static char *path_of(const char *store, const uint8_t *id, bool bare)
{
	char rel[CA_STORE_REL_PATH_LEN + 1];
	static __thread char p[4096];
	ca_store_rel_path(id, rel);
	if (bare)
		rel[CA_STORE_REL_PATH_LEN - 6] = 0;
	snprintf(p, sizeof(p), "%s/%s", store, rel);
	return p;
}

static int write_file(const char *path, const void *p, size_t n)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	*slash = 0;
	char *up = strrchr(dir, '/');
	*up = 0;
	mkdir(dir, 0777);
	*up = '/';
	mkdir(dir, 0777);
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	ssize_t k = write(fd, p, n);
	close(fd);
	return k == (ssize_t)n ? 0 : -EIO;
}

static unsigned count_files(const char *dir, const char *suffix)
{
	char cmd[4096];
	unsigned n = 0;
	snprintf(cmd, sizeof(cmd), "find '%s' -name '*%s' 2>/dev/null | wc -l", dir, suffix);
	FILE *f = popen(cmd, "r");
	if (f) {
		if (fscanf(f, "%u", &n) != 1)
			n = ~0u;
		pclose(f);
	}
	return n;
}

/* ---- what is not a chunk file, private stores ---- */

static mode_t mode_of(const char *p)
{
	struct stat st;
	return lstat(p, &st) < 0 ? (mode_t)-1 : st.st_mode;
}

/* A FIFO, an empty or torn .cacnk, a directory or a symlink at a chunk
 * path: absent to has and get (a FIFO must not block), replaced by put. */
static void odd_files(struct ca_store *s, const char *dir, bool priv)
{
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT, raw = CA_BUF_INIT;
	struct chunk c[5];
	bool compressed;
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	for (int i = 0; i < 5; i++) {
		chunk_make(&c[i], 5000 + i, 900 + i + (priv ? 10 : 0));
		check_int(write_file(path_of(dir, c[i].id, false), "", 0), ==, 0); /* prefix dir */
		unlink(path_of(dir, c[i].id, false));
	}
	check_int(mkfifo(path_of(dir, c[0].id, false), 0600), ==, 0);
	check_int(write_file(path_of(dir, c[1].id, false), "", 0), ==, 0);
	check_int(write_file(path_of(dir, c[2].id, false), "\x28\xb5\x2f\xfd", 4), ==, 0);
	check_int(mkdir(path_of(dir, c[3].id, false), 0700), ==, 0);
	check_int(symlink("/dev/zero", path_of(dir, c[4].id, false)), ==, 0);
	for (int i = 0; i < 5; i++) {
		check_int(ca_store_has(s, c[i].id), ==, 0);
		if (i != 1 && i != 2) /* a short regular file is read, and fails to decode */
			check_int(ca_store_get_raw(s, c[i].id, &raw, &compressed), ==, -ENOENT);
		check_int(ca_codec_compress(codec, c[i].data, c[i].size, &z), ==, 0);
		check_int(ca_store_put_raw(s, c[i].id, z.data, z.size), ==, 1);
		check(S_ISREG(mode_of(path_of(dir, c[i].id, false))));
		check_int(ca_store_has(s, c[i].id), ==, 1);
		check_int(ca_store_get_raw(s, c[i].id, &raw, &compressed), ==, 0);
		check(raw.size == z.size && !memcmp(raw.data, z.data, z.size));
		check_int(mode_of(path_of(dir, c[i].id, false)) & 07777, ==, priv ? 0400 : 0444);
	}
	for (int i = 0; i < 5; i++)
		chunk_free(&c[i]);
	ca_buf_release(&z);
	ca_buf_release(&raw);
	ca_codec_free(codec);
}

static void test_odd_files(void)
{
	char dir[4096];
	struct ca_store *s = NULL;
	mode_t old = umask(022);
	snprintf(dir, sizeof(dir), "%s/odd", tmpdir);
	check_int(ca_store_open(dir, &s), ==, 0);
	odd_files(s, dir, false);
	ca_store_free(s);
	snprintf(dir, sizeof(dir), "%s/odd-private", tmpdir);
	check_int(ca_store_open_private(dir, true, &s), ==, 0);
	odd_files(s, dir, true);
	check_int(ca_store_sync(s), ==, 0);
	ca_store_free(s);
	umask(old);
}

static void test_private(void)
{
	char dir[4096], sub[4096];
	struct ca_store *s = NULL;
	struct ca_buf z = CA_BUF_INIT;
	struct ca_codec *codec = NULL;
	struct chunk c;
	mode_t old = umask(0);
	chunk_make(&c, 3000, 77);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	check_int(ca_codec_compress(codec, c.data, c.size, &z), ==, 0);

	/* made private, parents too, whatever the umask */
	snprintf(dir, sizeof(dir), "%s/priv/a/cache", tmpdir);
	check_int(ca_store_open_private(dir, true, &s), ==, 0);
	check_int(ca_store_put_raw(s, c.id, z.data, z.size), ==, 1);
	ca_store_free(s);
	check_int(mode_of(dir) & 07777, ==, 0700);
	snprintf(sub, sizeof(sub), "%s/priv/a", tmpdir);
	check_int(mode_of(sub) & 07777, ==, 0700);
	snprintf(sub, sizeof(sub), "%s", path_of(dir, c.id, false));
	check_int(mode_of(sub) & 07777, ==, 0400);
	*strrchr(sub, '/') = 0;
	check_int(mode_of(sub) & 07777, ==, 0700);

	/* an older cafs's cache (0755 dirs, 0444 files) is tightened */
	check_int(chmod(dir, 0755), ==, 0);
	check_int(chmod(sub, 0755), ==, 0);
	check_int(chmod(path_of(dir, c.id, false), 0444), ==, 0);
	check_int(ca_store_open_private(dir, false, &s), ==, 0);
	check_int(ca_store_has(s, c.id), ==, 1);
	ca_store_free(s);
	check_int(mode_of(dir) & 07777, ==, 0700);
	check_int(mode_of(sub) & 07777, ==, 0700);
	check_int(mode_of(path_of(dir, c.id, false)) & 07777, ==, 0400);

	/* writable by group or others: refused, nothing changed */
	check_int(chmod(dir, 0770), ==, 0);
	check_int(ca_store_open_private(dir, false, &s), ==, -EPERM);
	check_int(chmod(dir, 01777), ==, 0);
	check_int(ca_store_open_private(dir, true, &s), ==, -EPERM);
	check_int(mode_of(dir) & 07777, ==, 01777);
	check_int(chmod(dir, 0700), ==, 0);

	/* a prefix dir writable by others is refused when it is used */
	check_int(chmod(sub, 0777), ==, 0);
	check_int(ca_store_open_private(dir, false, &s), ==, 0);
	check_int(ca_store_has(s, c.id), ==, -EPERM);
	ca_store_free(s);
	check_int(chmod(sub, 0700), ==, 0);

	/* owned by someone else (as root: chown it away) */
	if (geteuid() == 0) {
		check_int(chown(dir, 65534, 65534), ==, 0);
		check_int(ca_store_open_private(dir, false, &s), ==, -EPERM);
		check_int(chown(dir, 0, 0), ==, 0);
		check_int(chown(sub, 65534, 65534), ==, 0);
		check_int(ca_store_open_private(dir, false, &s), ==, 0);
		check_int(ca_store_has(s, c.id), ==, -EPERM);
		ca_store_free(s);
		check_int(chown(sub, 0, 0), ==, 0);
	}

	/* a symlink is not followed; a missing cache without create is empty */
	snprintf(sub, sizeof(sub), "%s/priv/link", tmpdir);
	check_int(symlink(dir, sub), ==, 0);
	check_int(ca_store_open_private(sub, true, &s), ==, -ELOOP);
	snprintf(sub, sizeof(sub), "%s/priv/none", tmpdir);
	check_int(ca_store_open_private(sub, false, &s), ==, 0);
	check_int(ca_store_has(s, c.id), ==, 0);
	check_int(ca_store_sync(s), ==, 0);
	ca_store_free(s);
	check_int(mode_of(sub), ==, (mode_t)-1);

	ca_buf_release(&z);
	ca_codec_free(codec);
	chunk_free(&c);
	umask(old);
}

/* ---- store + codec ---- */

static void test_round_trip(void)
{
	char dir[4096];
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT, raw = CA_BUF_INIT, out = CA_BUF_INIT;
	struct chunk c;
	struct stat st;
	bool compressed = false;

	snprintf(dir, sizeof(dir), "%s/rt", tmpdir);
	chunk_make(&c, 100000, 3);
	check_int(ca_store_open(dir, &s), ==, 0);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	check_str(ca_store_path(s), dir);
	check_int(stat(dir, &st), ==, -1); /* open never creates */
	check_int(ca_store_has(s, c.id), ==, 0);
	check_int(ca_store_get_raw(s, c.id, &raw, &compressed), ==, -ENOENT);

	check_int(ca_codec_compress(codec, c.data, c.size, &z), ==, 0);
	check_int(ca_compression_detect(z.data, z.size), ==, CA_COMPRESSION_ZSTD);
	check_int(ca_store_put_raw(s, c.id, z.data, z.size), ==, 1);
	check_int(ca_store_has(s, c.id), ==, 1);
	check_int(stat(path_of(dir, c.id, false), &st), ==, 0);
	check_int(st.st_mode & 07777, ==, 0444);
	check_int(st.st_size, ==, z.size);

	check_int(ca_store_get_raw(s, c.id, &raw, &compressed), ==, 0);
	check(compressed);
	check(raw.size == z.size && !memcmp(raw.data, z.data, z.size));
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, c.size, &out), ==, 0);
	check(out.size == c.size && !memcmp(out.data, c.data, c.size));
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, UINT64_MAX, &out), ==, 0);
	check_int(out.size, ==, c.size);
	/* the wrong expected size is corruption too */
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, c.size - 1, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, c.size + 1, &out), ==, -EBADMSG);

	/* dedup: a second put leaves the first file alone */
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	check_int(utimensat(AT_FDCWD, path_of(dir, c.id, false), old, AT_SYMLINK_NOFOLLOW), ==, 0);
	ino_t ino = st.st_ino;
	check_int(ca_store_put_raw(s, c.id, "different bytes", 15), ==, 0);
	check_int(stat(path_of(dir, c.id, false), &st), ==, 0);
	check_int(st.st_ino, ==, ino);
	check_int(st.st_mtime, ==, 1000000000);
	check_int(st.st_size, ==, z.size);
	check_int(count_files(dir, ".tmp"), ==, 0);

	/* touch marks it used now */
	check_int(ca_store_touch(s, c.id), ==, 0);
	check_int(stat(path_of(dir, c.id, false), &st), ==, 0);
	check(st.st_mtime > 1000000000);

	/* remove: both names, -ENOENT when gone */
	check_int(ca_store_remove(s, c.id), ==, 0);
	check_int(ca_store_has(s, c.id), ==, 0);
	check_int(ca_store_remove(s, c.id), ==, -ENOENT);

	ca_buf_release(&z);
	ca_buf_release(&raw);
	ca_buf_release(&out);
	ca_codec_free(codec);
	ca_store_free(s);
	ca_store_free(NULL);
	ca_codec_free(NULL);
	chunk_free(&c);
}

/* casync's zstd chunks are what `zstd -3 --no-check` writes from a pipe
 * (reference 4.2); ours must be the same bytes. Except at exact multiples
 * of the 128 KiB block size: there the CLI, which only learns about the end
 * after a full block, closes the frame with an extra empty last block (3
 * bytes) while casync flags the last full block. blob-interop.sh checks
 * those sizes against casync itself. */
static void test_zstd_identical(void)
{
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT, ref = CA_BUF_INIT;
	char in[4096], out[4096];

	if (!testdata_have("zstd")) {
		tap_skip("zstd chunks byte-identical to the zstd tool's", "zstd not installed");
		return;
	}
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	static const size_t sizes[] = { 1, 48, 4096, 65536, 131073, 200000, 262143 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int kind = 0; kind < 3; kind++) {
			size_t n = sizes[i];
			uint8_t *p = malloc(n);
			if (!p)
				abort();
			if (kind == 0)
				testdata_xorshift(p, n, (uint32_t)(i + 1));
			else if (kind == 1)
				memset(p, 0, n);
			else
				for (size_t k = 0; k < n; k++) /* compressible, not trivially */
					p[k] = (uint8_t)("abcdefgh"[(k * 7 + k / 13) % 8] ^ (k % 251 == 0));
			snprintf(in, sizeof(in), "%s/zin", tmpdir);
			snprintf(out, sizeof(out), "%s/zout", tmpdir);
			check_int(write_file(in, p, n), ==, 0);
			check_int(testdata_sh("cat '%s' | zstd -q -3 --no-check -c > '%s'", in, out), ==, 0);
			check_int(testdata_read_file(out, &ref), ==, 0);
			check_int(ca_codec_compress(codec, p, n, &z), ==, 0);
			check(z.size == ref.size && !memcmp(z.data, ref.data, z.size));
			free(p);
		}
	ca_buf_release(&z);
	ca_buf_release(&ref);
	ca_codec_free(codec);
}

static void test_corrupt(void)
{
	char dir[4096];
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT, other = CA_BUF_INIT, out = CA_BUF_INIT, raw = CA_BUF_INIT;
	struct chunk c, d;
	bool compressed;

	snprintf(dir, sizeof(dir), "%s/corrupt", tmpdir);
	chunk_make(&c, 70000, 5);
	chunk_make(&d, 70000, 6);
	check_int(ca_store_open(dir, &s), ==, 0);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	check_int(ca_codec_compress(codec, c.data, c.size, &z), ==, 0);
	check_int(ca_codec_compress(codec, d.data, d.size, &other), ==, 0);

	/* valid zstd of other data under c's id: digest mismatch */
	check_int(ca_store_put_raw(s, c.id, other.data, other.size), ==, 1);
	check_int(ca_store_get_raw(s, c.id, &raw, &compressed), ==, 0);
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, c.size, &out), ==, -EBADMSG);

	/* truncated zstd, at several lengths */
	static const size_t cuts[] = { 1, 3, 4, 5, 6, 10, 100 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		check_int(ca_codec_decode_chunk(codec, z.data, z.size - cuts[i], c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, z.data, 4, c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, z.data, 0, c.id, UINT64_MAX, &out), ==, -EBADMSG);

	/* trailing bytes after the frame */
	struct ca_buf t = CA_BUF_INIT;
	check_int(ca_buf_append(&t, z.data, z.size, SIZE_MAX), ==, 0);
	check_int(ca_buf_append(&t, "xyz", 3, SIZE_MAX), ==, 0);
	check_int(ca_codec_decode_chunk(codec, t.data, t.size, c.id, UINT64_MAX, &out), ==, -EBADMSG);
	/* a second frame appended */
	t.size = 0;
	check_int(ca_buf_append(&t, z.data, z.size, SIZE_MAX), ==, 0);
	check_int(ca_buf_append(&t, z.data, z.size, SIZE_MAX), ==, 0);
	check_int(ca_codec_decode_chunk(codec, t.data, t.size, c.id, UINT64_MAX, &out), ==, -EBADMSG);

	/* flipped byte in the middle */
	t.size = 0;
	check_int(ca_buf_append(&t, z.data, z.size, SIZE_MAX), ==, 0);
	t.data[t.size / 2] ^= 0x40;
	check_int(ca_codec_decode_chunk(codec, t.data, t.size, c.id, UINT64_MAX, &out), ==, -EBADMSG);

	/* garbage and unknown magic */
	check_int(ca_codec_decode_chunk(codec, "hello world, not a chunk", 24, c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_compression_detect("hello", 5), ==, CA_COMPRESSION_NONE);
	check_int(ca_compression_detect("\x28\xb5\x2f", 3), ==, CA_COMPRESSION_NONE);
	uint8_t lz4[] = { 0x04, 0x22, 0x4d, 0x18, 0, 0, 0, 0 };
	check_int(ca_codec_decode_chunk(codec, lz4, sizeof(lz4), c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, "\x1f\x8bgarbage", 9, c.id, UINT64_MAX, &out), ==, -EBADMSG);
	check_int(ca_codec_decode_chunk(codec, "\xfd" "7zXZ\0garbage", 13, c.id, UINT64_MAX, &out), ==, -EBADMSG);

	/* output beyond the limit: a small zstd frame of many zeros */
	uint8_t *zeros = calloc(1, 1 << 20);
	if (!zeros)
		abort();
	check_int(ca_codec_compress(codec, zeros, 1 << 20, &t), ==, 0);
	check_int(ca_codec_decompress(codec, t.data, t.size, &out, 1 << 20), ==, 0);
	check_int(out.size, ==, 1 << 20);
	check_int(ca_codec_decompress(codec, t.data, t.size, &out, (1 << 20) - 1), ==, -EBADMSG);
	check_int(ca_codec_decompress(codec, t.data, t.size, &out, 1000), ==, -EBADMSG);
	free(zeros);

	ca_buf_release(&t);
	ca_buf_release(&z);
	ca_buf_release(&other);
	ca_buf_release(&out);
	ca_buf_release(&raw);
	ca_codec_free(codec);
	ca_store_free(s);
	chunk_free(&c);
	chunk_free(&d);
}

/* counts the compressed chunks only */
static int count_cb(const struct ca_store_entry *e, void *u)
{
	if (e->kind == CA_STORE_CHUNK)
		(*(unsigned *)u)++;
	return 0;
}

/* chunks casync may have written otherwise: bare, xz, gzip; and symlinks */
static void test_foreign(void)
{
	char dir[4096], in[4096];
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf raw = CA_BUF_INIT, out = CA_BUF_INIT;
	struct chunk bare, x, g, l;
	bool compressed = true;

	snprintf(dir, sizeof(dir), "%s/foreign", tmpdir);
	snprintf(in, sizeof(in), "%s/fin", tmpdir);
	chunk_make(&bare, 50000, 7);
	chunk_make(&x, 50000, 8);
	chunk_make(&g, 50000, 9);
	chunk_make(&l, 50000, 10);
	check_int(ca_store_open(dir, &s), ==, 0);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);

	/* bare: the data itself under "<prefix>/<id>" */
	check_int(write_file(path_of(dir, bare.id, true), bare.data, bare.size), ==, 0);
	check_int(ca_store_has(s, bare.id), ==, 1);
	check_int(ca_store_get_raw(s, bare.id, &raw, &compressed), ==, 0);
	check(!compressed);
	check(raw.size == bare.size && !memcmp(raw.data, bare.data, bare.size));
	/* ... and the walker tells it from a .cacnk */
	unsigned n = 0;
	check_int(ca_store_walk(s, count_cb, &n), ==, 0);
	check_int(n, ==, 0);

	if (testdata_have("xz")) {
		char cmd_out[4096];
		check_int(write_file(in, x.data, x.size), ==, 0);
		snprintf(cmd_out, sizeof(cmd_out), "%s", path_of(dir, x.id, false));
		check_int(write_file(cmd_out, "", 0), ==, 0); /* makes the prefix dir */
		check_int(testdata_sh("xz -c < '%s' > '%s'", in, cmd_out), ==, 0);
		check_int(ca_store_get_raw(s, x.id, &raw, &compressed), ==, 0);
		check(compressed);
		check_int(ca_compression_detect(raw.data, raw.size), ==, CA_COMPRESSION_XZ);
		check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, x.id, x.size, &out), ==, 0);
		check(out.size == x.size && !memcmp(out.data, x.data, x.size));
		check_int(ca_codec_decode_chunk(codec, raw.data, raw.size - 1, x.id, x.size, &out), ==, -EBADMSG);
	} else {
		tap_diag("xz not installed");
	}
	if (testdata_have("gzip")) {
		char cmd_out[4096];
		check_int(write_file(in, g.data, g.size), ==, 0);
		snprintf(cmd_out, sizeof(cmd_out), "%s", path_of(dir, g.id, false));
		check_int(write_file(cmd_out, "", 0), ==, 0);
		check_int(testdata_sh("gzip -n -c < '%s' > '%s'", in, cmd_out), ==, 0);
		check_int(ca_store_get_raw(s, g.id, &raw, &compressed), ==, 0);
		check_int(ca_compression_detect(raw.data, raw.size), ==, CA_COMPRESSION_GZIP);
		check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, g.id, g.size, &out), ==, 0);
		check(out.size == g.size && !memcmp(out.data, g.data, g.size));
		check_int(ca_codec_decode_chunk(codec, raw.data, raw.size - 1, g.id, g.size, &out), ==, -EBADMSG);
	} else {
		tap_diag("gzip not installed");
	}
	n = 0;
	check_int(ca_store_walk(s, count_cb, &n), ==, 0);
	check_int(n, ==, 2);

	/* a symlink at the chunk path is "known missing", even to a good chunk */
	char target[4096];
	snprintf(target, sizeof(target), "%s", path_of(dir, g.id, false));
	check_int(write_file(path_of(dir, l.id, false), "", 0), ==, 0); /* prefix dir */
	unlink(path_of(dir, l.id, false));
	check_int(symlink(target, path_of(dir, l.id, false)), ==, 0);
	check_int(ca_store_get_raw(s, l.id, &raw, &compressed), ==, -ENOENT);
	unlink(path_of(dir, l.id, false));
	check_int(symlink("/dev/null", path_of(dir, l.id, false)), ==, 0);
	check_int(ca_store_get_raw(s, l.id, &raw, &compressed), ==, -ENOENT);
	/* bare-name symlink too */
	unlink(path_of(dir, l.id, false));
	check_int(symlink("/dev/null", path_of(dir, l.id, true)), ==, 0);
	check_int(ca_store_get_raw(s, l.id, &raw, &compressed), ==, -ENOENT);

	/* a directory where a chunk should be is not a chunk: a miss for the
	 * .cacnk name, so the bare copy is found */
	check_int(mkdir(path_of(dir, bare.id, false), 0755), ==, 0);
	check_int(ca_store_get_raw(s, bare.id, &raw, &compressed), ==, 0);
	check(!compressed);

	ca_buf_release(&raw);
	ca_buf_release(&out);
	ca_codec_free(codec);
	ca_store_free(s);
	chunk_free(&bare);
	chunk_free(&x);
	chunk_free(&g);
	chunk_free(&l);
}

/* ---- concurrent writers ---- */

#define SHARED_CHUNKS 40
#define OWN_CHUNKS 20
#define WRITERS 4

struct writer_arg {
	const char *dir;
	unsigned who;
	int result;
};

static int write_set(const char *dir, unsigned who)
{
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT;
	int r = ca_store_open(dir, &s);
	if (r == 0)
		r = ca_codec_new(CA_DIGEST_SHA512_256, &codec);
	for (unsigned i = 0; r >= 0 && i < SHARED_CHUNKS + OWN_CHUNKS; i++) {
		struct chunk c;
		/* shared ids in a different order per writer, to collide mid-write */
		uint32_t seed = i < SHARED_CHUNKS ? 1000 + (i + who * 7) % SHARED_CHUNKS : 2000 + who * 100 + i;
		chunk_make(&c, 20000 + (seed % 7) * 1000, seed);
		r = ca_codec_compress(codec, c.data, c.size, &z);
		if (r == 0)
			r = ca_store_put_raw(s, c.id, z.data, z.size);
		chunk_free(&c);
	}
	ca_buf_release(&z);
	ca_codec_free(codec);
	ca_store_free(s);
	return r < 0 ? r : 0;
}

static void *writer_thread(void *p)
{
	struct writer_arg *a = p;
	a->result = write_set(a->dir, a->who);
	return NULL;
}

static unsigned verify_sets(const char *dir, unsigned writers)
{
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf raw = CA_BUF_INIT, out = CA_BUF_INIT;
	unsigned bad = 0;
	bool compressed;
	if (ca_store_open(dir, &s) < 0 || ca_codec_new(CA_DIGEST_SHA512_256, &codec) < 0)
		abort();
	for (unsigned who = 0; who < writers; who++)
		for (unsigned i = 0; i < SHARED_CHUNKS + OWN_CHUNKS; i++) {
			struct chunk c;
			uint32_t seed = i < SHARED_CHUNKS ? 1000 + i : 2000 + who * 100 + i;
			chunk_make(&c, 20000 + (seed % 7) * 1000, seed);
			if (ca_store_get_raw(s, c.id, &raw, &compressed) < 0 ||
			    ca_codec_decode_chunk(codec, raw.data, raw.size, c.id, c.size, &out) < 0)
				bad++;
			chunk_free(&c);
		}
	ca_buf_release(&raw);
	ca_buf_release(&out);
	ca_codec_free(codec);
	ca_store_free(s);
	return bad;
}

static void test_concurrent_writers(void)
{
	char dir[4096];
	pid_t pids[WRITERS];

	/* processes */
	snprintf(dir, sizeof(dir), "%s/conc-proc", tmpdir);
	for (unsigned w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0)
			_exit(write_set(dir, w) < 0 ? 1 : 0);
	}
	for (unsigned w = 0; w < WRITERS; w++) {
		int st = -1;
		check_int(waitpid(pids[w], &st, 0), ==, pids[w]);
		check(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	check_int(verify_sets(dir, WRITERS), ==, 0);
	check_int(count_files(dir, ".cacnk"), ==, SHARED_CHUNKS + WRITERS * OWN_CHUNKS);
	check_int(count_files(dir, ".tmp"), ==, 0);

	/* threads */
	pthread_t th[WRITERS];
	struct writer_arg args[WRITERS];
	snprintf(dir, sizeof(dir), "%s/conc-thread", tmpdir);
	for (unsigned w = 0; w < WRITERS; w++) {
		args[w] = (struct writer_arg){ dir, w, -1 };
		check_int(pthread_create(&th[w], NULL, writer_thread, &args[w]), ==, 0);
	}
	for (unsigned w = 0; w < WRITERS; w++) {
		pthread_join(th[w], NULL);
		check_int(args[w].result, ==, 0);
	}
	check_int(verify_sets(dir, WRITERS), ==, 0);
	check_int(count_files(dir, ".cacnk"), ==, SHARED_CHUNKS + WRITERS * OWN_CHUNKS);
	check_int(count_files(dir, ".tmp"), ==, 0);
}

/* ---- chunk source ---- */

/* ---- the gate: a backend fetch held until the test opens it ----
 *
 * Every pthread_cond_wait in the library goes through the wrapper below
 * (-Wl,--wrap=pthread_cond_wait for this program), which counts the threads
 * that have waited at least once. The chunk source waits only for a fetch
 * in flight, with its lock held and its reference on the entry taken, so
 * once GETTERS - 1 threads have waited and one is inside the backend's
 * fetch, all of them are registered on that one fetch. */
int __real_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock);

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static unsigned gate_waiters; /* threads that waited in the library */
static unsigned gate_fetching; /* fetches that reached the gate */
static bool gate_open = true;
static __thread bool gate_counted;

int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock);
int __wrap_pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock)
{
	if (cond != &gate_cond && !gate_counted) {
		gate_counted = true;
		pthread_mutex_lock(&gate_lock);
		gate_waiters++;
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate_lock);
	}
	return __real_pthread_cond_wait(cond, lock);
}

static void gate_close(void)
{
	pthread_mutex_lock(&gate_lock);
	gate_open = false;
	gate_waiters = gate_fetching = 0;
	pthread_mutex_unlock(&gate_lock);
}

/* Wait (at most 10 s) until one fetch is at the gate and `waiters` other
 * threads wait for it, or a second fetch arrives (sharing is broken); then
 * open the gate. Returns how many fetches were at the gate, or -1 if the
 * waiters never all showed up. */
static int gate_wait_and_open(unsigned waiters)
{
	struct timespec until;
	int r = 0, fetching;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&gate_lock);
	while (r == 0 && gate_fetching <= 1 && !(gate_fetching == 1 && gate_waiters >= waiters))
		r = pthread_cond_timedwait(&gate_cond, &gate_lock, &until);
	fetching = r ? -1 : (int)gate_fetching;
	if (r)
		printf("# gate: after 10 s, %u fetches, %u of %u waiters\n", gate_fetching, gate_waiters, waiters);
	gate_open = true;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_lock);
	return fetching;
}

/* a store backend that counts fetches; optionally held at the gate */
struct counting {
	struct ca_store *store;
	atomic_uint fetches;
	atomic_uint *freed;
	bool gated;
	int fail; /* answer this errno instead, when non-zero */
};

static int counting_fetch(void *be, const uint8_t id[CA_CHUNK_ID_SIZE], struct ca_buf *out, bool *ret_compressed)
{
	struct counting *c = be;
	atomic_fetch_add(&c->fetches, 1);
	if (c->gated) {
		pthread_mutex_lock(&gate_lock);
		gate_fetching++;
		pthread_cond_broadcast(&gate_cond);
		while (!gate_open)
			__real_pthread_cond_wait(&gate_cond, &gate_lock);
		pthread_mutex_unlock(&gate_lock);
	}
	if (c->fail)
		return -c->fail;
	return ca_store_get_raw(c->store, id, out, ret_compressed);
}

static void counting_free(void *be)
{
	struct counting *c = be;
	if (c->freed)
		atomic_fetch_add(c->freed, 1);
	ca_store_free(c->store);
	free(c);
}

static const struct ca_chunk_backend_ops counting_ops = {
	.kind = "test",
	.fetch = counting_fetch,
	.free = counting_free,
};

static struct counting *counting_new(const char *dir, bool gated)
{
	struct counting *c = calloc(1, sizeof(*c));
	if (!c || ca_store_open(dir, &c->store) < 0)
		abort();
	c->gated = gated;
	return c;
}

static void store_put(const char *dir, const struct chunk *c)
{
	struct ca_store *s = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf z = CA_BUF_INIT;
	if (ca_store_open(dir, &s) < 0 || ca_codec_new(CA_DIGEST_SHA512_256, &codec) < 0 ||
	    ca_codec_compress(codec, c->data, c->size, &z) < 0 || ca_store_put_raw(s, c->id, z.data, z.size) < 0)
		abort();
	ca_buf_release(&z);
	ca_codec_free(codec);
	ca_store_free(s);
}

static bool got(struct ca_chunksrc *src, const struct chunk *c, int *ret_r)
{
	const struct ca_chunk *ch = NULL;
	int r = ca_chunksrc_get(src, c->id, c->size, &ch);
	if (ret_r)
		*ret_r = r;
	bool same = r == 0 && ch && ch->size == c->size && !memcmp(ch->data, c->data, c->size);
	if (r == 0)
		ca_chunksrc_put(src, ch);
	return same;
}

static void test_lru(const char *back)
{
	struct ca_chunksrc *src = NULL;
	struct ca_chunksrc_stats st;
	struct chunk a, b;
	chunk_make(&a, 100000, 11);
	chunk_make(&b, 100000, 12);
	store_put(back, &a);
	store_put(back, &b);

	/* room for one chunk: A, A (hit), B (evicts A), A (fetched again) */
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 150000, &src), ==, 0);
	struct counting *cb = counting_new(back, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 1);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 1);
	ca_chunksrc_get_stats(src, &st);
	check_u64(st.lru_hits, ==, 1);
	check_u64(st.fetched_chunks, ==, 1);
	check_int(ca_chunksrc_is_local(src, a.id), ==, 1);
	check(got(src, &b, NULL));
	check_int(cb->fetches, ==, 2);
	check_int(ca_chunksrc_is_local(src, a.id), ==, 0);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 3);

	/* a held reference survives eviction */
	const struct ca_chunk *held = NULL;
	check_int(ca_chunksrc_get(src, a.id, a.size, &held), ==, 0);
	check(got(src, &b, NULL)); /* evicts a while we hold it */
	check(held && held->size == a.size && !memcmp(held->data, a.data, a.size));
	ca_chunksrc_put(src, held);
	ca_chunksrc_put(src, NULL);
	ca_chunksrc_free(src);

	/* no LRU at all: every get goes to the backend */
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	cb = counting_new(back, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
	check(got(src, &a, NULL));
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 2);
	ca_chunksrc_free(src);
	chunk_free(&a);
	chunk_free(&b);
}

struct getter {
	struct ca_chunksrc *src;
	const struct chunk *c;
	int r;
	bool same;
};

static void *getter_thread(void *p)
{
	struct getter *g = p;
	g->same = got(g->src, g->c, &g->r);
	return NULL;
}

#define GETTERS 8

/* GETTERS threads get c at once through a gated backend: the gate opens
 * only when one fetch is held there and all the other getters wait for
 * it. Returns how many got the right data; *ret_err gets the errors seen,
 * *ret_at_gate how many fetches were at the gate (-1: getters missing). */
static unsigned get_at_once(struct ca_chunksrc *src, const struct chunk *c, int *ret_err, int *ret_at_gate)
{
	pthread_t th[GETTERS];
	struct getter g[GETTERS];
	unsigned same = 0;
	gate_close();
	for (unsigned i = 0; i < GETTERS; i++) {
		g[i] = (struct getter){ src, c, 1, false };
		if (pthread_create(&th[i], NULL, getter_thread, &g[i]))
			abort();
	}
	*ret_at_gate = gate_wait_and_open(GETTERS - 1);
	*ret_err = 0;
	for (unsigned i = 0; i < GETTERS; i++) {
		pthread_join(th[i], NULL);
		same += g[i].same;
		if (g[i].r < 0 && *ret_err == 0)
			*ret_err = g[i].r;
		if (g[i].r < 0 && g[i].r != *ret_err)
			*ret_err = -EPROTO; /* different answers */
	}
	return same;
}

static void test_in_flight(const char *back)
{
	struct chunk a, missing;
	int err, at_gate;
	chunk_make(&a, 200000, 21);
	chunk_make(&missing, 1000, 22);
	store_put(back, &a);

	for (int lru = 0; lru < 2; lru++) {
		struct ca_chunksrc *src = NULL;
		check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, lru ? 1 << 20 : 0, &src), ==, 0);
		struct counting *cb = counting_new(back, true);
		check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
		check_int(get_at_once(src, &a, &err, &at_gate), ==, GETTERS);
		check_int(at_gate, ==, 1);
		check_int(err, ==, 0);
		check_int(cb->fetches, ==, 1);
		/* a failure is shared the same way, and not remembered */
		check_int(get_at_once(src, &missing, &err, &at_gate), ==, 0);
		check_int(at_gate, ==, 1);
		check_int(err, ==, -ENOENT);
		check_int(cb->fetches, ==, 2);
		int r;
		check(!got(src, &missing, &r));
		check_int(r, ==, -ENOENT);
		check_int(cb->fetches, ==, 3);
		ca_chunksrc_free(src);
	}
	chunk_free(&a);
	chunk_free(&missing);
}

static void test_cache(const char *back)
{
	char cdir[4096], back2[4096];
	struct ca_chunksrc *src = NULL;
	struct ca_chunksrc_stats st;
	struct ca_store *cache = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf raw = CA_BUF_INIT, braw = CA_BUF_INIT, out = CA_BUF_INIT;
	struct chunk a, b, bare;
	bool compressed;
	atomic_uint freed = 0;
	int r;

	snprintf(cdir, sizeof(cdir), "%s/cache", tmpdir);
	snprintf(back2, sizeof(back2), "%s/back2", tmpdir);
	chunk_make(&a, 80000, 31);
	chunk_make(&b, 80000, 32);
	chunk_make(&bare, 30000, 33);
	store_put(back, &a);
	store_put(back, &b);
	check_int(write_file(path_of(back, bare.id, true), bare.data, bare.size), ==, 0);
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);

	/* write-back: fetched from the backend, then found in the cache */
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_chunksrc_set_cache(src, cache, false), ==, 0);
	struct counting *cb = counting_new(back, false);
	cb->freed = &freed;
	check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
	check_int(ca_chunksrc_is_local(src, a.id), ==, 0);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 1);
	check_int(ca_chunksrc_is_local(src, a.id), ==, 1);
	check_int(testdata_read_file(path_of(cdir, a.id, false), &raw), ==, 0);
	check_int(testdata_read_file(path_of(back, a.id, false), &braw), ==, 0);
	check(raw.size == braw.size && !memcmp(raw.data, braw.data, raw.size));
	/* a bare chunk is cached compressed */
	check(got(src, &bare, NULL));
	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_store_get_raw(cache, bare.id, &raw, &compressed), ==, 0);
	check(compressed);
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, bare.id, bare.size, &out), ==, 0);
	ca_store_free(cache);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 2);
	ca_chunksrc_get_stats(src, &st);
	check_u64(st.cache_hits, ==, 1);
	ca_chunksrc_free(src);
	check_int(freed, ==, 1);

	/* corrupt cache entry: replaced by the good copy, not handed out */
	check_int(unlink(path_of(cdir, a.id, false)), ==, 0);
	check_int(write_file(path_of(cdir, a.id, false), "\x28\xb5\x2f\xfd garbage", 12), ==, 0);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_chunksrc_set_cache(src, cache, true), ==, 0);
	cb = counting_new(back, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
	check(got(src, &a, NULL));
	check_int(cb->fetches, ==, 1);
	ca_chunksrc_get_stats(src, &st);
	check_u64(st.corrupt, ==, 1);
	check_int(testdata_read_file(path_of(cdir, a.id, false), &raw), ==, 0);
	check_int(ca_codec_decode_chunk(codec, raw.data, raw.size, a.id, a.size, &out), ==, 0);
	ca_chunksrc_free(src);

	/* offline: only the cache counts */
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_chunksrc_set_cache(src, cache, false), ==, 0);
	cb = counting_new(back, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, cb), ==, 0);
	ca_chunksrc_set_offline(src, true);
	check(got(src, &a, NULL));
	check(!got(src, &b, &r));
	check_int(r, ==, -ENOMEDIUM);
	check_int(cb->fetches, ==, 0);
	ca_chunksrc_prefetch(src, b.id); /* must not reach the backend either */
	check_int(cb->fetches, ==, 0);
	ca_chunksrc_set_offline(src, false);
	check(got(src, &b, NULL));
	check_int(cb->fetches, ==, 1);
	ca_chunksrc_free(src);

	/* a corrupt copy in the first store, a good one in the second */
	struct chunk c;
	chunk_make(&c, 40000, 34);
	store_put(back2, &c);
	check_int(write_file(path_of(back, c.id, false), "\x28\xb5\x2f\xfd garbage", 12), ==, 0);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	struct counting *c1 = counting_new(back, false), *c2 = counting_new(back2, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, c1), ==, 0);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, c2), ==, 0);
	check(got(src, &c, NULL));
	check_int(c1->fetches, ==, 1);
	check_int(c2->fetches, ==, 1);
	/* only the corrupt copy left: -EBADMSG */
	ca_chunksrc_free(src);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(back, &cache), ==, 0);
	check_int(ca_chunksrc_add_store(src, cache), ==, 0);
	check(!got(src, &c, &r));
	check_int(r, ==, -EBADMSG);
	/* missing everywhere: -ENOENT */
	struct chunk none;
	chunk_make(&none, 100, 35);
	check(!got(src, &none, &r));
	check_int(r, ==, -ENOENT);
	ca_chunksrc_free(src);

	/* a failing backend does not hide a later one; alone, its error shows */
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	c1 = counting_new(back, false);
	c1->fail = EIO;
	check_int(ca_chunksrc_add_backend(src, &counting_ops, c1), ==, 0);
	check(!got(src, &a, &r));
	check_int(r, ==, -EIO);
	c2 = counting_new(back, false);
	check_int(ca_chunksrc_add_backend(src, &counting_ops, c2), ==, 0);
	check(got(src, &a, NULL));
	/* wrong digest type: chunk ids do not verify */
	ca_chunksrc_free(src);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA256, 0, &src), ==, 0);
	check_int(ca_store_open(back, &cache), ==, 0);
	check_int(ca_chunksrc_add_store(src, cache), ==, 0);
	check(!got(src, &a, &r));
	check_int(r, ==, -EBADMSG);
	ca_chunksrc_free(src);
	ca_chunksrc_free(NULL);

	chunk_free(&none);
	chunk_free(&c);
	chunk_free(&a);
	chunk_free(&b);
	chunk_free(&bare);
	ca_buf_release(&raw);
	ca_buf_release(&braw);
	ca_buf_release(&out);
	ca_codec_free(codec);
}

/* many threads, few ids, an LRU smaller than the working set: references
 * handed out must stay valid while entries are evicted and refetched */
#define STRESS_IDS 24
#define STRESS_THREADS 8

struct stress {
	struct ca_chunksrc *src;
	struct chunk *chunks;
	uint32_t seed;
	unsigned bad;
};

static void *stress_thread(void *p)
{
	struct stress *s = p;
	const struct ca_chunk *held[3] = { NULL, NULL, NULL };
	const struct chunk *which[3] = { NULL, NULL, NULL };
	for (int k = 0; k < 1500; k++) {
		unsigned slot = k % 3;
		if (held[slot]) { /* check a reference taken a while ago, then drop it */
			if (held[slot]->size != which[slot]->size ||
			    memcmp(held[slot]->data, which[slot]->data, which[slot]->size))
				s->bad++;
			ca_chunksrc_put(s->src, held[slot]);
			held[slot] = NULL;
		}
		const struct chunk *c = &s->chunks[testdata_rand(&s->seed) % STRESS_IDS];
		if (ca_chunksrc_get(s->src, c->id, c->size, &held[slot]) < 0) {
			s->bad++;
			held[slot] = NULL;
			continue;
		}
		which[slot] = c;
		if (testdata_rand(&s->seed) % 8 == 0)
			ca_chunksrc_prefetch(s->src, s->chunks[testdata_rand(&s->seed) % STRESS_IDS].id);
	}
	for (unsigned i = 0; i < 3; i++)
		ca_chunksrc_put(s->src, held[i]);
	return NULL;
}

static void test_stress(const char *back)
{
	struct chunk chunks[STRESS_IDS];
	struct stress st[STRESS_THREADS];
	pthread_t th[STRESS_THREADS];
	struct ca_chunksrc *src = NULL;
	struct ca_store *store = NULL;
	for (unsigned i = 0; i < STRESS_IDS; i++) {
		chunk_make(&chunks[i], 4096 + i * 1000, 500 + i);
		store_put(back, &chunks[i]);
	}
	for (int lru = 0; lru < 2; lru++) {
		check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, lru ? 40000 : 0, &src), ==, 0);
		check_int(ca_store_open(back, &store), ==, 0);
		check_int(ca_chunksrc_add_store(src, store), ==, 0);
		for (unsigned t = 0; t < STRESS_THREADS; t++) {
			st[t] = (struct stress){ src, chunks, 77 + t * 13, 0 };
			if (pthread_create(&th[t], NULL, stress_thread, &st[t]))
				abort();
		}
		unsigned bad = 0;
		for (unsigned t = 0; t < STRESS_THREADS; t++) {
			pthread_join(th[t], NULL);
			bad += st[t].bad;
		}
		check_int(bad, ==, 0);
		struct ca_chunksrc_stats stats;
		ca_chunksrc_get_stats(src, &stats);
		check_u64(stats.errors, ==, 0);
		if (lru)
			check(stats.lru_hits > 0);
		ca_chunksrc_free(src);
	}
	for (unsigned i = 0; i < STRESS_IDS; i++)
		chunk_free(&chunks[i]);
}

#define ASYNC_IDS 400 /* more than the cache writer's queue holds (256) */
#define ASYNC_THREADS 8

struct async_reader {
	struct ca_chunksrc *src;
	const struct chunk *chunks;
	unsigned first, n, bad;
};

/* Each get's chunk counts as cached at once, written or still queued. */
static void *async_thread(void *p)
{
	struct async_reader *a = p;
	for (unsigned i = a->first; i < a->first + a->n; i++) {
		const struct chunk *c = &a->chunks[i];
		if (!got(a->src, c, NULL) || ca_chunksrc_is_local(a->src, c->id) != 1)
			a->bad++;
	}
	return NULL;
}

/* The asynchronous cache writer: chunks fetched by many threads at once,
 * compressed and bare, each cached as soon as its get returns, and every
 * one on disk, whole, once the chunk source is freed. */
static void test_cache_async(const char *back)
{
	static struct chunk chunks[ASYNC_IDS];
	struct async_reader ar[ASYNC_THREADS];
	pthread_t th[ASYNC_THREADS];
	struct ca_chunksrc *src = NULL;
	struct ca_store *store = NULL, *cache = NULL;
	struct ca_codec *codec = NULL;
	struct ca_buf raw = CA_BUF_INIT, out = CA_BUF_INIT;
	char cdir[4096];
	bool compressed;
	snprintf(cdir, sizeof(cdir), "%s/cache-async", tmpdir);
	for (unsigned i = 0; i < ASYNC_IDS; i++) {
		chunk_make(&chunks[i], 2000 + (i * 7919) % 9000, 9000 + i);
		if (i % 10 == 3)
			check_int(write_file(path_of(back, chunks[i].id, true), chunks[i].data, chunks[i].size), ==, 0);
		else
			store_put(back, &chunks[i]);
	}
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(cdir, &cache), ==, 0);
	check_int(ca_chunksrc_set_cache(src, cache, false), ==, 0);
	ca_chunksrc_set_cache_async(src, true);
	check_int(ca_store_open(back, &store), ==, 0);
	check_int(ca_chunksrc_add_store(src, store), ==, 0);
	for (unsigned t = 0; t < ASYNC_THREADS; t++) {
		ar[t] = (struct async_reader){ src, chunks, t * (ASYNC_IDS / ASYNC_THREADS), ASYNC_IDS / ASYNC_THREADS, 0 };
		if (pthread_create(&th[t], NULL, async_thread, &ar[t]))
			abort();
	}
	unsigned bad = 0;
	for (unsigned t = 0; t < ASYNC_THREADS; t++) {
		pthread_join(th[t], NULL);
		bad += ar[t].bad;
	}
	check_int(bad, ==, 0);
	ca_chunksrc_free(src); /* writes what is still queued */
	check_int(ca_codec_new(CA_DIGEST_SHA512_256, &codec), ==, 0);
	check_int(ca_store_open(cdir, &cache), ==, 0);
	unsigned whole = 0;
	for (unsigned i = 0; i < ASYNC_IDS; i++) {
		const struct chunk *c = &chunks[i];
		whole += ca_store_get_raw(cache, c->id, &raw, &compressed) == 0 && compressed &&
		         ca_codec_decode_chunk(codec, raw.data, raw.size, c->id, c->size, &out) == 0 &&
		         out.size == c->size && !memcmp(out.data, c->data, c->size);
	}
	check_int(whole, ==, ASYNC_IDS);
	ca_store_free(cache);
	ca_codec_free(codec);
	ca_buf_release(&raw);
	ca_buf_release(&out);
	for (unsigned i = 0; i < ASYNC_IDS; i++)
		chunk_free(&chunks[i]);
}

/* A published store writes a chunk by its path from the store's directory
 * (store.c, put_flat): a prefix directory removed while the store is open
 * (gc, prune) is made again, and a symlink at a prefix is still refused
 * as it was through the prefix's own fd: nothing is written through it. */
static void test_prefix_gone(void)
{
	char dir[4096], pre[4200], other[4200];
	struct ca_store *s = NULL;
	struct chunk c;
	struct stat st;
	mode_t old = umask(022);

	snprintf(dir, sizeof(dir), "%s/gone", tmpdir);
	snprintf(other, sizeof(other), "%s/gone-elsewhere", tmpdir);
	chunk_make(&c, 5000, 11);
	check_int(ca_store_open(dir, &s), ==, 0);
	check_int(ca_store_put_raw(s, c.id, "0123456789", 10), ==, 1);
	snprintf(pre, sizeof(pre), "%s", path_of(dir, c.id, false));
	*strrchr(pre, '/') = 0;
	check_int(unlink(path_of(dir, c.id, false)), ==, 0);
	check_int(rmdir(pre), ==, 0);
	check_int(ca_store_has(s, c.id), ==, 0);
	check_int(ca_store_put_raw(s, c.id, "0123456789", 10), ==, 1);
	check_int(stat(path_of(dir, c.id, false), &st), ==, 0);
	check_int(st.st_size, ==, 10);
	check_int(st.st_mode & 07777, ==, 0444);
	check_int(ca_store_has(s, c.id), ==, 1);
	check_int(count_files(dir, ".tmp"), ==, 0);

	/* the prefix a symlink to another directory */
	check_int(unlink(path_of(dir, c.id, false)), ==, 0);
	check_int(rmdir(pre), ==, 0);
	check_int(mkdir(other, 0755), ==, 0);
	check_int(symlink(other, pre), ==, 0);
	check_int(ca_store_put_raw(s, c.id, "0123456789", 10), ==, -ENOENT);
	check_int(count_files(other, ".cacnk"), ==, 0);
	ca_store_free(s);
	chunk_free(&c);
	umask(old);
}

int main(void)
{
	char back[4096];
	if (!mkdtemp(tmpdir))
		abort();
	ca_log_set_level(CA_LOG_ERROR); /* the corrupt-cache warnings are expected */
	test_round_trip();
	test_zstd_identical();
	test_corrupt();
	test_foreign();
	test_concurrent_writers();
	test_odd_files();
	test_private();
	test_prefix_gone();
	snprintf(back, sizeof(back), "%s/back", tmpdir);
	test_lru(back);
	test_in_flight(back);
	test_cache(back);
	test_stress(back);
	test_cache_async(back);
	testdata_sh("rm -rf '%s'", tmpdir);
	return tap_done();
}
