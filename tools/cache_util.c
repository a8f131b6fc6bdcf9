/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cache_util.c - sizes and the cache dir: shared by cache and gc. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "cmd.h"
#include "base/log.h"
#include "image/source.h"

char *cafs_cache_dir(const char *opt)
{
	char *d = opt ? strdup(opt) : ca_source_default_cache_dir();
	if (!d && errno == ENOENT)
		ca_log_error("cache: no home directory to keep it in: give --cache DIR or set XDG_CACHE_HOME");
	else if (!d)
		ca_log_error_errno(ENOMEM, "cache directory");
	return d;
}

int cafs_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	uint64_t mul = 1;
	switch (*end) {
	case 'T': case 't': mul <<= 10; /* fall through */
	case 'G': case 'g': mul <<= 10; /* fall through */
	case 'M': case 'm': mul <<= 10; /* fall through */
	case 'K': case 'k': mul <<= 10; end++; break;
	case 'B': case 0: break;
	default: return -EINVAL;
	}
	if (!strcmp(end, "iB") || !strcmp(end, "B"))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	double b = v * (double)mul;
	if (b >= 18446744073709551615.0)
		return -ERANGE;
	*ret = (uint64_t)b;
	return 0;
}

void cafs_format_size(uint64_t v, char *buf, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 4)
		d /= 1024, i++;
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}
