/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_tree_make.c - what the commands that walk a tree share (the fd
 * limit), and the digests `casync digest` prints for directories and
 * archives. Making archives is core/image/image_make.c, called by cafs make
 * (cmd_blob.c).
 */
#include "config.h"

#include <sys/resource.h>

#include "cmd.h"
#include "image/image_make.h"

/* One fd per directory level is open during the walk. */
void cafs_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- digests ---- */

static int digest_dir(const char *path, enum ca_digest_type t)
{
	uint8_t d[CA_CHUNK_ID_SIZE];
	cafs_raise_fd_limit();
	/* digest does not catch signals (it writes nothing): no cancel flag */
	if (ca_image_digest_dir(path, t, NULL, d) < 0) /* logs its errors */
		return 1;
	cafs_print_digest(d);
	return 0;
}

int cafs_digest_tree(const char *path, char **stores, size_t n_stores, const char *sub,
                     const struct cafs_trusted_keys *tk, enum ca_digest_type t)
{
	switch (ca_location_image_kind(path)) {
	case CA_IMAGE_ARCHIVE:
	case CA_IMAGE_ARCHIVE_INDEX:
		/* decoded and validated on the way (cmd_tree_read.c) */
		return cafs_digest_archive(path, stores, n_stores, sub, tk);
	default:
		return digest_dir(path, t);
	}
}
