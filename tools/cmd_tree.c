/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cmd_tree.c - archive (.catar/.caidx) and directory commands. */
#include "config.h"

#include <errno.h>

#include "cmd.h"
#include "log.h"

int cafs_make_archive(const struct cafs_make_args *a)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", a->out);
	return 1;
}

int cafs_extract_archive(const struct cafs_extract_args *a)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", a->in);
	return 1;
}

int cafs_digest_tree(const char *path, char **stores, size_t n_stores)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", path);
	return 1;
}
