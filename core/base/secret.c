/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* secret.c - secrets out of core dumps (see secret.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "base/log.h"
#include "base/secret.h"

void ca_secret_hold(void)
{
	const char *keep = getenv("CAFS_DUMPABLE");
	if (keep && !strcmp(keep, "1"))
		return;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		ca_log_debug("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
}

void ca_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}
