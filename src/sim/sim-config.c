/* SPDX-License-Identifier: Apache-2.0 */
/* gpusim device model: presets and the JSON/YAML config file. */
#include "sim/sim-config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "base/macros.h"
#include "abi/nvml_abi.h"
#include "config/quantity.h"

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)

const char *const sim_preset_names[] = {"t4", "t4x2", "h200", "h200x2", "a100x8", NULL};

uint64_t sim_fnv1a(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void sim_pci_bus_id(const struct sim_device_cfg *d, char *buf, size_t len)
{
    snprintf(buf, len, "%08X:%02X:%02X.0", d->pci_domain, d->pci_bus, d->pci_device);
}

/* ------------------------------------------------------------------ architectures */
struct arch_info {
    const char *name;
    unsigned int nvml;
    int cc_major, cc_minor;
    int sm_count, threads_per_sm, smem_per_sm, smem_optin, blocks_per_sm, l2;
};

static const struct arch_info arches[] = {
    {"volta", NVML_DEVICE_ARCH_VOLTA, 7, 0, 80, 2048, 98304, 98304, 32, 6 << 20},
    {"turing", NVML_DEVICE_ARCH_TURING, 7, 5, 40, 1024, 65536, 65536, 16, 4 << 20},
    {"ampere", NVML_DEVICE_ARCH_AMPERE, 8, 0, 108, 2048, 167936, 166912, 32, 40 << 20},
    {"ada", NVML_DEVICE_ARCH_ADA, 8, 9, 128, 1536, 102400, 101376, 24, 72 << 20},
    {"hopper", NVML_DEVICE_ARCH_HOPPER, 9, 0, 132, 2048, 233472, 232448, 32, 50 << 20},
    {"blackwell", NVML_DEVICE_ARCH_BLACKWELL, 10, 0, 148, 2048, 233472, 232448, 32, 126 << 20},
};

static const struct arch_info *arch_by_name(const char *name)
{
    for (size_t i = 0; i < GS_ARRAY_SIZE(arches); i++)
        if (strcasecmp(arches[i].name, name) == 0)
            return &arches[i];
    return NULL;
}

static const struct arch_info *arch_by_cc(int major, int minor)
{
    if (major == 7)
        return minor >= 5 ? &arches[1] : &arches[0];
    if (major == 8)
        return minor == 9 ? &arches[3] : &arches[2];
    if (major == 9)
        return &arches[4];
    if (major >= 10)
        return &arches[5];
    return NULL;
}

static const struct {
    const char *name;
    int value;
} brands[] = {
    {"unknown", NVML_BRAND_UNKNOWN},
    {"quadro", NVML_BRAND_QUADRO},
    {"tesla", NVML_BRAND_TESLA},
    {"nvs", NVML_BRAND_NVS},
    {"grid", NVML_BRAND_GRID},
    {"geforce", NVML_BRAND_GEFORCE},
    {"titan", NVML_BRAND_TITAN},
    {"nvidia", NVML_BRAND_NVIDIA},
    {"quadro_rtx", NVML_BRAND_QUADRO_RTX},
    {"nvidia_rtx", NVML_BRAND_NVIDIA_RTX},
    {"geforce_rtx", NVML_BRAND_GEFORCE_RTX},
};

/* ------------------------------------------------------------------ defaults */
static void device_defaults(struct sim_device_cfg *d, int index, const struct arch_info *a)
{
    memset(d, 0, sizeof(*d));
    d->pci_domain = 0;
    d->pci_bus = 0x0A + (unsigned int)index * 0x0F;
    d->pci_device = 0;
    d->pci_device_id = 0x1EB8;
    d->pci_subsystem_id = 0x12A210DE;
    d->minor = (unsigned int)index;
    d->numa_node = 0;
    d->pcie_switch = index;
    d->arch = a->nvml;
    d->cc_major = a->cc_major;
    d->cc_minor = a->cc_minor;
    d->sm_count = a->sm_count;
    d->max_threads_per_sm = a->threads_per_sm;
    d->smem_per_sm = a->smem_per_sm;
    d->smem_per_block_optin = a->smem_optin;
    d->max_blocks_per_sm = a->blocks_per_sm;
    d->l2_bytes = a->l2;
    d->brand = NVML_BRAND_NVIDIA;
    d->clock_khz = 1500000;
    d->mem_clock_khz = 1500000;
    d->bus_width = 256;
    d->pcie_gbps = 12;
    d->mem_gbps = 900;
    for (int l = 0; l < SIM_MAX_LINKS; l++)
        d->link_peer[l] = -1;
}

/* splitmix64 finaliser: nearby inputs give unrelated outputs. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void derive_uuid(struct sim_device_cfg *d, uint64_t seed, int index)
{
    char s[64];
    int n = snprintf(s, sizeof(s), "gpusim-device-%d", index);
    uint64_t h1 = mix64(sim_fnv1a(s, (size_t)n, seed));
    uint64_t h2 = mix64(h1 ^ 0x9e3779b97f4a7c15ull);
    snprintf(d->uuid, sizeof(d->uuid), "GPU-%08x-%04x-%04x-%04x-%012" PRIx64,
             (unsigned int)(h1 >> 32), (unsigned int)((h1 >> 16) & 0xffff),
             (unsigned int)((h1 & 0x0fff) | 0x4000), (unsigned int)((h2 >> 48 & 0x3fff) | 0x8000),
             (uint64_t)(h2 & 0xffffffffffffull));
}

static void config_defaults(struct sim_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->driver_version, sizeof(cfg->driver_version), "570.124.06");
    cfg->cuda_version = 12080;
}

int sim_config_preset(const char *name, struct sim_config *cfg, struct gs_error *err)
{
    config_defaults(cfg);
    const struct arch_info *a;
    int n;
    if (strcmp(name, "t4") == 0 || strcmp(name, "t4x2") == 0) {
        a = arch_by_name("turing");
        n = strcmp(name, "t4") == 0 ? 1 : 2;
        for (int i = 0; i < n; i++) {
            struct sim_device_cfg *d = &cfg->dev[i];
            device_defaults(d, i, a);
            snprintf(d->name, sizeof(d->name), "Tesla T4");
            d->total_mem = 15 * GIB;
            d->brand = NVML_BRAND_TESLA;
            d->pci_device_id = 0x1EB8;
            d->pci_subsystem_id = 0x12A210DE;
            d->pci_bus = 0x00;
            d->pci_device = 0x04 + (unsigned int)i;
            d->numa_node = i;
            d->clock_khz = 1590000;
            d->mem_clock_khz = 5001000;
            d->bus_width = 256;
            d->pcie_gbps = 12;
            d->mem_gbps = 320;
        }
    } else if (strcmp(name, "h200") == 0 || strcmp(name, "h200x2") == 0) {
        a = arch_by_name("hopper");
        n = strcmp(name, "h200") == 0 ? 1 : 2;
        static const unsigned int bus[] = {0x18, 0x2A};
        for (int i = 0; i < n; i++) {
            struct sim_device_cfg *d = &cfg->dev[i];
            device_defaults(d, i, a);
            snprintf(d->name, sizeof(d->name), "NVIDIA H200");
            d->total_mem = 143771 * MIB;
            d->pci_device_id = 0x2335;
            d->pci_subsystem_id = 0x18BE10DE;
            d->pci_bus = bus[i];
            d->clock_khz = 1980000;
            d->mem_clock_khz = 3201000;
            d->bus_width = 6144;
            d->pcie_gbps = 50;
            d->mem_gbps = 4800;
            if (n == 2) {
                d->nlinks = SIM_MAX_LINKS;
                for (int l = 0; l < SIM_MAX_LINKS; l++)
                    d->link_peer[l] = 1 - i;
            }
        }
    } else if (strcmp(name, "a100x8") == 0) {
        a = arch_by_name("ampere");
        n = 8;
        static const unsigned int bus[] = {0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD};
        for (int i = 0; i < n; i++) {
            struct sim_device_cfg *d = &cfg->dev[i];
            device_defaults(d, i, a);
            snprintf(d->name, sizeof(d->name), "NVIDIA A100-SXM4-80GB");
            d->total_mem = 81920 * MIB;
            d->pci_device_id = 0x20B2;
            d->pci_subsystem_id = 0x147F10DE;
            d->pci_bus = bus[i];
            d->numa_node = i / 4;
            d->pcie_switch = i / 2;
            d->clock_khz = 1410000;
            d->mem_clock_khz = 1593000;
            d->bus_width = 5120;
            d->pcie_gbps = 25;
            d->mem_gbps = 2039;
            /* 12 links, spread round-robin over the 7 peers (a full mesh). */
            d->nlinks = 12;
            for (int l = 0; l < 12; l++) {
                int k = l % 7;
                d->link_peer[l] = (i + 1 + k) % 8;
            }
        }
    } else {
        char list[128] = "";
        for (int i = 0; sim_preset_names[i]; i++) {
            strncat(list, i ? ", " : "", sizeof(list) - strlen(list) - 1);
            strncat(list, sim_preset_names[i], sizeof(list) - strlen(list) - 1);
        }
        return gs_error_set(err, -EINVAL, "GPUSIM_PRESET: unknown preset \"%.64s\" (known: %s)",
                            name, list);
    }
    cfg->ndev = n;
    snprintf(cfg->origin, sizeof(cfg->origin), "preset %s", name);
    snprintf(cfg->key, sizeof(cfg->key), "%s", name);
    char id[80];
    int idn = snprintf(id, sizeof(id), "preset:%s", name);
    cfg->hash = sim_fnv1a(id, (size_t)idn, 0);
    for (int i = 0; i < n; i++)
        derive_uuid(&cfg->dev[i], cfg->hash, i);
    return 0;
}

