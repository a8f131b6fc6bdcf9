/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_stats.c - `cafs stats MOUNTPOINT`: a mount's counters, read through
 * FS_IOC_STATS on its root (fs.h), or from the virtual xattrs there when
 * the mount's server predates the ioctl, as text (the default),
 * OpenMetrics, Prometheus text or JSON (docs/metrics.md, docs/json.md), on
 * stdout or, with --textfile, into a file replaced whole for
 * node_exporter's textfile collector. The server renders the metrics;
 * this only asks for a format.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/log.h"
#include "cmd.h"
#include "../fs/fs.h"

enum stats_format { FORMAT_TEXT, FORMAT_OPENMETRICS, FORMAT_PROMETHEUS, FORMAT_JSON };

struct stats_request {
	struct cafs_request base;
	const char *mountpoint;
	enum stats_format format;
	bool format_given;
	const char *textfile; /* --textfile: write here instead of stdout */
};

static const struct cafs_option stats_options[] = {
	{ "format", 0, "FORMAT", CAFS_OPT_FORMAT,
	  .help = "text (the default), openmetrics, prometheus (text\n"
	          "format 0.0.4) or json (docs: metrics.md, json.md)" },
	{ "json", 0, NULL, CAFS_OPT_JSON, .help = "the same as --format=json" },
	{ "textfile", 0, "FILE", CAFS_OPT_TEXTFILE,
	  .help = "write the metrics into FILE (replaced whole: a\n"
	          "temporary file renamed), for node_exporter's textfile\n"
	          "collector; prometheus format unless --format says" },
	{ NULL },
};

static int stats_set(struct cafs_request *q, int id, const char *arg)
{
	struct stats_request *s = (struct stats_request *)q;
	static const char *const names[] = { "text", "openmetrics", "prometheus", "json" };
	switch (id) {
	case CAFS_OPT_FORMAT:
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(arg, names[i])) {
				s->format = (enum stats_format)i;
				s->format_given = true;
				return 0;
			}
		return cafs_usage_error("stats", "--format=%s: expected text, openmetrics, prometheus or json", arg);
	case CAFS_OPT_JSON:
		s->format = FORMAT_JSON;
		s->format_given = true;
		return 0;
	case CAFS_OPT_TEXTFILE:
		s->textfile = arg;
		return 0;
	}
	return 0; /* -v, -q: accepted as everywhere */
}

static int stats_operands(struct cafs_request *q, int n, char **arg)
{
	struct stats_request *s = (struct stats_request *)q;
	if (n != 1)
		return cafs_usage_error("stats", "expected MOUNTPOINT");
	s->mountpoint = arg[0];
	if (s->textfile && !s->format_given)
		s->format = FORMAT_PROMETHEUS; /* what the textfile collector reads */
	if (s->textfile && s->format == FORMAT_TEXT)
		return cafs_usage_error("stats", "--textfile takes metrics: --format=openmetrics, prometheus or json");
	return 0;
}

/* How many times a reader starts over when the server no longer keeps the
 * rendering it was paging through (others kept rendering meanwhile). */
#define STATS_TRIES 8


/* The document through FS_IOC_STATS into buf (FS_METRICS_MAX bytes): its
 * length, or a negative errno: -ENOTTY when the file system does not
 * answer the ioctl (another one, or a server before it). Pages of
 * CAFS_TEST_STATS_PAGE bytes when set (tests: several pages). */
static ssize_t stats_ioctl(int fd, enum stats_format format, char *buf)
{
	struct fs_stats_page *pg = malloc(sizeof(*pg));
	const char *env = getenv("CAFS_TEST_STATS_PAGE");
	uint32_t want = env && *env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	ssize_t r = -EAGAIN;
	if (!pg)
		return -ENOMEM;
	for (int t = 0; t < STATS_TRIES && r == -EAGAIN; t++) {
		uint64_t off = 0, digest = 0, total = 0;
		do {
			memset(pg, 0, offsetof(struct fs_stats_page, data));
			pg->format = (uint32_t)format;
			pg->offset = off;
			pg->digest = digest;
			pg->len = want;
			if (ioctl(fd, FS_IOC_STATS, pg) < 0) {
				r = errno == ESTALE ? -EAGAIN : errno == EINVAL || errno == ENOTSUP ? -ENOTTY : -errno;
				break;
			}
			/* another file system's answer, or a broken one: not ours */
			if (pg->magic != FS_STATS_MAGIC || pg->len > FS_STATS_PAGE || pg->total > FS_METRICS_MAX ||
			    (off && (pg->digest != digest || pg->total != total)) || pg->len > pg->total - off ||
			    (pg->len == 0 && off < pg->total)) {
				r = -ENOTTY;
				break;
			}
			memcpy(buf + off, pg->data, pg->len);
			digest = pg->digest;
			total = pg->total;
			off += pg->len;
			if (off == total)
				r = (ssize_t)total;
		} while (r == -EAGAIN);
	}
	free(pg);
	return r == -EAGAIN ? -ESTALE : r;
}

