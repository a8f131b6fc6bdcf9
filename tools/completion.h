/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* completion.h - the bash completion script, written from the command tables. */
#ifndef CAFS_COMPLETION_H
#define CAFS_COMPLETION_H

#include <stddef.h>
#include <stdio.h>

struct cafs_command;
/* Write the script for commands cmds[0..n) to f: 0, or 1 when writing failed. */
int cafs_completion_bash(const struct cafs_command *const *cmds, size_t n, FILE *f);

#endif
