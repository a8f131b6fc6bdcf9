/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * secret.h - credentials (a settings file's headers and passwords, S3
 * keys) kept out of core dumps, and wiped when freed.
 *
 * Why not pages marked MADV_DONTDUMP: the secrets do not stay in our
 * buffers. libcurl copies a password (CURLOPT_PASSWORD, CURLOPT_KEYPASSWD)
 * into its own heap, the header list is made of its nodes, and each
 * request is formatted into its buffers; no madvise of ours reaches those.
 * So a process that holds a secret makes itself not dumpable
 * (prctl(PR_SET_DUMPABLE, 0)): no kernel core dump, and no ptrace attach
 * or /proc/PID/mem by the same unprivileged user, from then to its exit.
 * A process that holds none dumps core as before: that is what someone
 * debugging a crash wants, and secrets are only loaded for the URLs that
 * have them. Whoever needs a core of a process with secrets sets
 * CAFS_DUMPABLE=1 (the core then holds them).
 *
 * No global state of ours (the flag is the kernel's); thread-safe.
 */
#ifndef CA_SECRET_H
#define CA_SECRET_H

/* This process now holds a secret: no core dumps from now on, unless
 * $CAFS_DUMPABLE is 1. Idempotent; cannot fail in a way that matters
 * (a failing prctl is logged at debug level). */
void ca_secret_hold(void);

/* Wipe a NUL-terminated secret (explicit_bzero) and free it. Accepts NULL. */
void ca_secret_free(char *s);

#endif
