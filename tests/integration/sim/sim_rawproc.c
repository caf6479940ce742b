/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_rawproc: takes cuMemAlloc from the driver's own cuGetProcAddress_v2 -- found in
 * libcuda.so.1's dynamic symbol table on disk, so neither dlsym nor any preload sees the lookup --
 * and compares it with the cuGetProcAddress_v2 that dlsym answers (libvgpu's hook when it is
 * preloaded). Used by test_procaddr.py to prove that the driver's table hands out its own,
 * non-interposable functions: a program bypassing libvgpu's cuGetProcAddress hook allocates past
 * the limit, so the hook is what enforces it.
 *
 * usage: sim_rawproc uuid            print uuid=GPU-...
 *        sim_rawproc alloc <bytes>   allocate <bytes> through each path, print key=value lines
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/cuda_abi.h"

static void die(const char *what, int code)
{
    fprintf(stderr, "sim_rawproc: %s (%d)\n", what, code);
    exit(2);
}

/* The address of `name` in the object loaded from `path` at `base`, read from the file's .dynsym
 * (every offset bounds-checked against the file size); NULL if absent. */
static void *elf_lookup(const char *path, uintptr_t base, const char *name)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || (size_t)sb.st_size < sizeof(Elf64_Ehdr)) {
        close(fd);
        return NULL;
    }
    size_t len = (size_t)sb.st_size;
    const unsigned char *f = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f == MAP_FAILED)
        return NULL;
    void *res = NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff)
        goto out;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !res; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *st = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset || st->sh_offset > len ||
            st->sh_size > len - st->sh_offset)
            goto out;
        const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
        size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
        const char *strs = (const char *)(f + st->sh_offset);
        for (size_t k = 0; k < n; k++) {
            if (sym[k].st_name >= st->sh_size || sym[k].st_shndx == SHN_UNDEF)
                continue;
            const char *s = strs + sym[k].st_name;
            if (strnlen(s, st->sh_size - sym[k].st_name) < st->sh_size - sym[k].st_name &&
                strcmp(s, name) == 0) {
                res = (void *)(base + sym[k].st_value);
                break;
            }
        }
    }
out:
    munmap((void *)f, len);
    return res;
}

/* Basename of the object holding addr ("?" if none). */
static const char *object_name(const void *addr)
{
    Dl_info info;
    if (!addr || !dladdr(addr, &info) || !info.dli_fname)
        return "?";
    const char *s = strrchr(info.dli_fname, '/');
    return s ? s + 1 : info.dli_fname;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: sim_rawproc uuid | alloc <bytes>", 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die(dlerror(), 0);
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        die("dlinfo", 0);
    GS_CU_PFN(cuGetProcAddress_v2)
    hooked = (GS_CU_PFN(cuGetProcAddress_v2))dlsym(h, "cuGetProcAddress_v2");
    GS_CU_PFN(cuGetProcAddress_v2)
    raw = (GS_CU_PFN(cuGetProcAddress_v2))elf_lookup(lm->l_name, lm->l_addr, "cuGetProcAddress_v2");
    if (!hooked || !raw)
        die("cuGetProcAddress_v2 not found", 0);

    /* Set-up through the dlsym path (libvgpu sees the context). */
    GS_CU_PFN(cuInit) init = NULL;
    GS_CU_PFN(cuDevicePrimaryCtxRetain) retain = NULL;
    GS_CU_PFN(cuCtxSetCurrent) set_current = NULL;
    GS_CU_PFN(cuDeviceGetUuid) get_uuid = NULL;
    CUdriverProcAddressQueryResult qs;
    if (hooked("cuInit", (void **)&init, 12080, 0, &qs) ||
        hooked("cuDevicePrimaryCtxRetain", (void **)&retain, 12080, 0, &qs) ||
        hooked("cuCtxSetCurrent", (void **)&set_current, 12080, 0, &qs) ||
        hooked("cuDeviceGetUuid", (void **)&get_uuid, 12080, 0, &qs))
        die("cuGetProcAddress_v2 (set-up)", 0);
    CUresult r = init(0);
    if (r)
        die("cuInit", r);
    if (strcmp(argv[1], "uuid") == 0) {
        CUuuid u;
        if ((r = get_uuid(&u, 0)))
            die("cuDeviceGetUuid", r);
        const unsigned char *b = (const unsigned char *)u.bytes;
        printf("uuid=GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
               b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
               b[13], b[14], b[15]);
        return 0;
    }
    if (strcmp(argv[1], "alloc") != 0 || argc < 3)
        die("usage: sim_rawproc uuid | alloc <bytes>", 0);
    size_t bytes = strtoull(argv[2], NULL, 10);
    CUcontext ctx;
    if ((r = retain(&ctx, 0)) || (r = set_current(ctx)))
        die("primary context", r);

    printf("hooked_gpa_obj=%s raw_gpa_obj=%s\n", object_name((void *)hooked),
           object_name((void *)raw));
    struct {
        const char *name;
        GS_CU_PFN(cuGetProcAddress_v2) gpa;
    } paths[] = {{"hooked", hooked}, {"raw", raw}};
    for (size_t i = 0; i < 2; i++) {
        GS_CU_PFN(cuMemAlloc_v2) alloc = NULL;
        GS_CU_PFN(cuMemFree_v2) mfree = NULL;
        GS_CU_PFN(cuMemGetInfo_v2) info = NULL;
        if (paths[i].gpa("cuMemAlloc", (void **)&alloc, 12080, 0, &qs) ||
            paths[i].gpa("cuMemFree", (void **)&mfree, 12080, 0, &qs) ||
            paths[i].gpa("cuMemGetInfo", (void **)&info, 12080, 0, &qs))
            die("cuGetProcAddress_v2", 0);
        CUdeviceptr p = 0;
        CUresult ar = alloc(&p, bytes);
        size_t fr = 0, tot = 0;
        /* The raw cuMemGetInfo reports the device's physical usage (gpusim's books). */
        CUresult ir = raw == paths[i].gpa ? info(&fr, &tot) : CUDA_SUCCESS;
        printf("%s_alloc_obj=%s %s_alloc=%d", paths[i].name, object_name((void *)alloc),
               paths[i].name, (int)ar);
        if (raw == paths[i].gpa && ir == CUDA_SUCCESS)
            printf(" %s_phys_used=%zu", paths[i].name, tot - fr);
        printf("\n");
        if (ar == CUDA_SUCCESS)
            mfree(p);
    }
    fflush(stdout);
    return 0;
}
