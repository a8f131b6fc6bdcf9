/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* reflink.c - chunks cloned from seed files into an extracted blob (see reflink.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/fdio.h"
#include "format/idset.h"
#include "chunk/reflink.h"

#define MAX_SEEDS 1024
#define SEED_SHIFT 48 /* idset value: seed << 48 | offset */
#define CHECK_BUF (1u << 20)

struct ca_reflink {
	enum ca_digest_type digest;
	struct ca_idset *where;
	int fds[MAX_SEEDS];
	unsigned n_fds;
	bool unsupported; /* the output's file system said no once: stop asking (atomic) */
	uint64_t cloned;  /* atomic */
};

int ca_reflink_new(enum ca_digest_type digest, struct ca_reflink **ret)
{
	struct ca_reflink *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return -ENOMEM;
	rl->digest = digest;
	int r = ca_idset_new(1024, &rl->where);
	if (r < 0) {
		free(rl);
		return r;
	}
	*ret = rl;
	return 0;
}

void ca_reflink_free(struct ca_reflink *rl)
{
	if (!rl)
		return;
	for (unsigned i = 0; i < rl->n_fds; i++)
		close(rl->fds[i]);
	ca_idset_free(rl->where);
	free(rl);
}

int ca_reflink_add_seed(struct ca_reflink *rl, int fd, unsigned *ret_seed)
{
	if (rl->n_fds >= MAX_SEEDS)
		return -EMLINK;
	int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (d < 0)
		return -errno;
	rl->fds[rl->n_fds] = d;
	*ret_seed = rl->n_fds++;
	return 0;
}

int ca_reflink_note(struct ca_reflink *rl, unsigned seed, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t offset)
{
	if (seed >= rl->n_fds || offset >> SEED_SHIFT)
		return 0; /* not representable: that chunk is just written */
	int r = ca_idset_add(rl->where, id, (uint64_t)seed << SEED_SHIFT | offset);
	return r < 0 ? r : 0;
}

uint64_t ca_reflink_bytes(const struct ca_reflink *rl)
{
	return __atomic_load_n(&rl->cloned, __ATOMIC_RELAXED);
}

/* copy [soff, soff+n) of the seed to off in out (a partial block) */
static int copy_range(int seed, uint64_t soff, int out, uint64_t off, size_t n)
{
	uint8_t buf[4096];
	if (n == 0)
		return 0;
	ssize_t k = ca_pread_full(seed, buf, n, soff);
	if (k < 0)
		return (int)k;
	if ((size_t)k != n)
		return -EIO; /* the seed shrank */
	return ca_pwrite_all(out, buf, n, off);
}

/* the output's bytes at [off, off+size) hash to id */
static bool check(const struct ca_reflink *rl, const uint8_t id[CA_CHUNK_ID_SIZE], int out, uint64_t off, uint64_t size)
{
	struct ca_digest *d = NULL;
	uint8_t *buf = malloc(CHECK_BUF), got[CA_CHUNK_ID_SIZE];
	int r = buf ? ca_digest_new(rl->digest, &d) : -ENOMEM;
	for (uint64_t done = 0; r == 0 && done < size;) {
		size_t n = size - done < CHECK_BUF ? (size_t)(size - done) : CHECK_BUF;
		ssize_t k = ca_pread_full(out, buf, n, off + done);
		if (k != (ssize_t)n)
			r = -EIO;
		else
			r = ca_digest_update(d, buf, n);
		done += n;
	}
	if (r == 0)
		r = ca_digest_final(d, got);
	ca_digest_free(d);
	free(buf);
	return r == 0 && !memcmp(got, id, CA_CHUNK_ID_SIZE);
}

int ca_reflink_clone(void *userdata, const uint8_t id[CA_CHUNK_ID_SIZE], uint64_t size, int out, uint64_t off)
{
	struct ca_reflink *rl = userdata;
	uint64_t v;
	if (__atomic_load_n(&rl->unsupported, __ATOMIC_RELAXED) || !ca_idset_get(rl->where, id, &v))
		return 0;
	int seed = rl->fds[v >> SEED_SHIFT];
	uint64_t soff = v & ((UINT64_C(1) << SEED_SHIFT) - 1);
	/* the block size is at most 64 KiB on Linux file systems that clone:
	 * ask the ioctl, which refuses (EINVAL) what is not aligned */
	const uint64_t blk = 4096;
	if (soff % blk != off % blk)
		return 0;
	uint64_t head = (blk - off % blk) % blk;
	if (head > size)
		head = size;
	uint64_t body = (size - head) / blk * blk, tail = size - head - body;
	if (body == 0)
		return 0;
	struct file_clone_range fcr = {
		.src_fd = seed, .src_offset = soff + head, .src_length = body, .dest_offset = off + head,
	};
	if (ioctl(out, FICLONERANGE, &fcr) < 0) {
		/* not this file system, not across these two, or not at this block size: the rest is written */
		if (errno == EOPNOTSUPP || errno == ENOTTY || errno == EXDEV || errno == EINVAL || errno == EPERM)
			__atomic_store_n(&rl->unsupported, true, __ATOMIC_RELAXED);
		return 0;
	}
	int r = copy_range(seed, soff, out, off, (size_t)head);
	if (r == 0)
		r = copy_range(seed, soff + head + body, out, off + head + body, (size_t)tail);
	if (r == 0 && check(rl, id, out, off, size)) {
		__atomic_add_fetch(&rl->cloned, body, __ATOMIC_RELAXED);
		return 1;
	}
	/* the seed changed since it was chunked: zeros again, for the caller
	 * (which may leave zero blocks unwritten) */
	if (fallocate(out, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)size) == 0)
		return 0;
	uint8_t zeros[4096] = { 0 };
	for (uint64_t done = 0; done < size; done += sizeof(zeros)) {
		size_t n = size - done < sizeof(zeros) ? (size_t)(size - done) : sizeof(zeros);
		r = ca_pwrite_all(out, zeros, n, off + done);
		if (r < 0)
			return r;
	}
	return 0;
}
