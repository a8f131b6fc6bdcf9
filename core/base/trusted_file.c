/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trusted_file.c - owner and mode of the files cafs trusts (see trusted_file.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "base/trusted_file.h"

int ca_trusted_file_check(const struct stat *st, mode_t type, char why[CA_TRUSTED_FILE_WHY_MAX])
{
	why[0] = 0;
	if ((st->st_mode & S_IFMT) != type) {
		snprintf(why, CA_TRUSTED_FILE_WHY_MAX, "refused: not a %s",
		         type == S_IFDIR ? "directory" : "regular file");
		return -EINVAL;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, CA_TRUSTED_FILE_WHY_MAX, "refused: owned by another user (uid %u)", (unsigned)st->st_uid);
		return -EPERM;
	}
	/* a sticky world-writable directory (/tmp) is refused too: anyone
	 * may add a file to it */
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, CA_TRUSTED_FILE_WHY_MAX, "refused: writable by group or others (chmod go-w)");
		return -EPERM;
	}
	return 0;
}
