/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device code images: fatbinary, cubin (ELF), PTX. See sim-image.h. Layouts (little-endian):
 *
 *   fatbinary   header {u32 magic 0xBA55ED50; u16 version 1; u16 header_size; u64 body_size}
 *               then entries {u16 kind (1 PTX, 2 ELF); u16; u32 header_size; u64 payload_size;
 *               ... u64 flags at +40 (0x2000 / 0x8000: payload compressed)} each followed by its
 *               payload. The wrapper a program embeds ({u32 0x466243b1; u32 version; const void
 *               *data; ...}) points at one.
 *   cubin       ELF64, e_machine 190 (EM_CUDA): kernels are STT_FUNC symbols defined in
 *               ".text.<name>" sections, globals STT_OBJECT symbols in ".nv.global*" sections.
 *   PTX         NUL-terminated text with .version and .target; kernels are ".entry <name>(",
 *               globals ".global ... <name>[<size>]".
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macros.h"
#include "sim/sim-image.h"

#define FATBIN_MAGIC         0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u
#define FATBIN_KIND_PTX      1
#define FATBIN_KIND_ELF      2
#define FATBIN_COMPRESSED    (0x2000ull | 0x8000ull)
#define EM_CUDA              190
#define MAX_DEPTH            2 /* a fatbin inside a wrapper; nothing deeper */

struct reader {
    const unsigned char *p;
    size_t len;
};

static bool in_range(const struct reader *r, uint64_t off, uint64_t n)
{
    return off <= r->len && n <= r->len - off;
}

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int add_sym(struct sim_image *img, const char *name, size_t n, uint64_t size, bool kernel,
                   struct gs_error *err)
{
    if (n == 0 || n > SIM_IMAGE_NAME_MAX)
        return 0; /* not a name gpusim can look up: ignored */
    for (size_t i = 0; i < img->n; i++)
        if (img->syms[i].kernel == kernel && strlen(img->syms[i].name) == n &&
            memcmp(img->syms[i].name, name, n) == 0)
            return 0;
    if (img->n >= SIM_IMAGE_MAX_NAMES)
        return gs_error_set(err, -EINVAL, "image: more than %d symbols", SIM_IMAGE_MAX_NAMES);
    if (img->n == img->cap) {
        size_t cap = img->cap ? img->cap * 2 : 16;
        struct sim_image_sym *s = realloc(img->syms, cap * sizeof(*s));
        if (!s)
            return gs_error_set(err, -ENOMEM, "image: out of memory");
        img->syms = s;
        img->cap = cap;
    }
    char *copy = strndup(name, n);
    if (!copy)
        return gs_error_set(err, -ENOMEM, "image: out of memory");
    img->syms[img->n++] = (struct sim_image_sym){.name = copy, .size = size, .kernel = kernel};
    return 0;
}

