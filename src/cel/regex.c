/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regular expressions for matches(): PCRE2 in UTF mode. CEL specifies RE2 syntax; PCRE2 accepts
 * RE2's syntax (a subset of it), and a match limit bounds backtracking so that a hostile pattern
 * cannot stall the allocator.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "cel/cel-internal.h"

#define REGEX_MATCH_LIMIT 100000
#define REGEX_DEPTH_LIMIT 1000

void *cel_regex_compile(const char *pat, size_t len, char *msg, size_t msglen)
{
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_UTF,
                                   &errcode, &erroff, NULL);
    if (!re) {
        PCRE2_UCHAR buf[120];
        pcre2_get_error_message(errcode, buf, sizeof(buf));
        snprintf(msg, msglen, "%s at offset %zu", (const char *)buf, (size_t)erroff);
        return NULL;
    }
    return re;
}

void cel_regex_free(void *re)
{
    pcre2_code_free(re);
}

int cel_regex_search(const void *re, const char *s, size_t len)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return -ENOMEM;
    }
    pcre2_set_match_limit(mc, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(mc, REGEX_DEPTH_LIMIT);
    int rc = pcre2_match(re, (PCRE2_SPTR)(len ? s : ""), len, 0, 0, md, mc);
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    return -EINVAL;
}
