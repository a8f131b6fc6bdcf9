/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdio.h - whole-buffer read/write on file descriptors, retrying EINTR and short transfers. */
#ifndef CA_FDIO_H
#define CA_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* 0 or negative errno. */
int ca_write_all(int fd, const void *p, size_t n);
int ca_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* Reads until n bytes or EOF; returns the count read or negative errno. */
ssize_t ca_read_full(int fd, void *p, size_t n);
ssize_t ca_pread_full(int fd, void *p, size_t n, uint64_t off);

/* ca_write_all at fd's position, which is off in the file, but each part
 * of a 4 KiB block of the file that p fills with zeros is skipped with
 * lseek: in a file that is fresh (nothing there yet), a block only zeros
 * were meant for stays a hole. The caller sets
 * the size at the end (ftruncate), since a file ending in a hole is short.
 * 0 or negative errno. */
int ca_write_sparse(int fd, const void *p, size_t n, uint64_t off);
/* The same with pwrite at off (the file already has its size). */
int ca_pwrite_sparse(int fd, const void *p, size_t n, uint64_t off);
/* The same over the n buffers of iov, one after the other from off, as
 * few pwritev calls as the holes allow: one writer putting many chunks
 * in one call, where a call per chunk costs the file's lock each time.
 * With holes false every byte is written. iov is not changed. */
int ca_pwritev_sparse(int fd, const struct iovec *iov, size_t n, uint64_t off, bool holes);
/* Whether ca_write_sparse(fd, p, n, off) leaves its last bytes a hole,
 * i.e. whether a file it ends needs its size set. */
bool ca_sparse_ends_in_hole(const void *p, size_t n, uint64_t off);

#endif
