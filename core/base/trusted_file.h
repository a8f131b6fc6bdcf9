/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trusted_file.h - the one rule for the files that decide what cafs
 * trusts (the store settings file, storeconf.h; the trusted minisign keys
 * and their directory, trust.h): nobody but root and the user running
 * cafs may be able to change them, or whoever can would choose the
 * credentials, or the keys an image is checked against.
 *
 * The check is made on what was opened (fstat of the fd), never on a path
 * that could be swapped between the check and the read. It does not log
 * (the callers' messages differ: a usage error, a refused file); no global
 * state.
 */
#ifndef CA_TRUSTED_FILE_H
#define CA_TRUSTED_FILE_H

#include <sys/stat.h>

#define CA_TRUSTED_FILE_WHY_MAX 64

/* Is st (of a file opened) of type (S_IFREG or S_IFDIR), owned by root or
 * the effective user, and not writable by group or others? 0, or why
 * gets the reason ("refused: writable by group or others (chmod go-w)")
 * for the caller's "PATH: <why>" and:
 *   -EINVAL  not of that type
 *   -EPERM   another user's, or writable by group or others */
int ca_trusted_file_check(const struct stat *st, mode_t type, char why[CA_TRUSTED_FILE_WHY_MAX]);

#endif
