/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-index.c - .caibx/.caidx writing and reading: the writer's bytes
 * against the layout of reference section 5 built here by hand, lookups by
 * offset, and every malformed index the reader must refuse with -EBADMSG.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/index.h"
#include "tap.h"
#include "testdata.h"

static char tmpdir[] = "/tmp/cafs-test-index.XXXXXX";

/* an index built from the reference's table, independently of the writer */
struct img {
	uint8_t *p;
	size_t size;
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void id_of(size_t i, uint8_t id[CA_CHUNK_ID_SIZE])
{
	testdata_xorshift(id, CA_CHUNK_ID_SIZE, (uint32_t)(i * 2654435761u + 1));
}

static struct img build(uint64_t flags, uint64_t min, uint64_t avg, uint64_t max, const uint64_t *ends, size_t n)
{
	struct img m = { malloc(104 + 40 * n), 104 + 40 * n };
	if (!m.p)
		abort();
	put64(m.p, 48);
	put64(m.p + 8, UINT64_C(0x96824d9c7b129ff9));
	put64(m.p + 16, flags);
	put64(m.p + 24, min);
	put64(m.p + 32, avg);
	put64(m.p + 40, max);
	put64(m.p + 48, UINT64_MAX);
	put64(m.p + 56, UINT64_C(0xe75b9e112f17417d));
	for (size_t i = 0; i < n; i++) {
		put64(m.p + 64 + 40 * i, ends[i]);
		id_of(i, m.p + 72 + 40 * i);
	}
	uint8_t *t = m.p + 64 + 40 * n;
	put64(t, 0);
	put64(t + 8, 0);
	put64(t + 16, 48);
	put64(t + 24, 16 + 40 * n + 40);
	put64(t + 32, UINT64_C(0x4b4f050e5549ecd1));
	return m;
}

/* adopt a copy (adopt owns and frees it, also on failure) */
static int adopt(const struct img *m, size_t size)
{
	void *copy = malloc(size ? size : 1);
	struct ca_index *idx = NULL;
	if (!copy)
		abort();
	memcpy(copy, m->p, size < m->size ? size : m->size);
	if (size > m->size)
		memset((uint8_t *)copy + m->size, 0, size - m->size);
	int r = ca_index_adopt(copy, size, &idx);
	ca_index_free(idx);
	return r;
}

static int write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t k = write(fd, p, n);
	close(fd);
	return k == (ssize_t)n ? 0 : -EIO;
}

static unsigned leftovers(void)
{
	unsigned n = 0;
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, ".#", 2))
			n++;
	if (d)
		closedir(d);
	return n;
}

#define N 1000

