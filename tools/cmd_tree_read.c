/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cmd_tree_read.c - extracting, listing and describing archives (.catar/.caidx). */
#include "config.h"

#include <errno.h>

#include "cmd.h"
#include "log.h"

/* placeholder until the catar decoder lands */
int cafs_extract_archive(const struct cafs_extract_args *a)
{
	ca_log_error_errno(-EOPNOTSUPP, "%s: archives", a->in);
	return 1;
}
