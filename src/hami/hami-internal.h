/* SPDX-License-Identifier: Apache-2.0 */
/* Shared inside src/hami: Go's number parsing. */
#ifndef GS_HAMI_HAMI_INTERNAL_H
#define GS_HAMI_HAMI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* strconv.ParseInt(s[0..n), 10, ...) bounded to lo..hi: -EINVAL (syntax) or -ERANGE. */
int hami_parse_int(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out);

#endif /* GS_HAMI_HAMI_INTERNAL_H */