static void test_round_trip(void)
{
	uint64_t ends[N], pos = 0;
	uint32_t rs = 42;
	char path[4096];
	struct ca_index_writer *w = NULL;
	struct ca_index *idx = NULL;
	struct stat st;

	for (size_t i = 0; i < N; i++) {
		pos += 48 + testdata_rand(&rs) % (262144 - 48 + 1);
		ends[i] = pos;
	}
	ends[3] = ends[2] + 1;                /* a 1-byte chunk */
	ends[4] = ends[3] + 262144;           /* exactly max */
	for (size_t i = 5; i < N; i++)        /* keep increasing */
		if (ends[i] <= ends[i - 1] || ends[i] - ends[i - 1] > 262144)
			ends[i] = ends[i - 1] + 1000;

	snprintf(path, sizeof(path), "%s/rt.caibx", tmpdir);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 16384, 65536, 262144, 0640, &w), ==, 0);
	check_int(stat(path, &st), ==, -1); /* only the temp file so far */
	unsigned add_failed = 0;
	for (size_t i = 0; i < N; i++) {
		uint8_t id[CA_CHUNK_ID_SIZE];
		id_of(i, id);
		if (ca_index_writer_add(w, ends[i], id) < 0)
			add_failed++;
	}
	check_int(add_failed, ==, 0);
	check_int(ca_index_writer_commit(w), ==, 0);
	check_int(leftovers(), ==, 0);
	check_int(stat(path, &st), ==, 0);
	check_int(st.st_mode & 0777, ==, 0640);
	check_int(st.st_size, ==, 104 + 40 * N);

	/* byte-exact against the reference layout */
	struct img ref = build(CA_FORMAT_BLOB_DEFAULT, 16384, 65536, 262144, ends, N);
	uint8_t *got = malloc(ref.size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	check(fd >= 0 && got && read(fd, got, ref.size) == (ssize_t)ref.size);
	check(got && !memcmp(got, ref.p, ref.size));
	if (fd >= 0)
		close(fd);
	free(got);

	check_int(ca_index_open(path, &idx), ==, 0);
	if (idx) {
		check_u64(ca_index_feature_flags(idx), ==, UINT64_C(0xb000000000000000));
		check_u64(ca_index_chunk_size_min(idx), ==, 16384);
		check_u64(ca_index_chunk_size_avg(idx), ==, 65536);
		check_u64(ca_index_chunk_size_max(idx), ==, 262144);
		check_int(ca_index_n_chunks(idx), ==, N);
		check_u64(ca_index_blob_size(idx), ==, ends[N - 1]);

		unsigned bad_chunk = 0, bad_find = 0;
		for (size_t i = 0; i < N; i++) {
			uint64_t s = 1, e = 0;
			const uint8_t *id = NULL;
			uint8_t want[CA_CHUNK_ID_SIZE];
			id_of(i, want);
			ca_index_chunk(idx, i, &s, &e, &id);
			if (s != (i ? ends[i - 1] : 0) || e != ends[i] || !id || memcmp(id, want, sizeof(want)))
				bad_chunk++;
			/* first byte, last byte, and one in the middle */
			if (ca_index_find(idx, s) != (ssize_t)i || ca_index_find(idx, e - 1) != (ssize_t)i ||
			    ca_index_find(idx, s + (e - s) / 2) != (ssize_t)i)
				bad_find++;
		}
		check_int(bad_chunk, ==, 0);
		check_int(bad_find, ==, 0);
		check_int(ca_index_find(idx, 0), ==, 0);
		check_int(ca_index_find(idx, ends[N - 1] - 1), ==, N - 1);
		check_int(ca_index_find(idx, ends[N - 1]), ==, -ERANGE);
		check_int(ca_index_find(idx, UINT64_MAX), ==, -ERANGE);
		ca_index_chunk(idx, 0, NULL, NULL, NULL); /* NULL outs are allowed */
		ca_index_free(idx);
	}
	free(ref.p);

	/* adopt: the same bytes from memory */
	ref = build(CA_FORMAT_BLOB_DEFAULT, 16384, 65536, 262144, ends, N);
	idx = NULL;
	check_int(ca_index_adopt(ref.p, ref.size, &idx), ==, 0);
	if (idx) {
		check_int(ca_index_n_chunks(idx), ==, N);
		check_int(ca_index_find(idx, ends[500]), ==, 501);
	}
	ca_index_free(idx);
	ca_index_free(NULL);
}

