/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-blob.c - the make pipeline, random-access reads and extract, in
 * process, on the reference blob (format notes, section 12): the index and
 * digest do not depend on how the bytes are fed or on the thread count;
 * every byte range reads back; a missing chunk fails only the reads that
 * need it; an unfinished make leaves no index. The sequential stream
 * (blob_stream) reads the same bytes front to back, skipping, going back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/blob.h"
#include "store/blob_stream.h"
#include "store/chunksrc.h"
#include "base/digest.h"
#include "store/extract.h"
#include "format/index.h"
#include "store/make.h"
#include "store/store.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-blob.XXXXXX";

static char *path(const char *name)
{
	return testdata_path(tmpdir, name);
}

static bool same_file(const char *a, const char *b)
{
	struct ca_buf x = CA_BUF_INIT, y = CA_BUF_INIT;
	bool same = testdata_read_file(a, &x) == 0 && testdata_read_file(b, &y) == 0 && x.size == y.size && !memcmp(x.data, y.data, x.size);
	ca_buf_release(&x);
	ca_buf_release(&y);
	return same;
}

static bool same_as(const char *file, const uint8_t *p, size_t n)
{
	struct ca_buf x = CA_BUF_INIT;
	bool same = testdata_read_file(file, &x) == 0 && x.size == n && !memcmp(x.data, p, n);
	ca_buf_release(&x);
	return same;
}

/* make index (and store) from p[0..n), fed in pieces of 1..max_piece
 * bytes (0: all at once). Returns finish's result. */
static int make(const char *index, const char *store, const uint8_t *p, size_t n, size_t max_piece, unsigned threads,
                uint8_t digest[CA_CHUNK_ID_SIZE], struct ca_make_stats *stats)
{
	struct ca_make_opts o = {
		.chunk_min = 16384, .chunk_avg = 65536, .chunk_max = 262144,
		.feature_flags = CA_FORMAT_BLOB_DEFAULT,
		.store_path = store, .index_path = index, .index_mode = 0644, .threads = threads,
	};
	struct ca_maker *m = NULL;
	uint32_t rs = 99;
	int r = ca_maker_new(&o, &m);
	for (size_t pos = 0; r == 0 && pos < n;) {
		size_t k = max_piece ? 1 + testdata_rand(&rs) % max_piece : n;
		if (k > n - pos)
			k = n - pos;
		r = ca_maker_feed(m, p + pos, k);
		pos += k;
	}
	if (r == 0)
		r = ca_maker_finish(m, digest, stats);
	ca_maker_free(m);
	return r;
}

static const char *ref_digest = "e90e4498fe5d40c9325f3c1b0fd9be85845cb415636e9c6b27051493a145563e";

