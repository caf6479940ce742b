/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regular expressions for matches(): PCRE2 in UTF mode. CEL specifies RE2 syntax; PCRE2 accepts
 * RE2's syntax (a subset of it), and a match limit bounds backtracking so that a hostile pattern
 * cannot stall the allocator. Patterns are JIT-compiled where PCRE2 supports it; compiled code is
 * read-only, so one pattern may be matched from several threads at once.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include "cel/cel-internal.h"

#define REGEX_MATCH_LIMIT 100000
#define REGEX_DEPTH_LIMIT 1000

void *cel_regex_compile(const char *pat, size_t len, bool jit, char *msg, size_t msglen)
{
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_UTF, &errcode, &erroff, NULL);
    if (!re) {
        PCRE2_UCHAR buf[120];
        pcre2_get_error_message(errcode, buf, sizeof(buf));
        snprintf(msg, msglen, "%s at offset %zu", (const char *)buf, (size_t)erroff);
        return NULL;
    }
    /* JIT when the platform has it (matching then needs no heap frames); else interpret */
    if (jit)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

struct cel_value cel_regex_for_call(struct cel_eval *ev, const struct cel_node *call,
                                    const struct cel_value *pat, const void **re)
{
    if (call->regex) {
        *re = call->regex;
        return cel_null();
    }
    for (int i = 0; i < ev->nrx; i++) {
        if (ev->rx[i].len == pat->len && !memcmp(ev->rx[i].pat, pat->s, pat->len)) {
            *re = ev->rx[i].re;
            return cel_null();
        }
    }
    /* compiling is the expensive part: charge for it so that a loop over many distinct
     * patterns hits the cost limit long before memory becomes a problem */
    if (!cel_cost(ev, CEL_REGEX_COMPILE_COST + pat->len))
        return cel_oom(ev);
    char msg[128];
    void *c = cel_regex_compile(pat->s, pat->len, false, msg, sizeof(msg));
    if (!c)
        return cel_error(ev, call, "invalid regular expression: %s", msg);
    if (cel_arena_defer(ev->arena, cel_regex_free, c) < 0) {
        cel_regex_free(c);
        return cel_oom(ev);
    }
    if (ev->nrx < CEL_EVAL_REGEX_CACHE)
        ev->rx[ev->nrx++] = (typeof(ev->rx[0])){pat->s, pat->len, c};
    *re = c;
    return cel_null();
}

void cel_regex_free(void *re)
{
    pcre2_code_free(re);
}

static void *arena_malloc(PCRE2_SIZE size, void *data)
{
    return cel_arena_alloc(data, size);
}

static void arena_free(void *p, void *data)
{
    (void)p;
    (void)data; /* released with the arena */
}

static int match_at(const void *re, const char *s, size_t len, size_t off, size_t *mb, size_t *me,
                    struct cel_arena *arena);

int cel_regex_search(const void *re, const char *s, size_t len, struct cel_arena *arena)
{
    return match_at(re, s, len, 0, NULL, NULL, arena);
}

int cel_regex_find(const void *re, const char *s, size_t len, size_t off, size_t *mb, size_t *me,
                   struct cel_arena *arena)
{
    return match_at(re, s, len, off, mb, me, arena);
}

static int match_at(const void *re, const char *s, size_t len, size_t off, size_t *mb, size_t *me,
                    struct cel_arena *arena)
{
    pcre2_general_context *gc = pcre2_general_context_create(arena_malloc, arena_free, arena);
    pcre2_match_data *md = gc ? pcre2_match_data_create(1, gc) : NULL;
    pcre2_match_context *mc = gc ? pcre2_match_context_create(gc) : NULL;
    if (!md || !mc)
        return -ENOMEM;
    pcre2_set_match_limit(mc, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(mc, REGEX_DEPTH_LIMIT);
    /* heap frames for backtracking come from the match context's allocator, i.e. the arena */
    int rc = pcre2_match(re, (PCRE2_SPTR)(len ? s : ""), len, off, 0, md, mc);
    if (rc >= 0) {
        if (mb && me) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            *mb = ov[0];
            *me = ov[1] >= ov[0] ? ov[1] : ov[0];
        }
        return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    return -EINVAL;
}