/* ------------------------------------------------------------------ YAML -> JSON tree */
struct yaml_ctx {
    yaml_parser_t parser;
    int depth;
};

static json_t *yaml_scalar(const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, len);
    if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
        strcmp(v, "NULL") == 0)
        return json_null();
    if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "TRUE") == 0)
        return json_true();
    if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0)
        return json_false();
    char *end;
    errno = 0;
    if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        unsigned long long x = strtoull(v + 2, &end, 16);
        if (*end == '\0' && errno == 0 && x <= (unsigned long long)INT64_MAX)
            return json_integer((json_int_t)x);
        return json_stringn(v, len);
    }
    long long i = strtoll(v, &end, 10);
    if (*end == '\0' && errno == 0 && end != v &&
        (isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '+'))
        return json_integer(i);
    errno = 0;
    double d = strtod(v, &end);
    if (*end == '\0' && errno == 0 && end != v && isfinite(d) &&
        (isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '+' || v[0] == '.'))
        return json_real(d);
    return json_stringn(v, len);
}

static int yaml_node(struct yaml_ctx *y, yaml_event_t *first, json_t **out, struct gs_error *err);

static int yaml_next(struct yaml_ctx *y, yaml_event_t *ev, struct gs_error *err)
{
    if (!yaml_parser_parse(&y->parser, ev))
        return gs_error_set(err, -EINVAL, "line %zu, column %zu: %s",
                            y->parser.problem_mark.line + 1, y->parser.problem_mark.column + 1,
                            y->parser.problem ? y->parser.problem : "invalid YAML");
    return 0;
}