static void test_make(const uint8_t *blob)
{
	uint8_t d[CA_CHUNK_ID_SIZE];
	char hex[65];
	struct ca_make_stats st;
	struct stat sb;

	memset(&st, 0, sizeof(st));
	check_int(make(path("a.caibx"), path("s"), blob, TESTDATA_BLOB_SIZE, 0, 2, d, &st), ==, 0);
	ca_id_to_hex(d, hex);
	check_str(hex, ref_digest);
	check_u64(st.bytes, ==, TESTDATA_BLOB_SIZE);
	check_u64(st.chunks, ==, 55);
	check_u64(st.chunks_new, ==, 55);
	check(st.bytes_stored > TESTDATA_BLOB_SIZE); /* random data: zstd adds a little */

	/* fed in uneven pieces, other thread counts, a store that has it all */
	memset(&st, 0, sizeof(st));
	check_int(make(path("b.caibx"), path("s"), blob, TESTDATA_BLOB_SIZE, 200000, 1, d, &st), ==, 0);
	ca_id_to_hex(d, hex);
	check_str(hex, ref_digest);
	check_u64(st.chunks_new, ==, 0);
	check(same_file(path("a.caibx"), path("b.caibx")));
	check_int(make(path("c.caibx"), path("s2"), blob, TESTDATA_BLOB_SIZE, 777, 4, d, &st), ==, 0);
	check(same_file(path("a.caibx"), path("c.caibx")));
	check_int(make(path("d.caibx"), path("s3"), blob, TESTDATA_BLOB_SIZE, 3000000, 0, d, &st), ==, 0);
	check(same_file(path("a.caibx"), path("d.caibx")));

	/* digest only: no store, no index */
	check_int(make(NULL, NULL, blob, TESTDATA_BLOB_SIZE, 65536, 2, d, &st), ==, 0);
	ca_id_to_hex(d, hex);
	check_str(hex, ref_digest);

	/* empty: a 104-byte index, no store directory, the empty digest */
	check_int(make(path("e.caibx"), path("s-empty"), blob, 0, 0, 2, d, &st), ==, 0);
	ca_id_to_hex(d, hex);
	check_str(hex, "c672b8d1ef56ed28ab87c3622c5114069bdd3ad7b8f9737498d0c01ecef0967a");
	check_int(stat(path("e.caibx"), &sb), ==, 0);
	check_int(sb.st_size, ==, 104);
	check_int(stat(path("s-empty"), &sb), ==, -1);
	check_u64(st.chunks, ==, 0);

	/* abandoned: no index appears, no temporary is left */
	struct ca_make_opts o = {
		.chunk_min = 16384, .chunk_avg = 65536, .chunk_max = 262144,
		.feature_flags = CA_FORMAT_BLOB_DEFAULT,
		.store_path = path("s4"), .index_path = path("abandoned.caibx"), .index_mode = 0644,
	};
	struct ca_maker *m = NULL;
	check_int(ca_maker_new(&o, &m), ==, 0);
	check_int(ca_maker_feed(m, blob, 1 << 20), ==, 0);
	ca_maker_free(m);
	ca_maker_free(NULL);
	check_int(stat(path("abandoned.caibx"), &sb), ==, -1);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' -name '.#*' -o -name '*.tmp')\"", tmpdir);
	check_int(system(cmd), ==, 0);

	/* a store that cannot be written: the error says it is the store's */
	int fd = open(path("not-a-dir"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	check(fd >= 0);
	if (fd >= 0)
		close(fd);
	o.store_path = path("not-a-dir");
	o.index_path = path("f.caibx");
	m = NULL;
	check_int(ca_maker_new(&o, &m), ==, 0);
	int r = ca_maker_feed(m, blob, TESTDATA_BLOB_SIZE);
	if (r == 0)
		r = ca_maker_finish(m, d, NULL);
	check_int(r, ==, -ENOTDIR);
	check_str(ca_maker_error_path(m), path("not-a-dir"));
	ca_maker_free(m);
	check_int(stat(path("f.caibx"), &sb), ==, -1);
}

/* Front to back in pieces of 1..max_piece bytes, every gap-th piece
 * skipping up to 300000 bytes; then back to the start. 0 if all equal. */
static unsigned stream_pass(struct ca_blob *b, const uint8_t *blob, uint8_t *buf, unsigned ahead, size_t max_piece,
                            unsigned gap)
{
	struct ca_blob_stream *st = NULL;
	uint32_t rs = 77 + ahead;
	unsigned bad = 0, k = 0;
	if (ca_blob_stream_new(b, ahead, 1 + ahead % 3, NULL, &st) < 0)
		return 1;
	for (uint64_t off = 0; off < TESTDATA_BLOB_SIZE; k++) {
		size_t len = 1 + testdata_rand(&rs) % max_piece;
		ssize_t want = (ssize_t)(len < TESTDATA_BLOB_SIZE - off ? len : TESTDATA_BLOB_SIZE - off);
		if (k % 3 == 2) { /* every third piece peeked: up to its chunk's end, in place */
			const void *p = NULL;
			ssize_t got = ca_blob_stream_peek(st, len, off, &p);
			if (got <= 0 || got > want || memcmp(p, blob + off, (size_t)got))
				bad++;
			want = got > 0 ? got : want;
		} else if (ca_blob_stream_read(st, buf, len, off) != want || memcmp(buf, blob + off, (size_t)want)) {
			bad++;
		}
		off += (uint64_t)want;
		if (gap && k % gap == 0)
			off += testdata_rand(&rs) % 300000;
	}
	if (ca_blob_stream_read(st, buf, 100, TESTDATA_BLOB_SIZE) != 0)
		bad++;
	if (ca_blob_stream_read(st, buf, 5000, 1000) != 5000 || memcmp(buf, blob + 1000, 5000))
		bad++;
	ca_blob_stream_free(st);
	return bad;
}

/* ca_blob_get_spans over [off, off+len): the spans in order, clamped to
 * the blob, their bytes the blob's. 0 if right, else 1 (or its error). */
static int spans_check(struct ca_blob *b, const uint8_t *blob, uint64_t off, size_t len)
{
	struct ca_blob_span *sp = NULL;
	size_t n = 0, at = 0;
	int r = ca_blob_get_spans(b, off, len, &sp, &n);
	if (r < 0)
		return r;
	size_t want = off >= TESTDATA_BLOB_SIZE ? 0 : len < TESTDATA_BLOB_SIZE - off ? len : TESTDATA_BLOB_SIZE - off;
	int bad = want == 0 && (n != 0 || sp);
	for (size_t i = 0; i < n && !bad; i++) {
		bad = sp[i].len == 0 || at + sp[i].len > want || memcmp(sp[i].data, blob + off + at, sp[i].len) ||
		      sp[i].data < sp[i].chunk->data || sp[i].data + sp[i].len > sp[i].chunk->data + sp[i].chunk->size;
		at += sp[i].len;
	}
	ca_blob_put_spans(b, sp, n);
	return bad || at != want;
}

static void test_read(const uint8_t *blob)
{
	struct ca_index *idx = NULL;
	struct ca_chunksrc *src = NULL;
	struct ca_store *store = NULL;
	struct ca_blob *b = NULL;
	uint8_t *buf = malloc(TESTDATA_BLOB_SIZE + 1000);
	if (!buf)
		abort();

	check_int(ca_index_open(path("a.caibx"), &idx), ==, 0);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 1 << 20, &src), ==, 0);
	check_int(ca_store_open(path("s"), &store), ==, 0);
	check_int(ca_chunksrc_add_store(src, store), ==, 0);
	check_int(ca_blob_new(idx, src, &b), ==, 0);
	if (!b)
		return;
	check_u64(ca_blob_size(b), ==, TESTDATA_BLOB_SIZE);
	check(ca_blob_index(b) == idx && ca_blob_chunksrc(b) == src);

	/* the whole blob in one read, and past the end */
	check_int(ca_blob_read(b, buf, TESTDATA_BLOB_SIZE + 1000, 0), ==, TESTDATA_BLOB_SIZE);
	check(!memcmp(buf, blob, TESTDATA_BLOB_SIZE));
	check_int(ca_blob_read(b, buf, 100, TESTDATA_BLOB_SIZE), ==, 0);
	check_int(ca_blob_read(b, buf, 100, UINT64_MAX), ==, 0);
	check_int(ca_blob_read(b, buf, 0, 5), ==, 0);
	check_int(ca_blob_read(b, buf, 100, TESTDATA_BLOB_SIZE - 10), ==, 10);
	check(!memcmp(buf, blob + TESTDATA_BLOB_SIZE - 10, 10));

	/* around every chunk boundary */
	unsigned bad = 0;
	for (size_t i = 0; i < ca_index_n_chunks(idx); i++) {
		uint64_t s, e;
		ca_index_chunk(idx, i, &s, &e, NULL);
		uint64_t from = e > 3 ? e - 3 : 0;
		ssize_t want = e + 3 <= TESTDATA_BLOB_SIZE ? 6 : (ssize_t)(TESTDATA_BLOB_SIZE - from);
		if (ca_blob_read(b, buf, 6, from) != want || memcmp(buf, blob + from, want))
			bad++;
	}
	check_int(bad, ==, 0);

	/* random ranges */
	uint32_t rs = 4242;
	bad = 0;
	for (int k = 0; k < 2000; k++) {
		uint64_t off = testdata_rand(&rs) % (TESTDATA_BLOB_SIZE + 1000);
		size_t len = testdata_rand(&rs) % (k % 10 == 0 ? 700000 : 5000);
		ssize_t want = off >= TESTDATA_BLOB_SIZE ? 0 :
		               (ssize_t)(len < TESTDATA_BLOB_SIZE - off ? len : TESTDATA_BLOB_SIZE - off);
		ca_blob_readahead(b, off, len);
		if (ca_blob_read(b, buf, len, off) != want || (want > 0 && memcmp(buf, blob + off, want)))
			bad++;
	}
	check_int(bad, ==, 0);

	/* the same ranges as spans of the chunks themselves (the mount's replies) */
	rs = 4242;
	bad = 0;
	for (int k = 0; k < 2000; k++) {
		uint64_t off = testdata_rand(&rs) % (TESTDATA_BLOB_SIZE + 1000);
		size_t len = testdata_rand(&rs) % (k % 10 == 0 ? 700000 : 5000);
		bad += spans_check(b, blob, off, len) != 0;
	}
	check_int(bad, ==, 0);
	check_int(spans_check(b, blob, 0, TESTDATA_BLOB_SIZE + 1000), ==, 0);
	check_int(spans_check(b, blob, UINT64_MAX, 10), ==, 0);

	/* the stream: in small and large pieces, with skips, with 1 and 16 chunks ahead */
	check_int(stream_pass(b, blob, buf, 1, 5000, 0), ==, 0);
	check_int(stream_pass(b, blob, buf, 16, 5000, 0), ==, 0);
	check_int(stream_pass(b, blob, buf, 16, 700000, 0), ==, 0);
	check_int(stream_pass(b, blob, buf, 4, 3000, 7), ==, 0);
	check_int(stream_pass(b, blob, buf, 16, 100, 50), ==, 0);
	ca_blob_stream_free(NULL);
	ca_blob_free(b);
	ca_blob_free(NULL);
	ca_chunksrc_free(src);

	/* a missing chunk: the reads that need it fail, the others do not */
	uint64_t s5, e5;
	const uint8_t *id5;
	char rel[CA_STORE_REL_PATH_LEN + 3];
	ca_index_chunk(idx, 5, &s5, &e5, &id5);
	memcpy(rel, "s/", 2);
	ca_store_rel_path(id5, rel + 2);
	check_int(rename(path(rel), path("chunk5")), ==, 0);
	check_int(ca_chunksrc_new(CA_DIGEST_SHA512_256, 0, &src), ==, 0);
	check_int(ca_store_open(path("s"), &store), ==, 0);
	check_int(ca_chunksrc_add_store(src, store), ==, 0);
	check_int(ca_blob_new(idx, src, &b), ==, 0);
	check_int(ca_blob_read(b, buf, 10, s5 + 5), ==, -ENOLINK);
	check_int(ca_blob_read(b, buf, 20, s5 - 10), ==, -ENOLINK);
	check_int(ca_blob_read(b, buf, TESTDATA_BLOB_SIZE, 0), ==, -ENOLINK);
	check_int(ca_blob_read(b, buf, 10, s5 - 10), ==, 10);
	check_int(ca_blob_read(b, buf, 10, e5), ==, 10);
	check(!memcmp(buf, blob + e5, 10));
	/* spans: the missing chunk fails the whole range (the references
	 * taken before it are dropped: ASan's leak check), the rest is right */
	check_int(spans_check(b, blob, s5 - 10, 20), ==, -ENOLINK);
	check_int(spans_check(b, blob, 0, TESTDATA_BLOB_SIZE), ==, -ENOLINK);
	check_int(spans_check(b, blob, s5 - 10, 10), ==, 0);
	check_int(spans_check(b, blob, e5, 5000), ==, 0);

	/* ... and in a stream: the bytes before it, then its error (again when
	 * read again), then the bytes after it */
	struct ca_blob_stream *st = NULL;
	check_int(ca_blob_stream_new(b, 8, 2, NULL, &st), ==, 0);
	if (st) {
		check_int(ca_blob_stream_read(st, buf, s5, 0), ==, (ssize_t)s5);
		check_int(ca_blob_stream_read(st, buf, 20, s5 - 10), ==, 10);
		check(!memcmp(buf, blob + s5 - 10, 10));
		check_int(ca_blob_stream_read(st, buf, 20, s5), ==, -ENOLINK);
		check_int(ca_blob_stream_read(st, buf, 20, s5 + 5), ==, -ENOLINK);
		check_int(ca_blob_stream_read(st, buf, 20, e5), ==, 20);
		check(!memcmp(buf, blob + e5, 20));
		ca_blob_stream_free(st);
	}
	/* peeks the same: a chunk at a time, its error where it is missing */
	check_int(ca_blob_stream_new(b, 8, 2, NULL, &st), ==, 0);
	if (st) {
		const void *p = NULL;
		check_int(ca_blob_stream_peek(st, TESTDATA_BLOB_SIZE, s5 - 10, &p), ==, 10);
		check(p && !memcmp(p, blob + s5 - 10, 10));
		check_int(ca_blob_stream_peek(st, 20, s5, &p), ==, -ENOLINK);
		check_int(ca_blob_stream_peek(st, 20, s5 + 5, &p), ==, -ENOLINK);
		check_int(ca_blob_stream_peek(st, 20, e5, &p), ==, 20);
		check(p && !memcmp(p, blob + e5, 20));
		check_int(ca_blob_stream_peek(st, 20, TESTDATA_BLOB_SIZE, &p), ==, 0);
		ca_blob_stream_free(st);
	}

	/* extract fails as a whole, and leaves nothing */
	struct ca_extract_opts xo = { .threads = 2 };
	struct stat sb;
	check_int(ca_extract_blob(idx, src, path("x-missing"), &xo), ==, -ENOENT);
	check_int(stat(path("x-missing"), &sb), ==, -1);
	check_int(rename(path("chunk5"), path(rel)), ==, 0);

	/* extract: to a path, with 1 and 4 threads; into an fd */
	xo.threads = 1;
	check_int(ca_extract_blob(idx, src, path("x1"), &xo), ==, 0);
	check(same_as(path("x1"), blob, TESTDATA_BLOB_SIZE));
	xo.threads = 4;
	check_int(ca_extract_blob(idx, src, path("x4"), &xo), ==, 0);
	check(same_as(path("x4"), blob, TESTDATA_BLOB_SIZE));
	int fd = open(path("xfd"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	check(fd >= 0 && ftruncate(fd, TESTDATA_BLOB_SIZE) == 0);
	check_int(ca_extract_blob_fd(idx, src, fd, &xo), ==, 0);
	if (fd >= 0)
		close(fd);
	check(same_as(path("xfd"), blob, TESTDATA_BLOB_SIZE));

	ca_blob_free(b);
	ca_chunksrc_free(src);
	ca_index_free(idx);
	free(buf);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		abort();
	uint8_t *blob = testdata_blob();
	test_make(blob);
	test_read(blob);
	free(blob);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		tap_diag("could not remove the temp dir");
	return tap_done();
}
