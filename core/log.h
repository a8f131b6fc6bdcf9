/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log.h - one-line diagnostics on stderr, "cafs: <what>: <why>".
 *
 * Thread-safe: each message is formatted into a local buffer and written
 * with one write(2). The *_errno forms return -abs(err), so a caller can
 * log and return in one statement. %m is not supported; pass errno values.
 */
#ifndef CA_LOG_H
#define CA_LOG_H

#include <stdbool.h>

enum ca_log_level { CA_LOG_SILENT = -1, CA_LOG_ERROR, CA_LOG_WARNING, CA_LOG_INFO, CA_LOG_DEBUG };

/* Messages above this level are dropped (CA_LOG_SILENT drops all). Safe to
 * change from any thread, e.g. to go quiet once the user interrupted us. */
void ca_log_set_level(enum ca_log_level level);
enum ca_log_level ca_log_get_level(void);

void ca_log(enum ca_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs "fmt: strerror(err)" and returns -abs(err). */
int ca_log_errno(enum ca_log_level level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define ca_log_error(...) ca_log(CA_LOG_ERROR, __VA_ARGS__)
#define ca_log_warning(...) ca_log(CA_LOG_WARNING, __VA_ARGS__)
#define ca_log_info(...) ca_log(CA_LOG_INFO, __VA_ARGS__)
#define ca_log_debug(...) ca_log(CA_LOG_DEBUG, __VA_ARGS__)
#define ca_log_error_errno(err, ...) ca_log_errno(CA_LOG_ERROR, (err), __VA_ARGS__)
#define ca_log_warning_errno(err, ...) ca_log_errno(CA_LOG_WARNING, (err), __VA_ARGS__)
#define ca_log_debug_errno(err, ...) ca_log_errno(CA_LOG_DEBUG, (err), __VA_ARGS__)

/* strerror without the thread-safety trap, plus our own codes (EBADMSG reads "corrupt data"). */
const char *ca_strerror(int err, char *buf, unsigned len);

#endif