static int yaml_node(struct yaml_ctx *y, yaml_event_t *ev, json_t **out, struct gs_error *err)
{
    int r;
    *out = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        *out = yaml_scalar(ev);
        return *out ? 0 : gs_error_set(err, -ENOMEM, "out of memory");
    case YAML_ALIAS_EVENT:
        return gs_error_set(err, -EINVAL, "line %zu: YAML aliases are not supported",
                            ev->start_mark.line + 1);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool map = ev->type == YAML_MAPPING_START_EVENT;
        if (++y->depth > 64)
            return gs_error_set(err, -EINVAL, "line %zu: nesting deeper than 64 levels",
                                ev->start_mark.line + 1);
        json_t *c = map ? json_object() : json_array();
        if (!c)
            return gs_error_set(err, -ENOMEM, "out of memory");
        for (;;) {
            yaml_event_t k;
            if ((r = yaml_next(y, &k, err)) < 0) {
                json_decref(c);
                return r;
            }
            if (k.type == YAML_SEQUENCE_END_EVENT || k.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&k);
                break;
            }
            if (map) {
                if (k.type != YAML_SCALAR_EVENT) {
                    size_t line = k.start_mark.line + 1;
                    yaml_event_delete(&k);
                    json_decref(c);
                    return gs_error_set(err, -EINVAL, "line %zu: mapping keys must be scalars",
                                        line);
                }
                char key[256];
                snprintf(key, sizeof(key), "%.*s", (int)GS_MIN(k.data.scalar.length, 255),
                         (const char *)k.data.scalar.value);
                size_t line = k.start_mark.line + 1;
                yaml_event_delete(&k);
                if (json_object_get(c, key)) {
                    json_decref(c);
                    return gs_error_set(err, -EINVAL, "line %zu: duplicate key \"%s\"", line, key);
                }
                yaml_event_t v;
                if ((r = yaml_next(y, &v, err)) < 0) {
                    json_decref(c);
                    return r;
                }
                json_t *val;
                r = yaml_node(y, &v, &val, err);
                yaml_event_delete(&v);
                if (r < 0) {
                    json_decref(c);
                    return r;
                }
                json_object_set_new(c, key, val);
            } else {
                json_t *val;
                r = yaml_node(y, &k, &val, err);
                yaml_event_delete(&k);
                if (r < 0) {
                    json_decref(c);
                    return r;
                }
                json_array_append_new(c, val);
            }
        }
        y->depth--;
        *out = c;
        return 0;
    }
    default:
        return gs_error_set(err, -EINVAL, "line %zu: unexpected YAML event",
                            ev->start_mark.line + 1);
    }
}

