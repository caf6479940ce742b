/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes resource.Quantity, integer-exact.
 *
 * A quantity is value = mant * 10^exp10 (exp10 in [-9, 18], nano precision as Kubernetes keeps),
 * plus the format it was written in (the suffix family), which decides canonical formatting:
 *   BinarySI       Ki Mi Gi Ti Pi Ei         "4096Mi" -> "4Gi", "1.5Gi" -> "1536Mi"
 *   DecimalSI      n u m "" k M G T P E      "1000m" -> "1", "0.5" -> "500m"
 *   DecimalExponent  "1e3" -> "1e3", "1.5e3" -> "1500", "1.5E-3" -> "1500e-6"
 * Parsing follows k8s.io/apimachinery/pkg/api/resource (quantity.go): sign, digits, optional
 * fraction, optional suffix; anything else is an error naming the input. Values whose magnitude
 * exceeds what int64 nanos-or-units can hold exactly are rejected with -ERANGE (never wrapped).
 * Precisely: |value| <= INT64_MAX units, rounded away from zero to 1n like Kubernetes, and the
 * normalised mantissa fits int64 (so 19 significant digits at most when there is a fraction).
 * Stricter than Kubernetes on purpose: a quantity needs at least one digit ("Gi", "." and "-"
 * are refused, Kubernetes reads them as 0), and more than 96 significant digits are refused.
 */
#ifndef GS_COMMON_QUANTITY_H
#define GS_COMMON_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

enum gs_quantity_format {
    GS_QUANTITY_DECIMAL_SI = 0,
    GS_QUANTITY_BINARY_SI = 1,
    GS_QUANTITY_DECIMAL_EXPONENT = 2,
};

struct gs_quantity {
    int64_t mant;  /* signed mantissa */
    int32_t exp10; /* power of ten, normalised so that mant has no factor of 10 unless mant==0 */
    enum gs_quantity_format format;
};

/* Longest canonical string: sign + 19 digits + fraction + suffix + NUL. */
#define GS_QUANTITY_STR_MAX 64

/* Parse a Kubernetes quantity string. `err` names the input on failure. */
int gs_quantity_parse(const char *s, struct gs_quantity *out, struct gs_error *err);
/* Canonical string, exactly as Kubernetes' Quantity.String(). Returns 0, or -ENOSPC. */
int gs_quantity_format(const struct gs_quantity *q, char *buf, size_t len);

/* gs_quantity_format into a GS_QUANTITY_STR_MAX buffer; returns buf ("(invalid)" for a struct
 * that breaks the invariants). Handy in messages: gs_quantity_str(&q,
 * (char[GS_QUANTITY_STR_MAX]){0}). */
const char *gs_quantity_str(const struct gs_quantity *q, char buf[GS_QUANTITY_STR_MAX]);

/* Construct from an integer number of units in the given format (e.g. bytes, BinarySI).
 * INT64_MIN, outside the symmetric range, becomes -INT64_MAX. */
void gs_quantity_from_int64(int64_t v, enum gs_quantity_format fmt, struct gs_quantity *out);
/* Construct from v * 10^-3 (milli-units). */
void gs_quantity_from_milli(int64_t milli, enum gs_quantity_format fmt, struct gs_quantity *out);

/* -1, 0, 1. Exact for all representable values. */
int gs_quantity_cmp(const struct gs_quantity *a, const struct gs_quantity *b);
bool gs_quantity_is_zero(const struct gs_quantity *q);
int gs_quantity_sign(const struct gs_quantity *q);

/* Exact arithmetic; -ERANGE on overflow. Result keeps a's format (as Kubernetes' Add does). */
int gs_quantity_add(const struct gs_quantity *a, const struct gs_quantity *b,
                    struct gs_quantity *out);
int gs_quantity_sub(const struct gs_quantity *a, const struct gs_quantity *b,
                    struct gs_quantity *out);

/* Integer value rounded up (Kubernetes Value()); -ERANGE if it does not fit. */
int gs_quantity_value(const struct gs_quantity *q, int64_t *out);
/* Milli-value rounded up (Kubernetes MilliValue()); -ERANGE if it does not fit. */
int gs_quantity_milli_value(const struct gs_quantity *q, int64_t *out);
/* Exact integer: -EDOM if the value has a fractional part, -ERANGE if too large. */
int gs_quantity_to_int64_exact(const struct gs_quantity *q, int64_t *out);
bool gs_quantity_is_integer(const struct gs_quantity *q);

/* Convenience: parse `s` and return its exact integer value (e.g. bytes). */
int gs_quantity_parse_int64(const char *s, int64_t *out, struct gs_error *err);

#endif /* GS_COMMON_QUANTITY_H */
