/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* index.c - .caibx/.caidx reading (mapped, validated once) and writing. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "format/feature.h"
#include "format/index.h"
#include "base/fdio.h"
#include "base/log.h"

#define HEAD_SIZE (sizeof(struct ca_format_index) + sizeof(struct ca_format_header))
#define ITEM_SIZE sizeof(struct ca_format_table_item)
#define TAIL_SIZE sizeof(struct ca_format_table_tail)

struct ca_index {
	const uint8_t *data;
	size_t size;
	bool mapped;
	uint64_t flags, min, avg, max;
	size_t n;
	const struct ca_format_table_item *items;
};

static int corrupt(const char *why)
{
	ca_log_debug("index: %s", why);
	return -EBADMSG;
}

static int validate(struct ca_index *idx)
{
	const uint8_t *p = idx->data;
	if (idx->size < HEAD_SIZE + TAIL_SIZE)
		return corrupt("too short");
	if ((idx->size - HEAD_SIZE - TAIL_SIZE) % ITEM_SIZE)
		return corrupt("size is not a whole number of items");
	if (ca_le64_read(p) != sizeof(struct ca_format_index) || ca_le64_read(p + 8) != CA_FORMAT_INDEX)
		return corrupt("bad header");
	idx->flags = ca_le64_read(p + 16);
	idx->min = ca_le64_read(p + 24);
	idx->avg = ca_le64_read(p + 32);
	idx->max = ca_le64_read(p + 40);
	if (!ca_feature_is_valid(idx->flags))
		return corrupt("unknown or unnormalized feature flags");
	if (idx->min < CA_CHUNK_SIZE_LIMIT_MIN || idx->min > idx->avg || idx->avg > idx->max ||
	    idx->max > CA_CHUNK_SIZE_LIMIT_MAX)
		return corrupt("bad chunk sizes");
	if (ca_le64_read(p + 48) != UINT64_MAX || ca_le64_read(p + 56) != CA_FORMAT_TABLE)
		return corrupt("bad table header");

	idx->n = (idx->size - HEAD_SIZE - TAIL_SIZE) / ITEM_SIZE;
	idx->items = (const struct ca_format_table_item *)(p + HEAD_SIZE);
	const uint8_t *t = p + HEAD_SIZE + idx->n * ITEM_SIZE;
	if (ca_le64_read(t) != 0 || ca_le64_read(t + 8) != 0 ||
	    ca_le64_read(t + 16) != sizeof(struct ca_format_index) ||
	    ca_le64_read(t + 24) != sizeof(struct ca_format_header) + idx->n * ITEM_SIZE + TAIL_SIZE ||
	    ca_le64_read(t + 32) != CA_FORMAT_TABLE_TAIL_MARKER)
		return corrupt("bad table tail");

	uint64_t prev = 0;
	for (size_t i = 0; i < idx->n; i++) {
		uint64_t end = ca_le64_read(&idx->items[i].offset);
		if (end <= prev || end - prev > idx->max)
			return corrupt("chunk offsets out of order or chunk larger than max");
		prev = end;
	}
	return 0;
}

int ca_index_adopt(void *data, size_t size, struct ca_index **ret)
{
	struct ca_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	idx->data = data;
	idx->size = size;
	int r = validate(idx);
	if (r < 0) {
		ca_index_free(idx);
		return r;
	}
	*ret = idx;
	return 0;
}

int ca_index_open(const char *path, struct ca_index **ret)
{
	struct stat st;
	int r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < HEAD_SIZE + TAIL_SIZE || st.st_size > SSIZE_MAX) {
		r = corrupt("not a regular file of index size");
		goto out;
	}
	void *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	struct ca_index *idx = calloc(1, sizeof(*idx));
	if (!idx) {
		munmap(m, st.st_size);
		r = -ENOMEM;
		goto out;
	}
	idx->data = m;
	idx->size = st.st_size;
	idx->mapped = true;
	r = validate(idx);
	if (r < 0) {
		ca_index_free(idx);
		goto out;
	}
	*ret = idx;
out:
	close(fd);
	return r;
}

void ca_index_free(struct ca_index *idx)
{
	if (!idx)
		return;
	if (idx->mapped)
		munmap((void *)idx->data, idx->size);
	else
		free((void *)idx->data);
	free(idx);
}

const void *ca_index_data(const struct ca_index *idx, size_t *ret_size)
{
	*ret_size = idx->size;
	return idx->data;
}