static json_t *yaml_to_json(const char *text, size_t len, struct gs_error *err)
{
    struct yaml_ctx y = {.depth = 0};
    if (!yaml_parser_initialize(&y.parser)) {
        gs_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)text, len);
    json_t *root = NULL;
    int r = 0;
    bool in_doc = false;
    for (;;) {
        yaml_event_t ev;
        if ((r = yaml_next(&y, &ev, err)) < 0)
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            if (root) {
                yaml_event_delete(&ev);
                r = gs_error_set(err, -EINVAL, "more than one YAML document");
                break;
            }
            in_doc = true;
        } else if (t == YAML_DOCUMENT_END_EVENT) {
            in_doc = false;
        } else if (in_doc && t != YAML_STREAM_START_EVENT) {
            r = yaml_node(&y, &ev, &root, err);
            if (r < 0) {
                yaml_event_delete(&ev);
                break;
            }
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&y.parser);
    if (r < 0) {
        json_decref(root);
        return NULL;
    }
    if (!root)
        root = json_object(); /* empty document */
    return root;
}

/* ------------------------------------------------------------------ field parsers */
static int get_int(const json_t *v, const char *path, long long lo, long long hi, long long *out,
                   struct gs_error *err)
{
    long long x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        errno = 0;
        x = strtoll(s, &end, 0);
        if (errno || end == s || *end)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not an integer", path, s);
    } else {
        return gs_error_set(err, -EINVAL, "%s: expected an integer", path);
    }
    if (x < lo || x > hi)
        return gs_error_set(err, -ERANGE, "%s: %lld is outside [%lld, %lld]", path, x, lo, hi);
    *out = x;
    return 0;
}

static int get_bytes(const json_t *v, const char *path, bool allow_zero, uint64_t *out,
                     struct gs_error *err)
{
    int64_t b;
    if (json_is_integer(v)) {
        b = json_integer_value(v);
    } else if (json_is_string(v)) {
        char s[64];
        const char *in = json_string_value(v);
        size_t n = strlen(in);
        if (n == 0 || n >= sizeof(s))
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not a quantity of bytes", path, in);
        memcpy(s, in, n + 1);
        /* Accept nvidia-smi style "15360MiB" as well as Kubernetes "15Gi". */
        if (n >= 3 && s[n - 1] == 'B' && s[n - 2] == 'i')
            s[n - 1] = '\0';
        struct gs_error qerr = {0};
        if (gs_quantity_parse_int64(s, &b, &qerr) < 0)
            return gs_error_set(err, -EINVAL, "%s: \"%.64s\" is not a quantity of bytes (%s)", path,
                                in, qerr.msg);
    } else {
        return gs_error_set(err, -EINVAL, "%s: expected bytes (integer or quantity string)", path);
    }
    if (b < 0 || (!allow_zero && b == 0))
        return gs_error_set(err, -ERANGE, "%s: %" PRId64 " bytes is not a valid size", path, b);
    *out = (uint64_t)b;
    return 0;
}

static int get_string(const json_t *v, const char *path, char *buf, size_t len,
                      struct gs_error *err)
{
    if (!json_is_string(v))
        return gs_error_set(err, -EINVAL, "%s: expected a string", path);
    const char *s = json_string_value(v);
    if (strlen(s) >= len)
        return gs_error_set(err, -ERANGE, "%s: \"%.40s...\" is longer than %zu characters", path, s,
                            len - 1);
    if (s[0] == '\0')
        return gs_error_set(err, -EINVAL, "%s: must not be empty", path);
    memcpy(buf, s, strlen(s) + 1);
    return 0;
}