static int stats_run(struct cafs_request *q)
{
	const struct stats_request *s = (const struct stats_request *)q;
	static const char *const xattrs[] = { FS_STATS_XATTR, FS_METRICS_XATTR, FS_METRICS_PROM_XATTR,
		                              FS_METRICS_JSON_XATTR };
	static_assert((int)FORMAT_TEXT == FS_STATS_TEXT && (int)FORMAT_JSON == FS_STATS_JSON, "formats");
	char *buf = malloc(FS_METRICS_MAX);
	int r = 1, fd = -1;
	ssize_t k;
	struct statfs sfs;
	if (!buf) {
		ca_log_error_errno(ENOMEM, "%s", s->mountpoint);
		goto out;
	}
	fd = open(s->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ca_log_error_errno(errno, "%s", s->mountpoint);
		goto out;
	}
	k = stats_ioctl(fd, s->format, buf);
	if (k == -ESTALE) {
		ca_log_error("%s: the stats changed while being read, %d times: try again", s->mountpoint, STATS_TRIES);
		goto out;
	} else if (k < 0 && k != -ENOTTY) {
		ca_log_error_errno((int)-k, "%s", s->mountpoint);
		goto out;
	} else if (k < 0) {
		/* a server before the ioctl: one call with the largest buffer
		 * (a size probe first would race with counters that grow
		 * between the two calls) */
		k = fgetxattr(fd, xattrs[s->format], buf, FS_METRICS_MAX);
	}
	if (k < 0) {
		int e = errno;
		if (e == ENODATA && s->format != FORMAT_TEXT && fgetxattr(fd, FS_STATS_XATTR, NULL, 0) >= 0)
			ca_log_error("%s: this mount's server predates metrics: remount it", s->mountpoint);
		else if (e == ENOTSUP && fstatfs(fd, &sfs) == 0 && sfs.f_type == FUSE_SUPER_MAGIC)
			/* a server before the ioctl on a connection where the
			 * kernel no longer sends getxattr (a takeover by an older
			 * cafs), or another FUSE file system */
			ca_log_error("%s: not a cafs mount, or its server predates the mount's (remount it)",
			             s->mountpoint);
		else if (e == ENODATA || e == ENOTSUP)
			ca_log_error("%s: not a cafs mount", s->mountpoint);
		else
			ca_log_error_errno(e, "%s", s->mountpoint);
		goto out;
	}
	if (s->textfile) {
		int e = ca_atomic_file_write(s->textfile, 0644, buf, (size_t)k);
		if (e < 0) {
			ca_log_error_errno(-e, "%s", s->textfile);
			goto out;
		}
	} else if (fwrite(buf, 1, (size_t)k, stdout) != (size_t)k || fflush(stdout) != 0) {
		ca_log_error_errno(errno, "stdout");
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return r;
}

const struct cafs_command cafs_command_stats = {
	.name = "stats",
	.synopsis = "stats [OPTIONS] MOUNTPOINT",
	.help_head = "Prints a mount's counters: chunks and bytes fetched, cache and LRU hits,\n"
	             "HTTP requests and retries, errors, and the progress of a profile replay\n"
	             "and of --fill; as metrics (OpenMetrics, Prometheus text, JSON) with\n"
	             "--format, per store, with a request latency histogram.\n\n",
	.options = stats_options,
	.help_column = 26,
	.request_size = sizeof(struct stats_request),
	.set = stats_set,
	.operands = stats_operands,
	.run = stats_run,
};
