/* SPDX-License-Identifier: Apache-2.0 */
/* Function tables of the CEL library, one per source file (stdlib.c looks names up in all). */
#ifndef GS_CEL_FUNCTIONS_H
#define GS_CEL_FUNCTIONS_H

#include <stddef.h>

#include "cel/cel-internal.h"

extern const struct cel_func cel_string_funcs[]; /* strings.c: string extension + matches */
extern const size_t cel_string_funcs_count;
extern const struct cel_func cel_k8s_funcs[]; /* k8s.c: quantity and semver libraries */
extern const size_t cel_k8s_funcs_count;
extern const struct cel_func cel_optional_funcs[]; /* optional.c */
extern const size_t cel_optional_funcs_count;
extern const struct cel_func cel_net_funcs[]; /* net.c: ip and cidr libraries */
extern const size_t cel_net_funcs_count;
extern const struct cel_func cel_time_funcs[]; /* time.c: timestamps and durations */
extern const size_t cel_time_funcs_count;
struct cel_value cel_time_arith(struct cel_eval *ev, const struct cel_node *call,
                                const struct cel_value *x, const struct cel_value *y, bool sub);
extern const struct cel_func cel_list_funcs[]; /* lists.c: lists, regex find, sets, quote */
extern const size_t cel_list_funcs_count;

/* string.format(list) (format.c) */
struct cel_value cel_string_format(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n);

/* indexOf / lastIndexOf with a list receiver (lists.c; strings.c dispatches to it). */
struct cel_value cel_list_index_of(struct cel_eval *ev, const struct cel_node *call,
                                   struct cel_value *a, uint32_t n);

#endif /* GS_CEL_FUNCTIONS_H */