static bool uuid_valid(const char *u)
{
    /* GPU-8-4-4-4-12 hex */
    static const int groups[] = {8, 4, 4, 4, 12};
    if (strncmp(u, "GPU-", 4) != 0)
        return false;
    const char *p = u + 4;
    for (size_t g = 0; g < GS_ARRAY_SIZE(groups); g++) {
        for (int i = 0; i < groups[g]; i++, p++)
            if (!isxdigit((unsigned char)*p))
                return false;
        if (g + 1 < GS_ARRAY_SIZE(groups) && *p++ != '-')
            return false;
    }
    return *p == '\0';
}

static int hex_field(const char **p, char end, unsigned long max, unsigned int *out)
{
    char *e;
    if (!isxdigit((unsigned char)**p))
        return -EINVAL;
    errno = 0;
    unsigned long v = strtoul(*p, &e, 16);
    if (errno || e == *p || *e != end)
        return -EINVAL;
    if (v > max)
        return -ERANGE;
    *out = (unsigned int)v;
    *p = *e ? e + 1 : e;
    return 0;
}

int sim_parse_pci_bus_id(const char *s, unsigned int *domain, unsigned int *bus,
                         unsigned int *device)
{
    unsigned int fn = 0;
    const char *p = s;
    int r;
    if ((r = hex_field(&p, ':', 0xffffffffUL, domain)) < 0 ||
        (r = hex_field(&p, ':', 0xff, bus)) < 0)
        return r;
    bool has_fn = strchr(p, '.') != NULL;
    if ((r = hex_field(&p, has_fn ? '.' : '\0', 0x1f, device)) < 0)
        return r;
    if (has_fn && (r = hex_field(&p, '\0', 7, &fn)) < 0)
        return r;
    return 0;
}

static int parse_pci_bus_id(const char *s, struct sim_device_cfg *d)
{
    return sim_parse_pci_bus_id(s, &d->pci_domain, &d->pci_bus, &d->pci_device);
}

static int parse_cc(const json_t *v, const char *path, int *major, int *minor, struct gs_error *err)
{
    int ma, mi;
    if (json_is_string(v)) {
        const char *str = json_string_value(v);
        char *e1, *e2;
        errno = 0;
        long a = strtol(str, &e1, 10);
        long b = (e1 != str && *e1 == '.' && isdigit((unsigned char)e1[1]))
                     ? strtol(e1 + 1, &e2, 10)
                     : (e2 = e1, -1);
        if (errno || b < 0 || *e2 != '\0' || a < 0 || a > 99 || b > 99)
            return gs_error_set(err, -EINVAL, "%s: \"%.32s\" is not MAJOR.MINOR", path, str);
        ma = (int)a;
        mi = (int)b;
    } else if (json_is_real(v) || json_is_integer(v)) {
        double d = json_number_value(v);
        ma = (int)d;
        mi = (int)lround((d - ma) * 10.0);
    } else {
        return gs_error_set(err, -EINVAL, "%s: expected \"MAJOR.MINOR\"", path);
    }
    if (ma < 3 || ma > 20 || mi < 0 || mi > 9)
        return gs_error_set(err, -ERANGE, "%s: compute capability %d.%d is not supported", path, ma,
                            mi);
    *major = ma;
    *minor = mi;
    return 0;
}

static int parse_device(const json_t *o, int index, int ndev, struct sim_device_cfg *d,
                        struct gs_error *err)
{
    char path[96];
    char base[32];
    snprintf(base, sizeof(base), "devices[%d]", index);
    if (!json_is_object(o))
        return gs_error_set(err, -EINVAL, "%s: expected an object", base);

    const json_t *jn = json_object_get(o, "name"), *jm = json_object_get(o, "memory");
    if (!jn)
        return gs_error_set(err, -EINVAL, "%s.name: missing", base);
    if (!jm)
        return gs_error_set(err, -EINVAL, "%s.memory: missing", base);