uint64_t ca_index_feature_flags(const struct ca_index *idx) { return idx->flags; }
uint64_t ca_index_chunk_size_min(const struct ca_index *idx) { return idx->min; }
uint64_t ca_index_chunk_size_avg(const struct ca_index *idx) { return idx->avg; }
uint64_t ca_index_chunk_size_max(const struct ca_index *idx) { return idx->max; }
size_t ca_index_n_chunks(const struct ca_index *idx) { return idx->n; }

uint64_t ca_index_blob_size(const struct ca_index *idx)
{
	return idx->n ? ca_le64_read(&idx->items[idx->n - 1].offset) : 0;
}

void ca_index_chunk(const struct ca_index *idx, size_t i, uint64_t *ret_start, uint64_t *ret_end,
                    const uint8_t **ret_id)
{
	if (ret_start)
		*ret_start = i ? ca_le64_read(&idx->items[i - 1].offset) : 0;
	if (ret_end)
		*ret_end = ca_le64_read(&idx->items[i].offset);
	if (ret_id)
		*ret_id = idx->items[i].chunk;
}

ssize_t ca_index_find(const struct ca_index *idx, uint64_t off)
{
	size_t lo = 0, hi = idx->n;
	if (off >= ca_index_blob_size(idx))
		return -ERANGE;
	/* first chunk whose end is beyond off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ca_le64_read(&idx->items[mid].offset) <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo;
}

/* ---- writer ---- */

#define WBUF_ITEMS 4096

struct ca_index_writer {
	struct ca_atomic_file file;
	uint64_t max, prev_end, n;
	size_t buffered;
	uint8_t buf[WBUF_ITEMS * ITEM_SIZE];
};

int ca_index_writer_open(const char *path, uint64_t flags, uint64_t min, uint64_t avg, uint64_t max,
                         mode_t mode, struct ca_index_writer **ret)
{
	uint8_t head[HEAD_SIZE];
	if (!ca_feature_is_valid(flags) || min < 1 || min > avg || avg > max || max > CA_CHUNK_SIZE_LIMIT_MAX)
		return -EINVAL;
	struct ca_index_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	int r = ca_atomic_file_open(&w->file, path, mode & 0666);
	if (r < 0) {
		free(w);
		return r;
	}
	w->file.durable = true; /* an index is published: it must not name lost chunks */
	w->max = max;
	ca_le64_write(head, sizeof(struct ca_format_index));
	ca_le64_write(head + 8, CA_FORMAT_INDEX);
	ca_le64_write(head + 16, flags);
	ca_le64_write(head + 24, min);
	ca_le64_write(head + 32, avg);
	ca_le64_write(head + 40, max);
	ca_le64_write(head + 48, UINT64_MAX);
	ca_le64_write(head + 56, CA_FORMAT_TABLE);
	r = ca_write_all(w->file.fd, head, sizeof(head));
	if (r < 0) {
		ca_index_writer_abort(w);
		return r;
	}
	*ret = w;
	return 0;
}

static int flush(struct ca_index_writer *w)
{
	int r = ca_write_all(w->file.fd, w->buf, w->buffered * ITEM_SIZE);
	w->buffered = 0;
	return r;
}

int ca_index_writer_add(struct ca_index_writer *w, uint64_t end, const uint8_t id[CA_CHUNK_ID_SIZE])
{
	if (end <= w->prev_end || end - w->prev_end > w->max)
		return -EINVAL;
	uint8_t *item = w->buf + w->buffered * ITEM_SIZE;
	ca_le64_write(item, end);
	memcpy(item + 8, id, CA_CHUNK_ID_SIZE);
	w->prev_end = end;
	w->n++;
	if (++w->buffered == WBUF_ITEMS)
		return flush(w);
	return 0;
}

int ca_index_writer_commit(struct ca_index_writer *w)
{
	uint8_t tail[TAIL_SIZE];
	int r = flush(w);
	ca_le64_write(tail, 0);
	ca_le64_write(tail + 8, 0);
	ca_le64_write(tail + 16, sizeof(struct ca_format_index));
	ca_le64_write(tail + 24, sizeof(struct ca_format_header) + w->n * ITEM_SIZE + TAIL_SIZE);
	ca_le64_write(tail + 32, CA_FORMAT_TABLE_TAIL_MARKER);
	if (r == 0)
		r = ca_write_all(w->file.fd, tail, sizeof(tail));
	if (r == 0)
		r = ca_atomic_file_commit(&w->file);
	else
		ca_atomic_file_abort(&w->file);
	free(w);
	return r;
}

void ca_index_writer_abort(struct ca_index_writer *w)
{
	if (!w)
		return;
	ca_atomic_file_abort(&w->file);
	free(w);
}
