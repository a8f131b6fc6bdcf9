/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay-main - the main of a fuzz harness built without libFuzzer (make
 * check): runs LLVMFuzzerTestOneInput on every file of the directories (or
 * files) given, or by default of the harness's seed corpus and its crash
 * regressions, tests/fuzz/{corpus,regress}/NAME under $top_srcdir. Prints
 * TAP: one line per directory. A broken property aborts, which the TAP
 * driver reports as a failure.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "fuzz.h"

#ifndef FUZZ_NAME
#error "build with -DFUZZ_NAME=\"name\""
#endif

/* LLVMFuzzerInitialize, when a harness has one (weak: most do not). */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path, unsigned *count)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf || ca_pread_full(fd, buf, n, 0) != (ssize_t)n) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		close(fd);
		return -1;
	}
	close(fd);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	(*count)++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order. */
static int run_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int r = 0;
	if (!d) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char **nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn || asprintf(&nn[n], "%s/%s", dir, de->d_name) < 0) {
			names = nn ? nn : names;
			r = -1;
			break;
		}
		names = nn;
		n++;
	}
	closedir(d);
	if (names)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (r == 0)
			r = run_file(names[i], count);
		free(names[i]);
	}
	free(names);
	return r;
}

/* A file or a directory's files; a missing directory is empty when
 * missing_ok (a harness has no regressions yet). */
static int run(const char *path, bool missing_ok, unsigned *count)
{
	struct stat st;
	if (missing_ok && stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return run_dir(path, count);
	return run_file(path, count);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	int fails = 0, tests = 0;
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		printf("1..%d\n", argc - 1);
		for (int i = 1; i < argc; i++) {
			unsigned count = 0;
			int r = run(argv[i], false, &count);
			printf("%s %d - %s: %u inputs\n", r == 0 ? "ok" : "not ok", ++tests, argv[i], count);
			fails += r != 0;
		}
		return fails ? 1 : 0;
	}
	printf("1..2\n");
	const char *kinds[] = { "corpus", "regress" };
	for (int k = 0; k < 2; k++) {
		char *dir;
		unsigned count = 0;
		if (asprintf(&dir, "%s/tests/fuzz/%s/%s", top ? top : ".", kinds[k], FUZZ_NAME) < 0)
			return 99;
		int r = run(dir, k == 1, &count);
		printf("%s %d - fuzz-%s %s: %u inputs replayed\n", r == 0 ? "ok" : "not ok", ++tests, FUZZ_NAME,
		       kinds[k], count);
		fails += r != 0;
		free(dir);
	}
	return fails ? 1 : 0;
}
