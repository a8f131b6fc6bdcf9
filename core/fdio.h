/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fdio.h - whole-buffer read/write on file descriptors, retrying EINTR and short transfers. */
#ifndef CA_FDIO_H
#define CA_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 0 or negative errno. */
int ca_write_all(int fd, const void *p, size_t n);
int ca_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* Reads until n bytes or EOF; returns the count read or negative errno. */
ssize_t ca_read_full(int fd, void *p, size_t n);
ssize_t ca_pread_full(int fd, void *p, size_t n, uint64_t off);

#endif
