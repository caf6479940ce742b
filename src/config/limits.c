/* SPDX-License-Identifier: Apache-2.0 */
#include "config/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macros.h"

void gs_limits_init(struct gs_limits *l)
{
    memset(l, 0, sizeof(*l));
    l->version = GS_LIMITS_FORMAT_VERSION;
}

/* A token: printable ASCII without spaces, non-empty, shorter than max. */
static bool valid_token(const char *s, size_t max)
{
    size_t n = 0;
    if (!s || !*s)
        return false;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (c <= 0x20 || c >= 0x7f)
            return false;
    }
    return n < max;
}

static bool valid_path(const char *s)
{
    size_t n = 0;
    if (!s || s[0] != '/')
        return false;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return n < GS_LIMITS_PATH_MAX && s[n - 1] != ' ';
}

const struct gs_limits_device *gs_limits_find(const struct gs_limits *l, const char *uuid)
{
    for (size_t i = 0; i < l->n_devices && i < GS_LIMITS_MAX_DEVICES; i++)
        if (strcmp(l->devices[i].uuid, uuid) == 0)
            return &l->devices[i];
    return NULL;
}

int gs_limits_add_device(struct gs_limits *l, const char *uuid, uint64_t memory_limit,
                         uint32_t cores, struct gs_error *err)
{
    if (!valid_token(uuid, GS_LIMITS_UUID_MAX))
        return gs_error_set(err, -EINVAL, "device: uuid \"%.100s\" is not a GPU UUID token",
                            uuid ? uuid : "");
    if (cores > 100)
        return gs_error_set(err, -EINVAL, "device %s: cores=%u is not a percentage (0..100)", uuid,
                            cores);
    if (gs_limits_find(l, uuid))
        return gs_error_set(err, -EEXIST, "device %s: listed twice", uuid);
    if (l->n_devices >= GS_LIMITS_MAX_DEVICES)
        return gs_error_set(err, -ENOSPC, "device %s: more than %d devices", uuid,
                            GS_LIMITS_MAX_DEVICES);
    struct gs_limits_device *d = &l->devices[l->n_devices++];
    memset(d, 0, sizeof(*d));
    memcpy(d->uuid, uuid, strlen(uuid) + 1);
    d->memory_limit = memory_limit;
    d->cores = cores;
    return 0;
}

int gs_limits_validate(const struct gs_limits *l, struct gs_error *err)
{
    if (l->version != GS_LIMITS_FORMAT_VERSION)
        return gs_error_set(err, -EINVAL, "version: %u is not supported (want %d)", l->version,
                            GS_LIMITS_FORMAT_VERSION);
    if (!memchr(l->claim, '\0', sizeof(l->claim)) || !valid_token(l->claim, GS_LIMITS_CLAIM_MAX))
        return gs_error_set(err, -EINVAL, "claim: \"%.100s\" is not a single printable token",
                            memchr(l->claim, '\0', sizeof(l->claim)) ? l->claim : "(unterminated)");
    if (!memchr(l->region_path, '\0', sizeof(l->region_path)))
        return gs_error_set(err, -EINVAL, "region: path is not terminated");
    if (l->region_path[0] && !valid_path(l->region_path))
        return gs_error_set(err, -EINVAL, "region: \"%.100s\" is not an absolute path on one line",
                            l->region_path);
    if (l->n_devices > GS_LIMITS_MAX_DEVICES)
        return gs_error_set(err, -EINVAL, "devices: %zu is more than %d", l->n_devices,
                            GS_LIMITS_MAX_DEVICES);
    if (l->all_devices)
        return gs_error_set(err, -EINVAL,
                            "devices: a safe reading (all_devices) cannot be written");
    for (size_t i = 0; i < l->n_devices; i++) {
        const struct gs_limits_device *d = &l->devices[i];
        if (!memchr(d->uuid, '\0', sizeof(d->uuid)) || !valid_token(d->uuid, GS_LIMITS_UUID_MAX))
            return gs_error_set(err, -EINVAL, "device %zu: uuid is not a single printable token",
                                i);
        if (d->cores > 100)
            return gs_error_set(err, -EINVAL, "device %s: cores=%u is not a percentage (0..100)",
                                d->uuid, d->cores);
        for (size_t j = 0; j < i; j++)
            if (strcmp(l->devices[j].uuid, d->uuid) == 0)
                return gs_error_set(err, -EINVAL, "device %s: listed twice", d->uuid);
    }
    return 0;
}