static void test_small(void)
{
	char path[4096];
	struct ca_index_writer *w = NULL;
	struct ca_index *idx = NULL;
	uint8_t id[CA_CHUNK_ID_SIZE];
	struct stat st;

	/* empty: 104 bytes, nothing to find */
	snprintf(path, sizeof(path), "%s/empty.caibx", tmpdir);
	check_int(ca_index_writer_open(path, UINT64_C(0x9000000000000000), 16384, 65536, 262144, 0666, &w), ==, 0);
	check_int(ca_index_writer_commit(w), ==, 0);
	check_int(stat(path, &st), ==, 0);
	check_int(st.st_size, ==, 104);
	check_int(ca_index_open(path, &idx), ==, 0);
	if (idx) {
		check_int(ca_index_n_chunks(idx), ==, 0);
		check_u64(ca_index_blob_size(idx), ==, 0);
		check_int(ca_index_find(idx, 0), ==, -ERANGE);
		check_u64(ca_index_feature_flags(idx), ==, UINT64_C(0x9000000000000000));
		ca_index_free(idx);
	}
	struct img ref = build(UINT64_C(0x9000000000000000), 16384, 65536, 262144, NULL, 0);
	check_int(adopt(&ref, ref.size), ==, 0);
	free(ref.p);

	/* one chunk */
	snprintf(path, sizeof(path), "%s/one.caidx", tmpdir);
	id_of(0, id);
	check_int(ca_index_writer_open(path, CA_FORMAT_DEFAULT, 64, 256, 1024, 0644, &w), ==, 0);
	check_int(ca_index_writer_add(w, 7, id), ==, 0);
	check_int(ca_index_writer_commit(w), ==, 0);
	idx = NULL;
	check_int(ca_index_open(path, &idx), ==, 0);
	if (idx) {
		check_int(ca_index_find(idx, 0), ==, 0);
		check_int(ca_index_find(idx, 6), ==, 0);
		check_int(ca_index_find(idx, 7), ==, -ERANGE);
		ca_index_free(idx);
	}

	/* the writer refuses what the reader would */
	check_int(ca_index_writer_open(path, 0x3, 64, 256, 1024, 0644, &w), ==, -EINVAL);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 0, 256, 1024, 0644, &w), ==, -EINVAL);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 300, 256, 1024, 0644, &w), ==, -EINVAL);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 64, 256, 200, 0644, &w), ==, -EINVAL);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 64, 256, CA_CHUNK_SIZE_LIMIT_MAX + 1ull, 0644, &w),
	          ==, -EINVAL);
	snprintf(path, sizeof(path), "%s/refused.caibx", tmpdir);
	check_int(ca_index_writer_open(path, CA_FORMAT_BLOB_DEFAULT, 64, 256, 1024, 0644, &w), ==, 0);
	check_int(ca_index_writer_add(w, 1025, id), ==, -EINVAL); /* larger than max */
	check_int(ca_index_writer_add(w, 0, id), ==, -EINVAL);    /* empty chunk */
	check_int(ca_index_writer_add(w, 1024, id), ==, 0);
	check_int(ca_index_writer_add(w, 1024, id), ==, -EINVAL); /* not increasing */
	check_int(ca_index_writer_add(w, 1000, id), ==, -EINVAL);
	check_int(ca_index_writer_add(w, 2049, id), ==, -EINVAL);
	ca_index_writer_abort(w);
	ca_index_writer_abort(NULL);
	check_int(stat(path, &st), ==, -1);
	check_int(leftovers(), ==, 0);

	/* not an index at all */
	idx = NULL;
	snprintf(path, sizeof(path), "%s/nonexistent.caibx", tmpdir);
	check_int(ca_index_open(path, &idx), ==, -ENOENT);
	check_int(ca_index_open(tmpdir, &idx), ==, -EISDIR);
	snprintf(path, sizeof(path), "%s/zero.caibx", tmpdir);
	check_int(write_file(path, "", 0), ==, 0);
	check_int(ca_index_open(path, &idx), ==, -EBADMSG);
	snprintf(path, sizeof(path), "%s/text.caibx", tmpdir);
	static const char text[] = "this is not an index, but it is long enough to be one if it were: "
	                           "one hundred and four bytes or more, and then some ...";
	check_int(write_file(path, text, 104), ==, 0);
	check_int(ca_index_open(path, &idx), ==, -EBADMSG);
	check(idx == NULL);
}

