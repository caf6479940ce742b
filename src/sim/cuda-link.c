/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim libcuda: the JIT linker (cuLink*) and texture/surface objects.
 *
 * Linker: every input (PTX, cubin, fatbinary; from memory or a file) is parsed like a module
 * image (CUDA_ERROR_INVALID_IMAGE for what is not one). Relocatable objects and libraries
 * (CU_JIT_INPUT_OBJECT/LIBRARY, nvcc -rdc output) are accepted when they parse as images, NVVM
 * IR is refused (CUDA_ERROR_JIT_COMPILER_NOT_FOUND is what a driver without libNVVM answers:
 * gpusim answers CUDA_ERROR_NOT_SUPPORTED). cuLinkComplete produces one image holding every
 * input's kernels and globals: a PTX text gpusim's loader reads (.entry and .global
 * declarations), valid until cuLinkDestroy. An input whose names cannot be read (compressed
 * fatbin) makes the linked image accept any name, like loading it directly.
 *
 * Texture and surface objects: the descriptors are validated (the resource must be a live
 * array, or device memory holding the described range) and kept; the ...GetResourceDesc calls
 * return them. Kernels do not run, so nothing samples them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/cuda_array.h"
#include "sim/cuda-internal.h"

struct link_state {
    uint32_t magic;
    char *out; /* the linked image, after cuLinkComplete */
    size_t out_len;
    size_t out_cap;
    bool any_name; /* an input whose names are unknown */
    int ninputs;
    struct sim_image all; /* names gathered from every input */
};

#define LINK_MAGIC 0x4c4e4b47u /* "GKNL" */

static struct link_state *link_of(CUlinkState s)
{
    struct link_state *l = (struct link_state *)s;
    return l && l->magic == LINK_MAGIC ? l : NULL;
}

static CUresult link_create(unsigned int numOptions, const CUjit_option *options,
                            void **optionValues, CUlinkState *stateOut)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    if (!stateOut || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    struct link_state *l = calloc(1, sizeof(*l));
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = LINK_MAGIC;
    *stateOut = (CUlinkState)l;
    return CUDA_SUCCESS;
}

CU_API CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
                                CUlinkState *stateOut)
{
    return link_create(numOptions, options, optionValues, stateOut);
}

CU_API CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
                             CUlinkState *stateOut)
{
    return link_create(numOptions, options, optionValues, stateOut);
}

/* Add the names of one parsed input to the state. */
static CUresult gather(struct link_state *l, const struct sim_image *img)
{
    for (size_t i = 0; i < img->n; i++) {
        const struct sim_image_sym *s = &img->syms[i];
        if (sim_image_find(&l->all, s->name, s->kernel))
            continue;
        if (l->all.n == l->all.cap) {
            size_t cap = l->all.cap ? l->all.cap * 2 : 16;
            struct sim_image_sym *n = realloc(l->all.syms, cap * sizeof(*n));
            if (!n)
                return CUDA_ERROR_OUT_OF_MEMORY;
            l->all.syms = n;
            l->all.cap = cap;
        }
        char *name = strdup(s->name);
        if (!name)
            return CUDA_ERROR_OUT_OF_MEMORY;
        l->all.syms[l->all.n++] = (struct sim_image_sym){name, s->size, s->kernel};
    }
    return CUDA_SUCCESS;
}

static CUresult add_image(struct link_state *l, int type, const void *data, size_t size)
{
    if (type == CU_JIT_INPUT_NVVM)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (type < CU_JIT_INPUT_CUBIN || type > CU_JIT_INPUT_LIBRARY)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_image img;
    struct gs_error err = {0};
    /* PTX is text: its size may include the NUL or not; parse up to it. */
    size_t len = size ? size : SIZE_MAX;
    int rc = sim_image_parse(data, len, &img, &err);
    if (rc < 0) {
        sim_image_fini(&img);
        return rc == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
    }
    l->any_name |= img.names_unknown;
    CUresult r = gather(l, &img);
    sim_image_fini(&img);
    if (r == CUDA_SUCCESS)
        l->ninputs++;
    return r;
}

