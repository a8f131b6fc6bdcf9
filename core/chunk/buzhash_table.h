/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* buzhash_table.h - private to the chunker: the buzhash constants. */
#ifndef CA_BUZHASH_TABLE_H
#define CA_BUZHASH_TABLE_H
#include <stdint.h>
extern const uint32_t ca_buzhash_table[256];
#endif
