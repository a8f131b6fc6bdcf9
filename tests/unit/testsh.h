/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * testsh.h - what the unit tests need from the shell and the file system:
 * running the reference tools (casync, zstd, the cafs command), and paths
 * in a test's private directory. Needs no cafs header, so the library's
 * own tests (public headers only) can use it too.
 */
#ifndef CAFS_TESTSH_H
#define CAFS_TESTSH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Run a shell command line; its exit status (0: success), -1 if it did not exit. */
static inline int testdata_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int testdata_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int r = system(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static inline int testdata_have(const char *prog)
{
	return testdata_sh("command -v %s >/dev/null 2>&1", prog) == 0;
}

/* dir/name in one of 8 rotating buffers: enough for the arguments of one call. */
static inline char *testdata_path(const char *dir, const char *name)
{
	static char p[8][4096];
	static unsigned k;
	char *s = p[k++ % 8];
	snprintf(s, sizeof(p[0]), "%s/%s", dir, name);
	return s;
}

#endif