    /* The architecture decides the defaults: explicit, else from the compute capability. */
    int ma = 7, mi = 5, r;
    const json_t *jcc = json_object_get(o, "compute_capability");
    const json_t *ja = json_object_get(o, "architecture");
    const struct arch_info *a = NULL;
    if (jcc) {
        snprintf(path, sizeof(path), "%s.compute_capability", base);
        if ((r = parse_cc(jcc, path, &ma, &mi, err)) < 0)
            return r;
    }
    if (ja) {
        if (!json_is_string(ja) || !(a = arch_by_name(json_string_value(ja))))
            return gs_error_set(err, -EINVAL,
                                "%s.architecture: \"%.32s\" is not one of volta, turing, ampere, "
                                "ada, hopper, blackwell",
                                base,
                                json_is_string(ja) ? json_string_value(ja) : "(not a string)");
    } else if (!(a = arch_by_cc(ma, mi))) {
        return gs_error_set(err, -EINVAL, "%s.compute_capability: %d.%d has no known architecture",
                            base, ma, mi);
    }
    device_defaults(d, index, a);
    if (jcc) {
        d->cc_major = ma;
        d->cc_minor = mi;
    }

    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        snprintf(path, sizeof(path), "%s.%.40s", base, key);
        long long x;
        r = 0;
        if (strcmp(key, "name") == 0) {
            r = get_string(v, path, d->name, sizeof(d->name), err);
        } else if (strcmp(key, "memory") == 0) {
            r = get_bytes(v, path, false, &d->total_mem, err);
        } else if (strcmp(key, "compute_capability") == 0 || strcmp(key, "architecture") == 0) {
            /* handled above */
        } else if (strcmp(key, "sm_count") == 0) {
            if ((r = get_int(v, path, 1, 1024, &x, err)) == 0)
                d->sm_count = (int)x;
        } else if (strcmp(key, "max_threads_per_sm") == 0) {
            if ((r = get_int(v, path, 32, 4096, &x, err)) == 0)
                d->max_threads_per_sm = (int)x;
        } else if (strcmp(key, "brand") == 0) {
            size_t b;
            for (b = 0; b < GS_ARRAY_SIZE(brands); b++)
                if (json_is_string(v) && strcasecmp(json_string_value(v), brands[b].name) == 0)
                    break;
            if (b == GS_ARRAY_SIZE(brands))
                r = gs_error_set(err, -EINVAL,
                                 "%s: \"%.32s\" is not a known brand (tesla, nvidia, "
                                 "geforce, quadro, ...)",
                                 path, json_is_string(v) ? json_string_value(v) : "(not a string)");
            else
                d->brand = brands[b].value;
        } else if (strcmp(key, "uuid") == 0) {
            if ((r = get_string(v, path, d->uuid, sizeof(d->uuid), err)) == 0 &&
                !uuid_valid(d->uuid))
                r = gs_error_set(err, -EINVAL,
                                 "%s: \"%s\" is not GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", path,
                                 d->uuid);
        } else if (strcmp(key, "pci_bus_id") == 0) {
            char s[40];
            if ((r = get_string(v, path, s, sizeof(s), err)) == 0 && parse_pci_bus_id(s, d) < 0)
                r = gs_error_set(err, -EINVAL, "%s: \"%s\" is not DOMAIN:BUS:DEVICE.FUNCTION (hex)",
                                 path, s);
        } else if (strcmp(key, "pci_device_id") == 0) {
            if ((r = get_int(v, path, 0, 0xffff, &x, err)) == 0)
                d->pci_device_id = (unsigned int)x;
        } else if (strcmp(key, "minor") == 0) {
            if ((r = get_int(v, path, 0, 255, &x, err)) == 0)
                d->minor = (unsigned int)x;
        } else if (strcmp(key, "numa_node") == 0) {
            if ((r = get_int(v, path, -1, 1023, &x, err)) == 0)
                d->numa_node = (int)x;
        } else if (strcmp(key, "pcie_bandwidth_gbps") == 0) {
            if ((r = get_int(v, path, 1, 10000, &x, err)) == 0)
                d->pcie_gbps = (int)x;
        } else if (strcmp(key, "memory_bandwidth_gbps") == 0) {
            if ((r = get_int(v, path, 1, 100000, &x, err)) == 0)
                d->mem_gbps = (int)x;
        } else if (strcmp(key, "pcie_switch") == 0) {
            if ((r = get_int(v, path, 0, 1 << 20, &x, err)) == 0)
                d->pcie_switch = (int)x;
        } else if (strcmp(key, "nvlink") == 0) {
            if (!json_is_array(v)) {
                r = gs_error_set(err, -EINVAL, "%s: expected a list of peer device indexes", path);
            } else if (json_array_size(v) > SIM_MAX_LINKS) {
                r = gs_error_set(err, -ERANGE, "%s: %zu links, at most %d", path,
                                 json_array_size(v), SIM_MAX_LINKS);
            } else {
                size_t l;
                json_t *p;
                json_array_foreach(v, l, p)
                {
                    char lp[112];
                    snprintf(lp, sizeof(lp), "%s[%zu]", path, l);
                    if ((r = get_int(p, lp, -1, ndev - 1, &x, err)) < 0)
                        break;
                    if (x == index) {
                        r = gs_error_set(err, -EINVAL, "%s: a device cannot link to itself", lp);
                        break;
                    }
                    d->link_peer[l] = (int)x;
                }
                d->nlinks = (int)json_array_size(v);
            }
        } else {
            r = gs_error_set(err, -EINVAL, "%s: unknown field", path);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

static int config_from_json(json_t *root, const char *origin, struct sim_config *cfg,
                            struct gs_error *err)
{
    int r;
    if (!json_is_object(root))
        return gs_error_set(err, -EINVAL, "top level: expected an object");
    const json_t *jp = json_object_get(root, "preset");
    const json_t *jd = json_object_get(root, "devices");
    if (jp) {
        if (!json_is_string(jp))
            return gs_error_set(err, -EINVAL, "preset: expected a string");
        if ((r = sim_config_preset(json_string_value(jp), cfg, err)) < 0)
            return r;
    } else {
        config_defaults(cfg);
        if (!jd)
            return gs_error_set(err, -EINVAL, "devices: missing (or give a preset)");
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        long long x;
        if (strcmp(key, "preset") == 0 || strcmp(key, "devices") == 0) {
            continue;
        } else if (strcmp(key, "driver_version") == 0) {
            r = get_string(v, "driver_version", cfg->driver_version, sizeof(cfg->driver_version),
                           err);
        } else if (strcmp(key, "cuda_version") == 0) {
            if ((r = get_int(v, "cuda_version", 9000, 99990, &x, err)) == 0)
                cfg->cuda_version = (int)x;
        } else if (strcmp(key, "context_overhead") == 0) {
            r = get_bytes(v, "context_overhead", true, &cfg->ctx_overhead, err);
        } else {
            r = gs_error_set(err, -EINVAL, "%.64s: unknown field", key);
        }
        if (r < 0)
            return r;
    }
    if (jd) {
        if (!json_is_array(jd))
            return gs_error_set(err, -EINVAL, "devices: expected a list");
        size_t n = json_array_size(jd);
        if (n == 0 || n > SIM_MAX_DEVICES)
            return gs_error_set(err, -ERANGE, "devices: %zu devices, expected 1 to %d", n,
                                SIM_MAX_DEVICES);
        cfg->ndev = (int)n;
        for (size_t i = 0; i < n; i++)
            if ((r = parse_device(json_array_get(jd, i), (int)i, (int)n, &cfg->dev[i], err)) < 0)
                return r;
    }

    /* Identity of the model: the canonical document. */
    char *dump = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
    if (!dump)
        return gs_error_set(err, -ENOMEM, "out of memory");
    cfg->hash = sim_fnv1a(dump, strlen(dump), 0x5eed);
    free(dump);
    snprintf(cfg->origin, sizeof(cfg->origin), "config %.55s", origin);
    snprintf(cfg->key, sizeof(cfg->key), "cfg-%016" PRIx64, cfg->hash);

    /* UUIDs that were not given derive from the model's identity (preset devices keep the
     * preset's); then cross-checks. */
    for (int i = 0; i < cfg->ndev; i++)
        if (cfg->dev[i].uuid[0] == '\0')
            derive_uuid(&cfg->dev[i], cfg->hash, i);
    for (int i = 0; i < cfg->ndev; i++) {
        for (int j = 0; j < i; j++) {
            if (strcasecmp(cfg->dev[i].uuid, cfg->dev[j].uuid) == 0)
                return gs_error_set(err, -EINVAL, "devices[%d].uuid: \"%s\" is also devices[%d]'s",
                                    i, cfg->dev[i].uuid, j);
            if (cfg->dev[i].minor == cfg->dev[j].minor)
                return gs_error_set(err, -EINVAL, "devices[%d].minor: %u is also devices[%d]'s", i,
                                    cfg->dev[i].minor, j);
            if (cfg->dev[i].pci_domain == cfg->dev[j].pci_domain &&
                cfg->dev[i].pci_bus == cfg->dev[j].pci_bus &&
                cfg->dev[i].pci_device == cfg->dev[j].pci_device) {
                char b[32];
                sim_pci_bus_id(&cfg->dev[i], b, sizeof(b));
                return gs_error_set(
                    err, -EINVAL, "devices[%d].pci_bus_id: \"%s\" is also devices[%d]'s", i, b, j);
            }
        }
    }
    return 0;
}

int sim_config_parse(const char *text, size_t len, const char *origin, struct sim_config *cfg,
                     struct gs_error *err)
{
    if (len > SIM_CONFIG_FILE_MAX)
        return gs_error_set(err, -E2BIG, "%s: %zu bytes, at most %d", origin, len,
                            SIM_CONFIG_FILE_MAX);
    if (memchr(text, '\0', len))
        return gs_error_set(err, -EINVAL, "%s: contains a NUL byte", origin);
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    json_t *root;
    if (i < len && text[i] == '{') {
        json_error_t je;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
            return gs_error_set(err, -EINVAL, "%s: line %d, column %d: %s", origin, je.line,
                                je.column, je.text);
    } else {
        root = yaml_to_json(text, len, err);
        if (!root)
            return gs_error_prefix(err, "%s: ", origin);
    }
    int r = config_from_json(root, origin, cfg, err);
    json_decref(root);
    if (r < 0)
        return gs_error_prefix(err, "%s: ", origin), r;
    return 0;
}

int sim_config_load_file(const char *path, struct sim_config *cfg, struct gs_error *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, -errno, "GPUSIM_CONFIG=%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return gs_error_set(err, -errno, "GPUSIM_CONFIG=%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return gs_error_set(err, -EINVAL, "GPUSIM_CONFIG=%s: not a regular file", path);
    if (sb.st_size > SIM_CONFIG_FILE_MAX)
        return gs_error_set(err, -E2BIG, "GPUSIM_CONFIG=%s: %lld bytes, at most %d", path,
                            (long long)sb.st_size, SIM_CONFIG_FILE_MAX);
    _cleanup_free_ char *buf = malloc((size_t)sb.st_size + 1);
    if (!buf)
        return gs_error_set(err, -ENOMEM, "out of memory");
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return gs_error_set(err, -errno, "GPUSIM_CONFIG=%s: %s", path, strerror(errno));
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    const char *slash = strrchr(path, '/');
    /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): buf is _cleanup_ (layers.md Lint) */
    return sim_config_parse(buf, got, slash ? slash + 1 : path, cfg, err);
}

int sim_config_from_env(struct sim_config *cfg, struct gs_error *err)
{
    const char *path = getenv("GPUSIM_CONFIG");
    const char *preset = getenv("GPUSIM_PRESET");
    int r;
    if (path && *path)
        r = sim_config_load_file(path, cfg, err);
    else
        r = sim_config_preset(preset && *preset ? preset : SIM_DEFAULT_PRESET, cfg, err);
    if (r < 0)
        return r;
    const char *cv = getenv("GPUSIM_CUDA_VERSION");
    if (cv && *cv) {
        /* "13.0" / "12.8" or the API number "13000"; a 13.x driver is branch 580 */
        char *end = NULL;
        unsigned long major = strtoul(cv, &end, 10), minor = 0;
        bool okv = end != cv && major >= 9;
        if (okv && *end == '.') {
            const char *m = end + 1;
            minor = strtoul(m, &end, 10);
            okv = end == m + 1 && *end == '\0' && major <= 99;
            major = major * 1000 + minor * 10;
        } else {
            okv = okv && *end == '\0' && major >= 9000 && major <= 99990;
        }
        if (!okv)
            return gs_error_set(err, -EINVAL,
                                "GPUSIM_CUDA_VERSION: \"%.32s\" is not a CUDA version "
                                "(e.g. 13.0 or 13000)",
                                cv);
        cfg->cuda_version = (int)major;
        if (cfg->cuda_version >= 13000 && strcmp(cfg->driver_version, "570.124.06") == 0)
            snprintf(cfg->driver_version, sizeof(cfg->driver_version), "580.65.06");
    }
    const char *ov = getenv("GPUSIM_CONTEXT_OVERHEAD");
    if (ov && *ov) {
        json_t *s = json_string(ov);
        if (!s)
            return gs_error_set(err, -EINVAL, "GPUSIM_CONTEXT_OVERHEAD: \"%.32s\" is not UTF-8",
                                ov);
        r = get_bytes(s, "GPUSIM_CONTEXT_OVERHEAD", true, &cfg->ctx_overhead, err);
        json_decref(s);
        if (r < 0)
            return r;
    }
    return 0;
}