int gs_limits_format(const struct gs_limits *l, char *buf, size_t len, struct gs_error *err)
{
    int r = gs_limits_validate(l, err);
    if (r < 0)
        return r;
    size_t pos = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int n_ = snprintf(buf + pos, pos < len ? len - pos : 0, __VA_ARGS__);                      \
        if (n_ < 0 || (size_t)n_ >= (pos < len ? len - pos : 0))                                   \
            return gs_error_set(err, -ENOSPC, "limits file: does not fit in %zu bytes", len);      \
        pos += (size_t)n_;                                                                         \
    } while (0)
    EMIT("%s\nversion %d\nclaim %s\n", GS_LIMITS_HEADER, GS_LIMITS_FORMAT_VERSION, l->claim);
    if (l->region_path[0])
        EMIT("region %s\n", l->region_path);
    for (size_t i = 0; i < l->n_devices; i++)
        EMIT("device %s memory=%llu cores=%u\n", l->devices[i].uuid,
             (unsigned long long)l->devices[i].memory_limit, l->devices[i].cores);
#undef EMIT
    return (int)pos;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int gs_limits_write(const char *path, const struct gs_limits *l, struct gs_error *err)
{
    char text[GS_LIMITS_FILE_MAX];
    int n = gs_limits_format(l, text, sizeof(text), err);
    if (n < 0)
        return gs_error_prefix(err, "%s: ", path), n;

    char tmp[GS_LIMITS_PATH_MAX + 32];
    char dir_buf[GS_LIMITS_PATH_MAX];
    char base_buf[GS_LIMITS_PATH_MAX];
    if (snprintf(dir_buf, sizeof(dir_buf), "%s", path) >= (int)sizeof(dir_buf))
        return gs_error_set(err, -ENAMETOOLONG, "%s: path too long", path);
    memcpy(base_buf, dir_buf, sizeof(base_buf));
    const char *dir = dirname(dir_buf);
    const char *base = basename(base_buf);
    if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, base) >= (int)sizeof(tmp))
        return gs_error_set(err, -ENAMETOOLONG, "%s: path too long", path);

    int fd = mkstemp(tmp);
    if (fd < 0)
        return gs_error_set(err, -errno, "%s: cannot create temporary file: %s", path,
                            gs_strerror(errno));
    int r = write_all(fd, text, (size_t)n);
    if (r == 0 && fchmod(fd, 0444) < 0)
        r = -errno;
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp);
        return gs_error_set(err, r, "%s: cannot write: %s", path, gs_strerror(r));
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* ---- parser ---- */

struct parser {
    struct gs_limits *out;
    struct gs_error *err;
    int first_error;
    bool seen_version, seen_claim, seen_region;
};

static int fail(struct parser *p, size_t lineno, int code, const char *fmt, ...) GS_PRINTF(4, 5);
static int fail(struct parser *p, size_t lineno, int code, const char *fmt, ...)
{
    if (p->first_error == 0) {
        char msg[GS_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (lineno)
            gs_error_set(p->err, code, "line %zu: %s", lineno, msg);
        else
            gs_error_set(p->err, code, "%s", msg);
        p->first_error = code;
    }
    return code;
}

/* Split the next whitespace-separated token; returns NULL at end of line. */
static char *next_token(char **cursor)
{
    char *s = *cursor;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s) {
        *cursor = s;
        return NULL;
    }
    char *start = s;
    while (*s && *s != ' ' && *s != '\t')
        s++;
    if (*s)
        *s++ = '\0';
    *cursor = s;
    return start;
}

static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return -ERANGE;
    }
    *out = v;
    return 0;
}

