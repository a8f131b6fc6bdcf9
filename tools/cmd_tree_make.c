/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cmd_tree_make.c - making archives (.catar/.caidx) of directories, and their digests. */
#include "config.h"

#include <errno.h>

#include "cmd.h"
#include "log.h"

/* placeholder until the catar encoder lands */
int cafs_make_archive(const struct cafs_make_args *a)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", a->out);
	return 1;
}

int cafs_digest_tree(const char *path, char **stores, size_t n_stores)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", path);
	return 1;
}