static CUresult link_add_data(CUlinkState state, int type, void *data, size_t size,
                              const char *name, unsigned int numOptions,
                              const CUjit_option *options, void **optionValues)
{
    CU_CHECK_INIT();
    struct link_state *l = link_of(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!data || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    if (l->out)
        return CUDA_ERROR_INVALID_VALUE; /* already completed */
    return add_image(l, type, data, size);
}

CU_API CUresult cuLinkAddData_v2(CUlinkState state, int type, void *data, size_t size,
                                 const char *name, unsigned int numOptions,
                                 const CUjit_option *options, void **optionValues)
{
    return link_add_data(state, type, data, size, name, numOptions, options, optionValues);
}

CU_API CUresult cuLinkAddData(CUlinkState state, int type, void *data, size_t size,
                              const char *name, unsigned int numOptions,
                              const CUjit_option *options, void **optionValues)
{
    return link_add_data(state, type, data, size, name, numOptions, options, optionValues);
}

static CUresult link_add_file(CUlinkState state, int type, const char *path,
                              unsigned int numOptions, const CUjit_option *options,
                              void **optionValues)
{
    CU_CHECK_INIT();
    struct link_state *l = link_of(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!path || (numOptions && (!options || !optionValues)))
        return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap + 1);
    CUresult r = buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    while (r == CUDA_SUCCESS) {
        if (len == cap) {
            if (cap >= SIM_IMAGE_MAX) {
                r = CUDA_ERROR_INVALID_IMAGE;
                break;
            }
            unsigned char *n = realloc(buf, cap * 2 + 1);
            if (!n) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            }
            buf = n;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    fclose(f);
    if (r == CUDA_SUCCESS && len == 0)
        r = CUDA_ERROR_INVALID_IMAGE;
    if (r == CUDA_SUCCESS) {
        buf[len] = '\0';
        r = add_image(l, type, buf, len);
    }
    free(buf);
    return r;
}

CU_API CUresult cuLinkAddFile_v2(CUlinkState state, int type, const char *path,
                                 unsigned int numOptions, CUjit_option *options,
                                 void **optionValues)
{
    return link_add_file(state, type, path, numOptions, options, optionValues);
}

CU_API CUresult cuLinkAddFile(CUlinkState state, int type, const char *path,
                              unsigned int numOptions, const CUjit_option *options,
                              void **optionValues)
{
    return link_add_file(state, type, path, numOptions, options, optionValues);
}

static bool put(struct link_state *l, const char *text)
{
    size_t need = strlen(text);
    if (l->out_len + need + 1 > l->out_cap) {
        size_t cap = GS_MAX(l->out_cap * 2, l->out_len + need + 256);
        char *n = realloc(l->out, cap);
        if (!n)
            return false;
        l->out = n;
        l->out_cap = cap;
    }
    /* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker): grown above when empty */
    memcpy(l->out + l->out_len, text, need + 1);
    l->out_len += need;
    return true;
}

CU_API CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    CU_CHECK_INIT();
    struct link_state *l = link_of(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->ninputs == 0)
        return CUDA_ERROR_INVALID_VALUE; /* nothing to link */
    if (!l->out) {
        char line[SIM_IMAGE_NAME_MAX + 96];
        snprintf(line, sizeof(line),
                 "// gpusim: linked by cuLinkComplete (%d inputs)\n.version 8.0\n"
                 ".target sm_50\n.address_size 64\n",
                 l->ninputs);
        bool ok = put(l, line);
        for (size_t i = 0; ok && i < l->all.n; i++) {
            const struct sim_image_sym *s = &l->all.syms[i];
            if (s->kernel)
                snprintf(line, sizeof(line), ".visible .entry %s()\n{\n}\n", s->name);
            else
                snprintf(line, sizeof(line), ".visible .global .align 1 .b8 %s[%llu];\n", s->name,
                         (unsigned long long)s->size);
            ok = put(l, line);
        }
        if (!ok) {
            free(l->out);
            l->out = NULL;
            l->out_len = l->out_cap = 0;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (l->any_name) {
            /* Names unknown: the linked image is gpusim's any-name image. */
            free(l->out);
            l->out = strdup("gpusim");
            l->out_len = l->out ? 6 : 0;
            if (!l->out)
                return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *cubinOut = l->out;
    if (sizeOut)
        *sizeOut = l->out_len + 1;
    return CUDA_SUCCESS;
}

CU_API CUresult cuLinkDestroy(CUlinkState state)
{
    CU_CHECK_INIT();
    struct link_state *l = link_of(state);
    if (!l)
        return CUDA_ERROR_INVALID_HANDLE;
    l->magic = 0;
    free(l->out);
    sim_image_fini(&l->all);
    free(l);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ texture / surface objects */
#define TEX_MAGIC 0x58455447u /* "GTEX" */

struct tex_obj {
    uint32_t magic;
    struct tex_obj *next; /* every live object (handles are checked against the list) */
    bool surface;
    CUDA_RESOURCE_DESC res;
    CUDA_TEXTURE_DESC tex;
    CUDA_RESOURCE_VIEW_DESC view;
    bool has_view;
};

static pthread_mutex_t tex_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tex_obj *tex_all;

void cu_tex_fork(enum cu_fork_phase phase)
{
    switch (phase) {
    case CU_FORK_PREPARE:
        pthread_mutex_lock(&tex_lock);
        break;
    case CU_FORK_PARENT:
        pthread_mutex_unlock(&tex_lock);
        break;
    case CU_FORK_CHILD:
        pthread_mutex_init(&tex_lock, NULL);
        tex_all = NULL; /* the parent's objects (their contexts do not survive fork) */
        break;
    }
}

/* The live object a handle names (never dereferences an unknown value), or NULL. */
static struct tex_obj *tex_of(unsigned long long h, bool surface)
{
    struct tex_obj *found = NULL;
    pthread_mutex_lock(&tex_lock);
    for (struct tex_obj *t = tex_all; t && !found; t = t->next)
        if ((unsigned long long)(uintptr_t)t == h && t->surface == surface)
            found = t;
    pthread_mutex_unlock(&tex_lock);
    return found;
}

static CUresult check_resource(const CUDA_RESOURCE_DESC *r, bool surface)
{
    if (r->flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
        return cu_valid(r->res.array.hArray, CU_OBJ_ARRAY) ? CUDA_SUCCESS
                                                           : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        if (surface)
            return CUDA_ERROR_INVALID_VALUE;
        return cu_valid(r->res.mipmap.hMipmappedArray, CU_OBJ_ARRAY) ? CUDA_SUCCESS
                                                                     : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: {
        if (surface)
            return CUDA_ERROR_INVALID_VALUE; /* surfaces bind arrays only */
        CUdeviceptr p;
        uint64_t bytes;
        unsigned texel = gs_cuda_texel_bytes(r->res.linear.format, r->res.linear.numChannels);
        if (r->resType == CU_RESOURCE_TYPE_LINEAR) {
            p = r->res.linear.devPtr;
            bytes = r->res.linear.sizeInBytes;
        } else {
            texel = gs_cuda_texel_bytes(r->res.pitch2D.format, r->res.pitch2D.numChannels);
            p = r->res.pitch2D.devPtr;
            if (r->res.pitch2D.height == 0 ||
                r->res.pitch2D.pitchInBytes < gs_sat_mul_u64(r->res.pitch2D.width, texel))
                return CUDA_ERROR_INVALID_VALUE;
            bytes = gs_sat_add_u64(
                gs_sat_mul_u64(r->res.pitch2D.pitchInBytes, r->res.pitch2D.height - 1),
                gs_sat_mul_u64(r->res.pitch2D.width, texel));
        }
        if (!texel || bytes == 0 || bytes == UINT64_MAX)
            return CUDA_ERROR_INVALID_VALUE;
        pthread_mutex_lock(&cu_g.mem_lock);
        const struct sim_map_entry *e = cu_alloc_find_locked(p);
        bool ok = e && bytes <= e->size - (p - e->key);
        pthread_mutex_unlock(&cu_g.mem_lock);
        return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult obj_create(unsigned long long *out, const CUDA_RESOURCE_DESC *res,
                           const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view,
                           bool surface)
{
    CUresult r;
    if (!cu_ctx_current(&r))
        return r;
    if (!out || !res || (!surface && !tex))
        return CUDA_ERROR_INVALID_VALUE;
    if ((r = check_resource(res, surface)) != CUDA_SUCCESS)
        return r;
    struct tex_obj *t = calloc(1, sizeof(*t));
    if (!t)
        return CUDA_ERROR_OUT_OF_MEMORY;
    t->magic = TEX_MAGIC;
    t->surface = surface;
    t->res = *res;
    if (tex)
        t->tex = *tex;
    if (view) {
        t->view = *view;
        t->has_view = true;
    }
    pthread_mutex_lock(&tex_lock);
    t->next = tex_all;
    tex_all = t;
    pthread_mutex_unlock(&tex_lock);
    *out = (unsigned long long)(uintptr_t)t;
    return CUDA_SUCCESS;
}

static CUresult obj_destroy(unsigned long long h, bool surface)
{
    CU_CHECK_INIT();
    struct tex_obj *t = NULL;
    pthread_mutex_lock(&tex_lock);
    for (struct tex_obj **pp = &tex_all; *pp; pp = &(*pp)->next) {
        if ((unsigned long long)(uintptr_t)*pp == h && (*pp)->surface == surface) {
            t = *pp;
            *pp = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&tex_lock);
    if (!t)
        return CUDA_ERROR_INVALID_VALUE;
    free(t);
    return CUDA_SUCCESS;
}

CU_API CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc,
                                  const CUDA_TEXTURE_DESC *pTexDesc,
                                  const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
    return obj_create(pTexObject, pResDesc, pTexDesc, pResViewDesc, false);
}

CU_API CUresult cuTexObjectDestroy(CUtexObject texObject)
{
    return obj_destroy(texObject, false);
}

CU_API CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
    CU_CHECK_INIT();
    struct tex_obj *t = tex_of(texObject, false);
    if (!t || !pResDesc)
        return CUDA_ERROR_INVALID_VALUE;
    *pResDesc = t->res;
    return CUDA_SUCCESS;
}

CU_API CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
{
    CU_CHECK_INIT();
    struct tex_obj *t = tex_of(texObject, false);
    if (!t || !pTexDesc)
        return CUDA_ERROR_INVALID_VALUE;
    *pTexDesc = t->tex;
    return CUDA_SUCCESS;
}

CU_API CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc,
                                               CUtexObject texObject)
{
    CU_CHECK_INIT();
    struct tex_obj *t = tex_of(texObject, false);
    if (!t || !pResViewDesc || !t->has_view)
        return CUDA_ERROR_INVALID_VALUE;
    *pResViewDesc = t->view;
    return CUDA_SUCCESS;
}

CU_API CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
{
    return obj_create(pSurfObject, pResDesc, NULL, NULL, true);
}

CU_API CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
{
    return obj_destroy(surfObject, true);
}

CU_API CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
    CU_CHECK_INIT();
    struct tex_obj *t = tex_of(surfObject, true);
    if (!t || !pResDesc)
        return CUDA_ERROR_INVALID_VALUE;
    *pResDesc = t->res;
    return CUDA_SUCCESS;
}