static void parse_device(struct parser *p, size_t lineno, char *rest)
{
    char *uuid = next_token(&rest);
    if (!uuid) {
        p->out->all_devices = true;
        fail(p, lineno, -EINVAL, "device: missing UUID");
        return;
    }
    if (strlen(uuid) >= GS_LIMITS_UUID_MAX) {
        p->out->all_devices = true;
        fail(p, lineno, -EINVAL, "device: uuid \"%.40s...\" is longer than %d bytes", uuid,
             GS_LIMITS_UUID_MAX - 1);
        return;
    }
    uint64_t memory = 0;
    uint64_t cores = 0;
    bool have_memory = false, have_cores = false, bad = false;
    char *tok;
    while ((tok = next_token(&rest))) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fail(p, lineno, -EINVAL, "device %s: \"%.60s\" is not key=value", uuid, tok);
            bad = true;
            continue;
        }
        *eq = '\0';
        const char *val = eq + 1;
        if (strcmp(tok, "memory") == 0 && !have_memory) {
            int r = parse_u64(val, &memory);
            if (r < 0) {
                fail(p, lineno, r, "device %s: memory=\"%.40s\" is not a byte count", uuid, val);
                bad = true;
            }
            have_memory = true;
        } else if (strcmp(tok, "cores") == 0 && !have_cores) {
            int r = parse_u64(val, &cores);
            if (r < 0 || cores > 100) {
                fail(p, lineno, -EINVAL, "device %s: cores=\"%.40s\" is not a percentage (0..100)",
                     uuid, val);
                bad = true;
                cores = 0;
            }
            have_cores = true;
        } else {
            fail(p, lineno, -EINVAL, "device %s: unknown or repeated key \"%.40s\"", uuid, tok);
            bad = true;
        }
    }
    if (!have_memory) {
        fail(p, lineno, -EINVAL, "device %s: memory= is missing", uuid);
        bad = true;
    }
    if (!have_cores) {
        fail(p, lineno, -EINVAL, "device %s: cores= is missing", uuid);
        bad = true;
    }
    struct gs_error add_err;
    int r = gs_limits_add_device(p->out, uuid, bad ? GS_LIMITS_MEMORY_REFUSE : memory,
                                 bad ? GS_LIMITS_CORES_REFUSE : (uint32_t)cores, &add_err);
    if (r < 0) {
        if (r == -ENOSPC || r == -EINVAL)
            p->out->all_devices = true;
        fail(p, lineno, r, "%s", add_err.msg);
    }
}

static void parse_line(struct parser *p, size_t lineno, char *line)
{
    char *rest = line;
    char *kw = next_token(&rest);
    if (!kw || kw[0] == '#')
        return;
    if (!p->seen_version && strcmp(kw, "version") != 0) {
        fail(p, lineno, -EINVAL, "\"%.40s\" before the version line", kw);
        /* keep going: a device line still names a device to restrict */
    }
    if (strcmp(kw, "version") == 0) {
        char *v = next_token(&rest);
        uint64_t ver = 0;
        if (p->seen_version)
            fail(p, lineno, -EINVAL, "version: given twice");
        else if (!v || parse_u64(v, &ver) < 0 || next_token(&rest))
            fail(p, lineno, -EINVAL, "version: \"%.40s\" is not a number", v ? v : "");
        else if (ver != GS_LIMITS_FORMAT_VERSION)
            fail(p, lineno, -EPROTONOSUPPORT,
                 "version: %llu is not supported (this reader knows %d)", (unsigned long long)ver,
                 GS_LIMITS_FORMAT_VERSION);
        p->seen_version = true;
    } else if (strcmp(kw, "claim") == 0) {
        char *c = next_token(&rest);
        if (p->seen_claim)
            fail(p, lineno, -EINVAL, "claim: given twice");
        else if (!c || next_token(&rest))
            fail(p, lineno, -EINVAL, "claim: expected exactly one name");
        else if (!valid_token(c, GS_LIMITS_CLAIM_MAX))
            fail(p, lineno, -EINVAL, "claim: \"%.60s\" is not a printable name under %d bytes", c,
                 GS_LIMITS_CLAIM_MAX);
        else
            memcpy(p->out->claim, c, strlen(c) + 1);
        p->seen_claim = true;
    } else if (strcmp(kw, "region") == 0) {
        while (*rest == ' ' || *rest == '\t')
            rest++;
        size_t n = strlen(rest);
        while (n > 0 && (rest[n - 1] == ' ' || rest[n - 1] == '\t'))
            rest[--n] = '\0';
        if (p->seen_region)
            fail(p, lineno, -EINVAL, "region: given twice");
        else if (!valid_path(rest))
            fail(p, lineno, -EINVAL, "region: \"%.60s\" is not an absolute path under %d bytes",
                 rest, GS_LIMITS_PATH_MAX);
        else
            memcpy(p->out->region_path, rest, n + 1);
        p->seen_region = true;
    } else if (strcmp(kw, "device") == 0) {
        parse_device(p, lineno, rest);
    } else {
        p->out->all_devices = true; /* cannot tell which devices it meant */
        fail(p, lineno, -EINVAL, "unknown directive \"%.40s\"", kw);
    }
}

