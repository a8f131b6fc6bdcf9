/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * init.c - the INIT exchange, run through libfuse with its reply amended.
 *
 * libfuse 3.14 computes the connection's capabilities and calls op_init,
 * but its reply never carries FUSE_PARALLEL_DIROPS (nor any flag it does
 * not list), whatever the filesystem wants: the kernel then takes a
 * directory's lock for every lookup in it, and 64 lookups in one
 * directory behind a slow server cost 64 round trips instead of one.
 * So INIT goes through libfuse with the device's descriptor pointed at a
 * pipe for that one call; the reply is read back, the flags libfuse left
 * out are added when the kernel offered them and op_init wanted them, and
 * the reply goes to the kernel.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fuse.h>

#include "fs_private.h"

/* libfuse's own read size: the kernel refuses smaller reads */
#define DEV_READ_SIZE ((size_t)(256 + 1) * 4096)

/* Run the INIT request in[0, len) through libfuse; its reply into
 * out (up to *out_len bytes; *out_len set to what it wrote). */
static int run_diverted(struct fuse_session *se, void *in, size_t len, void *out, size_t *out_len)
{
	int fd = fuse_session_fd(se), saved = -1, p[2] = { -1, -1 }, r = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	saved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (saved < 0 || dup3(p[1], fd, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	struct fuse_buf b = { .size = len, .mem = in };
	fuse_session_process_buf(se, &b);
	if (dup3(saved, fd, O_CLOEXEC) < 0) { /* cannot happen: both are open */
		r = -errno;
		goto out;
	}
	close(p[1]);
	p[1] = -1;
	ssize_t k = read(p[0], out, *out_len);
	if (k < 0)
		r = -errno;
	else
		*out_len = (size_t)k;
out:
	if (saved >= 0)
		close(saved);
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return r;
}

int fs_session_init_with(struct fuse_session *se, struct fs *fs, void *in, size_t len, bool answer)
{
	int fd = fuse_session_fd(se), r;
	uint8_t out[512];
	size_t out_len = sizeof(out);
	const struct fuse_in_header *ih = (const void *)in;
	const struct fuse_init_in *ii = (const void *)(ih + 1);
	if (len < sizeof(*ih) + sizeof(uint32_t) * 4 || ih->opcode != FUSE_INIT)
		return -EPROTO;
	r = run_diverted(se, in, len, out, &out_len);
	if (r < 0)
		return r;
	struct fuse_out_header *oh = (void *)out;
	struct fuse_init_out *io = (void *)(oh + 1);
	if (out_len >= sizeof(*oh) + 4 * sizeof(uint32_t) && oh->error == 0 && oh->len == out_len &&
	    fs->parallel_dirops && (ii->flags & FUSE_PARALLEL_DIROPS))
		io->flags |= FUSE_PARALLEL_DIROPS;
	if (answer && write(fd, out, out_len) != (ssize_t)out_len)
		r = -errno;
	ca_log_debug("mount: INIT %s, flags %#x", answer ? "answered" : "replayed",
	             out_len >= sizeof(*oh) + 16 ? io->flags : 0);
	return r;
}

int fs_session_init(struct fuse_session *se, struct fs *fs)
{
	int fd = fuse_session_fd(se), r;
	uint8_t *in = malloc(DEV_READ_SIZE);
	ssize_t k;
	if (!in)
		return -ENOMEM;
	do
		k = read(fd, in, DEV_READ_SIZE);
	while (k < 0 && (errno == EINTR || errno == ENOENT));
	r = k < 0 ? -errno : fs_session_init_with(se, fs, in, (size_t)k, true);
	free(in);
	return r;
}