/* each malformation of a valid 3-chunk index */
static void test_rejections(void)
{
	static const uint64_t ends[] = { 100, 1000, 1500 };
	struct img m;
	char path[4096];
	struct ca_index *idx = NULL;

#define CASE(what, ...)                                                                                  \
	do {                                                                                             \
		m = build(CA_FORMAT_BLOB_DEFAULT, 64, 256, 1024, ends, 3);                               \
		tap_diag(what);                                                                          \
		__VA_ARGS__;                                                                             \
		free(m.p);                                                                               \
	} while (0)
#define TAIL (m.p + 64 + 40 * 3)

	CASE("the unmodified index is valid", check_int(adopt(&m, m.size), ==, 0));
	CASE("too short", check_int(adopt(&m, 0), ==, -EBADMSG); check_int(adopt(&m, 63), ==, -EBADMSG);
	     check_int(adopt(&m, 103), ==, -EBADMSG));
	CASE("size not 104 + 40n", check_int(adopt(&m, m.size - 1), ==, -EBADMSG);
	     check_int(adopt(&m, m.size + 1), ==, -EBADMSG); check_int(adopt(&m, m.size - 39), ==, -EBADMSG);
	     check_int(adopt(&m, m.size + 39), ==, -EBADMSG));
	CASE("trailing bytes: one more item's worth", check_int(adopt(&m, m.size + 40), ==, -EBADMSG));
	CASE("trailing bytes: the tail twice", {
		uint8_t *p = realloc(m.p, m.size + 40);
		if (!p)
			abort();
		m.p = p;
		memcpy(m.p + m.size, TAIL, 40);
		m.size += 40;
		check_int(adopt(&m, m.size), ==, -EBADMSG);
	});
	CASE("header size 47", put64(m.p, 47); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("header size 56", put64(m.p, 56); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("header type", m.p[8] ^= 1; check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("header type of a catar entry", put64(m.p + 8, CA_FORMAT_ENTRY); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("unknown flag bit 33", put64(m.p + 16, CA_FORMAT_BLOB_DEFAULT | UINT64_C(0x200000000));
	     check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("unknown flag bit 59", put64(m.p + 16, CA_FORMAT_BLOB_DEFAULT | UINT64_C(0x0800000000000000));
	     check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("flags all ones", put64(m.p + 16, UINT64_MAX); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("unnormalized flags 0x3", put64(m.p + 16, 0x3); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("unnormalized flags nsec+sec", put64(m.p + 16, CA_FORMAT_BLOB_DEFAULT | 0x28);
	     check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("unnormalized flags nodump twice", put64(m.p + 16, CA_FORMAT_BLOB_DEFAULT | CA_FORMAT_WITH_FLAG_NODUMP);
	     check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("normalized sha256 flags are fine", put64(m.p + 16, UINT64_C(0x9000000000000000));
	     check_int(adopt(&m, m.size), ==, 0));
	CASE("archive default flags are fine", put64(m.p + 16, CA_FORMAT_DEFAULT); check_int(adopt(&m, m.size), ==, 0));
	CASE("min 0", put64(m.p + 24, 0); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("min > avg", put64(m.p + 24, 257); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("avg > max", put64(m.p + 32, 1025); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("max > 128 MiB", put64(m.p + 40, CA_CHUNK_SIZE_LIMIT_MAX + 1ull); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("max = 128 MiB is fine", put64(m.p + 40, CA_CHUNK_SIZE_LIMIT_MAX); check_int(adopt(&m, m.size), ==, 0));
	CASE("table size is the real size", put64(m.p + 48, 16 + 40 * 3 + 40); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("table size 0", put64(m.p + 48, 0); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("table type", m.p[56] ^= 0x80; check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("tail zero1", put64(TAIL, 1); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("tail zero2", put64(TAIL + 8, 1); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("tail index offset", put64(TAIL + 16, 64); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("tail size", put64(TAIL + 24, get64(TAIL + 24) + 40); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("tail marker", TAIL[39] ^= 1; check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("first chunk empty", put64(m.p + 64, 0); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("offsets equal", put64(m.p + 64 + 40, 100); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("offsets decreasing", put64(m.p + 64 + 40, 50); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("offset wraps", put64(m.p + 64 + 80, UINT64_MAX); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("first chunk larger than max", put64(m.p + 64, 1025); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("later chunk larger than max", put64(m.p + 64 + 80, 1000 + 1025); check_int(adopt(&m, m.size), ==, -EBADMSG));
	CASE("chunk of exactly max is fine", put64(m.p + 64 + 80, 1000 + 1024); check_int(adopt(&m, m.size), ==, 0));

	/* the same through a file: open maps and validates alike */
	snprintf(path, sizeof(path), "%s/bad.caibx", tmpdir);
	CASE("file: tail marker", TAIL[32] ^= 1; check_int(write_file(path, m.p, m.size), ==, 0);
	     check_int(ca_index_open(path, &idx), ==, -EBADMSG));
	CASE("file: truncated", check_int(write_file(path, m.p, m.size - 40), ==, 0);
	     check_int(ca_index_open(path, &idx), ==, -EBADMSG));
	CASE("file: valid", check_int(write_file(path, m.p, m.size), ==, 0); check_int(ca_index_open(path, &idx), ==, 0);
	     ca_index_free(idx));
#undef CASE
#undef TAIL
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		abort();
	test_round_trip();
	test_small();
	test_rejections();
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		tap_diag("could not remove the temp dir");
	return tap_done();
}