static void make_safe(struct gs_limits *l)
{
    for (size_t i = 0; i < l->n_devices; i++) {
        l->devices[i].memory_limit = GS_LIMITS_MEMORY_REFUSE;
        l->devices[i].cores = GS_LIMITS_CORES_REFUSE;
    }
    if (l->n_devices == 0)
        l->all_devices = true;
}

int gs_limits_parse(const char *text, size_t len, struct gs_limits *out, struct gs_error *err)
{
    struct parser p = {.out = out, .err = err};
    gs_limits_init(out);
    gs_error_clear(err);
    if (!text)
        len = 0;
    if (len > GS_LIMITS_FILE_MAX) {
        fail(&p, 0, -EFBIG, "file is %zu bytes, more than %d", len, GS_LIMITS_FILE_MAX);
        make_safe(out);
        out->all_devices = true;
        return p.first_error;
    }
    char line[GS_LIMITS_LINE_MAX];
    size_t lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        lineno++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        size_t next = pos + n + (nl ? 1 : 0);
        if (n > 0 && text[pos + n - 1] == '\r')
            n--;
        if (n >= sizeof(line)) {
            /* Cannot tell what a truncated device line meant: restrict every device. */
            out->all_devices = true;
            fail(&p, lineno, -E2BIG, "line is longer than %d bytes", GS_LIMITS_LINE_MAX - 1);
            pos = next;
            continue;
        }
        memcpy(line, text + pos, n);
        line[n] = '\0';
        if (strlen(line) != n) {
            out->all_devices = true;
            fail(&p, lineno, -EINVAL, "NUL byte in the file");
        } else {
            parse_line(&p, lineno, line);
        }
        pos = next;
    }
    if (!p.seen_version)
        fail(&p, 0, -EINVAL, "version: line missing (not a gpuslice limits file)");
    if (!p.seen_claim)
        fail(&p, 0, -EINVAL, "claim: line missing");
    if (p.first_error) {
        make_safe(out);
        return p.first_error;
    }
    return 0;
}

int gs_limits_read(const char *path, struct gs_limits *out, struct gs_error *err)
{
    gs_limits_init(out);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        out->all_devices = true;
        return gs_error_set(err, -errno, "%s: cannot open: %s", path, gs_strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        out->all_devices = true;
        return gs_error_set(err, -EINVAL, "%s: not a regular file", path);
    }
    if (st.st_size > GS_LIMITS_FILE_MAX) {
        out->all_devices = true;
        return gs_error_set(err, -EFBIG, "%s: %lld bytes is more than %d", path,
                            (long long)st.st_size, GS_LIMITS_FILE_MAX);
    }
    _cleanup_free_ char *buf = malloc(GS_LIMITS_FILE_MAX + 1);
    if (!buf) {
        out->all_devices = true;
        return gs_error_set(err, -ENOMEM, "%s: out of memory", path);
    }
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, GS_LIMITS_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            out->all_devices = true;
            return gs_error_set(err, -errno, "%s: read: %s", path, gs_strerror(errno));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > GS_LIMITS_FILE_MAX) {
            out->all_devices = true;
            return gs_error_set(err, -EFBIG, "%s: more than %d bytes", path, GS_LIMITS_FILE_MAX);
        }
    }
    int r = gs_limits_parse(buf, n, out, err);
    if (r < 0)
        gs_error_prefix(err, "%s: ", path);
    return r;
}

const char *gs_limits_dir(void)
{
    const char *d = getenv(GS_LIMITS_ENV);
    return d && *d ? d : GS_LIMITS_DIR_DEFAULT;
}

int gs_limits_path(char *buf, size_t len, const char *dir, const char *claim, struct gs_error *err)
{
    if (!valid_token(claim, GS_LIMITS_CLAIM_MAX) || strchr(claim, '/') || claim[0] == '.')
        return gs_error_set(err, -EINVAL, "claim: \"%.100s\" is not usable as a file name",
                            claim ? claim : "");
    int n = snprintf(buf, len, "%s/%s%s", dir, claim, GS_LIMITS_SUFFIX);
    if (n < 0 || (size_t)n >= len)
        return gs_error_set(err, -ENAMETOOLONG, "%s/%s%s: path too long", dir, claim,
                            GS_LIMITS_SUFFIX);
    return 0;
}

bool gs_limits_is_limits_file(const char *name)
{
    size_t n = strlen(name), s = strlen(GS_LIMITS_SUFFIX);
    return name[0] != '.' && n > s && strcmp(name + n - s, GS_LIMITS_SUFFIX) == 0;
}