/* ------------------------------------------------------------------ ELF */
static int parse_elf(const struct reader *r0, struct sim_image *img, struct gs_error *err)
{
    struct reader r = *r0;
    if (!in_range(&r, 0, 64))
        return gs_error_set(err, -EINVAL, "cubin: truncated ELF header");
    const unsigned char *h = r.p;
    if (h[4] != 2 /* ELFCLASS64 */ || h[5] != 1 /* little-endian */)
        return gs_error_set(err, -EINVAL, "cubin: not a 64-bit little-endian ELF");
    if (rd16(h + 18) != EM_CUDA)
        return gs_error_set(err, -EINVAL, "cubin: e_machine %u is not EM_CUDA (190)", rd16(h + 18));
    uint64_t shoff = rd64(h + 40);
    uint16_t shentsize = rd16(h + 58), shnum = rd16(h + 60), shstrndx = rd16(h + 62);
    if (shnum == 0 || shentsize != 64)
        return gs_error_set(err, -EINVAL, "cubin: no section table (shnum %u, shentsize %u)", shnum,
                            shentsize);
    uint64_t shsize = (uint64_t)shnum * 64;
    uint64_t phoff = rd64(h + 32), phsize = (uint64_t)rd16(h + 54) * rd16(h + 56);
    if (r.len == SIZE_MAX) {
        /* Pointer image: its extent is what the header declares (the section table and every
         * section it lists), up to SIM_IMAGE_MAX. */
        if (shoff > SIM_IMAGE_MAX || shsize > SIM_IMAGE_MAX - shoff)
            return gs_error_set(err, -EINVAL, "cubin: section table at %llu is out of range",
                                (unsigned long long)shoff);
        uint64_t end = shoff + shsize;
        if (phsize && phoff <= SIM_IMAGE_MAX && phsize <= SIM_IMAGE_MAX - phoff)
            end = GS_MAX(end, phoff + phsize);
        for (uint16_t i = 0; i < shnum; i++) {
            const unsigned char *s = r.p + shoff + (uint64_t)i * 64;
            uint64_t off = rd64(s + 24), size = rd64(s + 32);
            if (rd32(s + 4) == 8 /* SHT_NOBITS */)
                continue;
            if (off > SIM_IMAGE_MAX || size > SIM_IMAGE_MAX - off)
                return gs_error_set(err, -EINVAL, "cubin: section %u is out of range", i);
            end = GS_MAX(end, off + size);
        }
        r.len = end;
    }
    if (!in_range(&r, shoff, shsize))
        return gs_error_set(err, -EINVAL, "cubin: section table past the end of the image");
    if (phsize && !in_range(&r, phoff, phsize))
        return gs_error_set(err, -EINVAL, "cubin: program headers past the end of the image");
    const unsigned char *sh = r.p + shoff;
#define SEC(i) (sh + (uint64_t)(i)*64)
    for (uint16_t i = 0; i < shnum; i++) {
        uint32_t type = rd32(SEC(i) + 4);
        uint64_t off = rd64(SEC(i) + 24), size = rd64(SEC(i) + 32);
        if (type != 8 && !in_range(&r, off, size))
            return gs_error_set(err, -EINVAL, "cubin: section %u past the end of the image", i);
    }
    if (shstrndx >= shnum)
        return gs_error_set(err, -EINVAL, "cubin: e_shstrndx %u out of range", shstrndx);
    uint64_t shstr_off = rd64(SEC(shstrndx) + 24), shstr_size = rd64(SEC(shstrndx) + 32);
    if (!in_range(&r, shstr_off, shstr_size))
        return gs_error_set(err, -EINVAL, "cubin: section name table past the end of the image");
    for (uint16_t i = 0; i < shnum; i++) {
        if (rd32(SEC(i) + 4) != 2 /* SHT_SYMTAB */)
            continue;
        uint32_t link = rd32(SEC(i) + 40);
        uint64_t symoff = rd64(SEC(i) + 24), symsize = rd64(SEC(i) + 32);
        if (link >= shnum)
            return gs_error_set(err, -EINVAL, "cubin: symbol table %u links section %u", i, link);
        uint64_t stroff = rd64(SEC(link) + 24), strsize = rd64(SEC(link) + 32);
        if (!in_range(&r, stroff, strsize) || !in_range(&r, symoff, symsize))
            return gs_error_set(err, -EINVAL, "cubin: symbol table %u past the end of the image",
                                i);
        for (uint64_t k = 0; k + 24 <= symsize; k += 24) {
            const unsigned char *sym = r.p + symoff + k;
            uint32_t name = rd32(sym);
            unsigned char info = sym[4];
            uint16_t shndx = rd16(sym + 6);
            uint64_t size = rd64(sym + 16);
            int stype = info & 0xf;
            if ((stype != 2 /* STT_FUNC */ && stype != 1 /* STT_OBJECT */) || shndx == 0 ||
                shndx >= shnum || name >= strsize)
                continue;
            const char *sname = (const char *)r.p + stroff + name;
            size_t slen = strnlen(sname, strsize - name);
            if (slen == strsize - name)
                continue; /* not terminated inside the string table */
            uint32_t secname = rd32(SEC(shndx));
            if (secname >= shstr_size)
                continue;
            const char *sec = (const char *)r.p + shstr_off + secname;
            size_t seclen = strnlen(sec, shstr_size - secname);
            if (seclen == shstr_size - secname)
                continue;
            int rc = 0;
            if (stype == 2 && seclen > 6 && strncmp(sec, ".text.", 6) == 0)
                rc = add_sym(img, sname, slen, 0, true, err);
            else if (stype == 1 && strncmp(sec, ".nv.global", 10) == 0)
                rc = add_sym(img, sname, slen, size, false, err);
            if (rc < 0)
                return rc;
        }
    }
#undef SEC
    return 0;
}

/* ------------------------------------------------------------------ PTX */
static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

static bool starts_with(const char *p, const char *end, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

/* The identifier at p (at most end), its length in *n. */
static const char *ident_at(const char *p, const char *end, size_t *n)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *s = p;
    while (p < end && ident_char(*p))
        p++;
    *n = (size_t)(p - s);
    return s;
}

static bool has_directive(const char *text, size_t len, const char *dir)
{
    size_t dl = strlen(dir);
    for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), dir, dl)); p += dl)
        if ((p == text || isspace((unsigned char)p[-1])) && (size_t)(p - text) + dl < len &&
            isspace((unsigned char)p[dl]))
            return true;
    return false;
}

