/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* siphash.h - SipHash-2-4 (64-bit output), for GOODBYE table name hashes. */
#ifndef CA_SIPHASH_H
#define CA_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t ca_siphash24(const void *data, size_t len, const uint8_t key[16]);
/* The hash a GOODBYE item carries for a name (without its NUL). */
uint64_t ca_goodbye_hash(const void *name, size_t len);

#endif
