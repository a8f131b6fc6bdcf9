/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * catar-testtree.h - for the catar decoder tests: build a varied tree in a
 * temporary directory and archive it with casync (the oracle), plus range
 * readers over a file or a memory buffer that count what they are asked.
 */
#ifndef CAFS_CATAR_TESTTREE_H
#define CAFS_CATAR_TESTTREE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fdio.h"
#include "testdata.h" /* testdata_sh, testdata_have */

/* A tree with every node type casync archives by default: files (empty,
 * small, 100 KB, setuid, odd names), nested and empty directories, a
 * directory of 400 entries (a GOODBYE table of several tree levels),
 * symlinks, a fifo, devices (as root), xattrs, access and default ACLs,
 * nanosecond mtimes and a foreign uid/gid. small=1 leaves out the big
 * parts (for the mutation test). */
static inline int tt_make_tree(const char *dir, int small)
{
	char rand_bin[4096];
	snprintf(rand_bin, sizeof(rand_bin), "%s/tree/sub/rand.bin", dir);
	if (testdata_sh("mkdir -p '%s/tree/sub'", dir) != 0 || testdata_write_file(rand_bin, small ? 3000 : 100000, 42) < 0)
		return -1;
	return testdata_sh(
	        "set -e; cd '%s'; mkdir -p tree/sub/deeper tree/empty tree/dacl; cd tree;"
	        "printf 'hi\\n' > a.txt; : > empty.txt; echo x > sub/deeper/x;"
	        "printf 'z' > 'sp ace'; printf 'u' > \"$(printf '\\303\\274')\";"
	        "chown 4242:4343 sub/rand.bin 2>/dev/null || true;"
	        "printf 's' > suid; chmod 4755 suid;"
	        "ln -s a.txt link; ln -s /nonexistent/abs/target sub/abs; mkfifo fifo;"
	        "mknod cdev c 1 3 2>/dev/null || true; mknod bdev b 7 200 2>/dev/null || true;"
	        "setfattr -n user.foo -v bar a.txt 2>/dev/null || true;"
	        "setfattr -n user.zempty a.txt 2>/dev/null || true;"
	        "setfacl -m u:4242:rw,g:4343:r a.txt 2>/dev/null || true;"
	        "setfacl -d -m u:4242:rx dacl 2>/dev/null || true; echo in > dacl/f;"
	        "%s"
	        "touch -h -d '2020-01-01 00:00:00.123456789' a.txt link sub/deeper/x;"
	        "touch -d '2001-02-03 04:05:06.5' sub",
	        dir,
	        small ? "" :
	                "mkdir big; for i in $(seq -w 0 399); do echo $i > big/f$i; done;"
	                "n=$(printf 'n%.0s' $(seq 1 255)); echo long > \"$n\";");
}

/* A range reader over a file descriptor or a buffer, counting calls. */
struct tt_reader {
	int fd;
	const uint8_t *mem;
	size_t mem_size;
	unsigned reads, readaheads;
	uint64_t bytes;
};

static inline ssize_t tt_read(void *userdata, void *buf, size_t len, uint64_t off)
{
	struct tt_reader *t = userdata;
	t->reads++;
	t->bytes += len;
	if (t->mem) {
		if (off >= t->mem_size)
			return 0;
		if (len > t->mem_size - off)
			len = (size_t)(t->mem_size - off);
		memcpy(buf, t->mem + off, len);
		return (ssize_t)len;
	}
	return ca_pread_full(t->fd, buf, len, off);
}

static inline void tt_readahead(void *userdata, uint64_t off, uint64_t len)
{
	struct tt_reader *t = userdata;
	(void)off;
	(void)len;
	t->readaheads++;
}

static inline uint8_t *tt_slurp(const char *path, size_t *ret_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *p = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (p = malloc(st.st_size ? st.st_size : 1)) &&
	    ca_read_full(fd, p, st.st_size) != st.st_size) {
		free(p);
		p = NULL;
	}
	close(fd);
	*ret_size = (size_t)st.st_size;
	return p;
}

#endif