static int parse_ptx(const char *text, size_t len, struct sim_image *img, struct gs_error *err)
{
    if (!has_directive(text, len, ".version") || !has_directive(text, len, ".target"))
        return gs_error_set(err, -EINVAL, "PTX: no .version/.target directive");
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        /* a kernel: "[.visible|.weak|.extern] .entry name(" */
        const char *e = memmem(p, (size_t)(le - p), ".entry", 6);
        if (e && (e == p || isspace((unsigned char)e[-1])) && e + 6 < le &&
            isspace((unsigned char)e[6])) {
            size_t n;
            const char *name = ident_at(e + 6, le, &n);
            int rc = add_sym(img, name, n, 0, true, err);
            if (rc < 0)
                return rc;
        }
        /* a global: ".global [.align N] .type name[size];" (module scope: no indent) */
        if (starts_with(p, le, ".global ") || starts_with(p, le, ".visible .global ")) {
            const char *semi = memchr(p, ';', (size_t)(le - p));
            const char *br = memchr(p, '[', (size_t)(le - p));
            const char *stop = br ? br : (semi ? semi : le);
            const char *q = stop;
            while (q > p && isspace((unsigned char)q[-1]))
                q--;
            const char *s = q;
            while (s > p && ident_char(s[-1]))
                s--;
            uint64_t size = 0;
            for (const char *d = br ? br + 1 : le; d < le && isdigit((unsigned char)*d); d++)
                size = gs_sat_add_u64(gs_sat_mul_u64(size, 10), (uint64_t)(*d - '0'));
            int rc = add_sym(img, s, (size_t)(q - s), size, false, err);
            if (rc < 0)
                return rc;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* ------------------------------------------------------------------ fatbinary */
static int parse_any(const struct reader *r, struct sim_image *img, int depth,
                     struct gs_error *err);

static int parse_fatbin(const struct reader *r0, struct sim_image *img, int depth,
                        struct gs_error *err)
{
    struct reader r = *r0;
    if (!in_range(&r, 0, 16))
        return gs_error_set(err, -EINVAL, "fatbin: truncated header");
    uint16_t hsize = rd16(r.p + 6);
    uint64_t body = rd64(r.p + 8);
    if (rd16(r.p + 4) != 1 || hsize < 16)
        return gs_error_set(err, -EINVAL, "fatbin: version %u, header size %u not supported",
                            rd16(r.p + 4), hsize);
    if (body > SIM_IMAGE_MAX || hsize > SIM_IMAGE_MAX - body)
        return gs_error_set(err, -EINVAL, "fatbin: size %llu out of range",
                            (unsigned long long)body);
    if (r.len == SIZE_MAX)
        r.len = hsize + body;
    if (!in_range(&r, 0, hsize + body))
        return gs_error_set(err, -EINVAL, "fatbin: %llu bytes declared, %zu present",
                            (unsigned long long)(hsize + body), r.len);
    uint64_t off = hsize, end = hsize + body;
    int parsed = 0, compressed = 0;
    while (off < end) {
        if (end - off < 48)
            return gs_error_set(err, -EINVAL, "fatbin: truncated entry at %llu",
                                (unsigned long long)off);
        const unsigned char *e = r.p + off;
        uint16_t kind = rd16(e);
        uint32_t ehs = rd32(e + 4);
        uint64_t psize = rd64(e + 8), flags = rd64(e + 40);
        if (ehs < 48 || ehs > end - off || psize > end - off - ehs)
            return gs_error_set(err, -EINVAL, "fatbin: entry at %llu runs past the end",
                                (unsigned long long)off);
        struct reader sub = {.p = e + ehs, .len = (size_t)psize};
        if (kind != FATBIN_KIND_PTX && kind != FATBIN_KIND_ELF) {
            /* other kinds (e.g. LTO IR) carry no kernels gpusim can name */
        } else if (flags & FATBIN_COMPRESSED) {
            compressed++;
        } else if (kind == FATBIN_KIND_ELF) {
            if (psize < 4 || memcmp(sub.p, "\177ELF", 4) != 0)
                return gs_error_set(err, -EINVAL, "fatbin: ELF entry at %llu is not ELF",
                                    (unsigned long long)off);
            int rc = parse_elf(&sub, img, err);
            if (rc < 0)
                return rc;
            parsed++;
        } else {
            size_t n = strnlen((const char *)sub.p, sub.len);
            int rc = parse_ptx((const char *)sub.p, n, img, err);
            if (rc < 0)
                return rc;
            parsed++;
        }
        off += ehs + psize;
    }
    (void)depth;
    if (parsed == 0 && compressed == 0)
        return gs_error_set(err, -EINVAL, "fatbin: no PTX or ELF entry");
    if (parsed == 0)
        img->names_unknown = true;
    return 0;
}

static int parse_any(const struct reader *r, struct sim_image *img, int depth, struct gs_error *err)
{
    if (depth > MAX_DEPTH)
        return gs_error_set(err, -EINVAL, "image: nested too deep");
    /* The first 4 bytes decide. A text shorter than that (a NUL among them) is not read past. */
    bool short_text = !in_range(r, 0, 4);
    for (size_t i = 0; i < 4 && !short_text; i++)
        short_text = r->p[i] == 0;
    if (short_text)
        return gs_error_set(err, -EINVAL, "image: not a fatbinary, cubin or PTX text");
    uint32_t magic = rd32(r->p);
    if (magic == FATBIN_MAGIC) {
        img->format = SIM_IMAGE_FATBIN;
        int rc = parse_fatbin(r, img, depth, err);
        if (rc < 0 || r->len == SIZE_MAX)
            return rc;
        /* A sized buffer may hold a program's whole .nv_fatbin section: fatbinaries one after
         * another, each 8-byte aligned. The names of all of them count. */
        bool unknown = img->names_unknown;
        uint64_t off = rd16(r->p + 6) + rd64(r->p + 8); /* parse_fatbin checked it */
        for (int k = 0; k < 1024; k++) {
            off = (off + 7) & ~7ull;
            if (!in_range(r, off, 16) || rd32(r->p + off) != FATBIN_MAGIC)
                break;
            struct reader next = {.p = r->p + off, .len = r->len - off};
            img->names_unknown = false;
            if ((rc = parse_fatbin(&next, img, depth, err)) < 0)
                return rc;
            unknown = unknown && img->names_unknown;
            off += rd16(next.p + 6) + rd64(next.p + 8);
        }
        img->names_unknown = unknown && img->n == 0;
        return 0;
    }
    if (magic == FATBIN_WRAPPER_MAGIC) {
        /* {u32 magic; u32 version; const void *data; void *filename_or_fatbins} */
        if (!in_range(r, 0, 8 + sizeof(void *)) || r->len != SIZE_MAX)
            return gs_error_set(err, -EINVAL, "fatbin wrapper: truncated");
        const void *data;
        memcpy(&data, r->p + 8, sizeof(data));
        if (!data)
            return gs_error_set(err, -EINVAL, "fatbin wrapper: NULL data");
        struct reader sub = {.p = data, .len = SIZE_MAX};
        if (rd32(sub.p) != FATBIN_MAGIC)
            return gs_error_set(err, -EINVAL, "fatbin wrapper: data is not a fatbinary");
        img->format = SIM_IMAGE_FATBIN;
        return parse_fatbin(&sub, img, depth + 1, err);
    }
    if (memcmp(r->p, "\177ELF", 4) == 0) {
        img->format = SIM_IMAGE_CUBIN;
        return parse_elf(r, img, err);
    }
    /* PTX: text up to the NUL (or the end of a sized image), at most SIM_IMAGE_MAX. The scan
     * stops at the first byte that is not text, so binary garbage without a NUL is not read
     * past that byte. */
    size_t cap = GS_MIN(r->len, (size_t)SIM_IMAGE_MAX), n = 0;
    for (; n < cap && r->p[n]; n++)
        if (!isprint(r->p[n]) && !isspace(r->p[n]))
            return gs_error_set(err, -EINVAL,
                                "image: not a fatbinary, cubin or PTX text (binary byte 0x%02x "
                                "at %zu)",
                                r->p[n], n);
    if (n == cap && r->len == SIZE_MAX)
        return gs_error_set(err, -EINVAL, "PTX: larger than %llu bytes",
                            (unsigned long long)SIM_IMAGE_MAX);
    img->format = SIM_IMAGE_PTX;
    return parse_ptx((const char *)r->p, n, img, err);
}

int sim_image_parse(const void *data, size_t len, struct sim_image *img, struct gs_error *err)
{
    memset(img, 0, sizeof(*img));
    if (!data)
        return gs_error_set(err, -EINVAL, "image: NULL");
    struct reader r = {.p = data, .len = len};
    return parse_any(&r, img, 0, err);
}

void sim_image_fini(struct sim_image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < img->n; i++)
        free(img->syms[i].name);
    free(img->syms);
    memset(img, 0, sizeof(*img));
}

const struct sim_image_sym *sim_image_find(const struct sim_image *img, const char *name,
                                           bool kernel)
{
    for (size_t i = 0; i < img->n; i++)
        if (img->syms[i].kernel == kernel && strcmp(img->syms[i].name, name) == 0)
            return &img->syms[i];
    return NULL;
}
