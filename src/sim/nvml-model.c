/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpusim's NVML device model: what a T4, an A100-SXM4-80GB or an H200 reports for power,
 * temperature, clocks, PCIe, BAR1, engines and board strings, and how those readings move with
 * the kernel timeline in the shared state. Figures are the boards' public data-sheet values
 * (TDP, boost/memory clocks, PCIe generation) and what nvidia-smi -q shows on them; the load
 * model is deliberately simple (linear in the busy share) so tests can reason about it.
 */
#include <stdio.h>
#include <string.h>

#include "sim/nvml-internal.h"

static struct nv_model models[SIM_MAX_DEVICES];

/* FNV-1a of the UUID: stable per device, so serials and board ids are too. */
static uint64_t uuid_hash(const char *uuid)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = uuid; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

static uint64_t pow2_at_least(uint64_t v)
{
    uint64_t p = 1;
    while (p < v && p < (1ull << 62))
        p <<= 1;
    return p;
}

static void model_for(const struct sim_device_cfg *d, struct nv_model *m)
{
    memset(m, 0, sizeof(*m));
    /* Generic data-centre defaults, scaled by SM count; the architectures below refine them. */
    m->tdp_mw = 300000;
    m->idle_mw = 30000;
    m->idle_c = 32;
    m->load_c = 70;
    m->shutdown_c = 92;
    m->slowdown_c = 89;
    m->gpu_max_c = 85;
    m->mem_max_c = 95;
    m->sm_idle_mhz = 210;
    m->sm_app_mhz = 1200;
    m->pcie_gen = 4;
    m->pcie_width = 16;
    m->encoders = 1;
    m->decoders = 2;
    m->copy_engines = 4;
    m->remapped_rows = d->arch >= NVML_DEVICE_ARCH_AMPERE;
    snprintf(m->vbios, sizeof(m->vbios), "00.00.00.00.01");
    snprintf(m->part, sizeof(m->part), "900-0G000-0000-000");
    switch (d->arch) {
    case NVML_DEVICE_ARCH_VOLTA: /* V100-SXM2: 300 W, 1530 MHz */
        m->tdp_mw = 300000, m->idle_mw = 40000, m->min_limit_mw = 150000;
        m->pcie_gen = 3, m->sm_app_mhz = 1312, m->video_max_mhz = 1372;
        m->encoders = 0, m->decoders = 0;
        snprintf(m->vbios, sizeof(m->vbios), "88.00.80.00.04");
        snprintf(m->part, sizeof(m->part), "900-2G503-0000-000");
        break;
    case NVML_DEVICE_ARCH_TURING: /* Tesla T4: 70 W, passive, 1590 MHz boost, GDDR6 */
        m->tdp_mw = 70000, m->idle_mw = 9000, m->min_limit_mw = 60000;
        m->idle_c = 30, m->load_c = 74;
        m->shutdown_c = 96, m->slowdown_c = 93, m->gpu_max_c = 85, m->mem_max_c = 0;
        m->sm_idle_mhz = 300, m->sm_app_mhz = 585, m->mem_idle_mhz = 405, m->video_max_mhz = 1470;
        m->pcie_gen = 3, m->encoders = 1, m->decoders = 2, m->copy_engines = 3;
        snprintf(m->vbios, sizeof(m->vbios), "90.04.96.00.02");
        snprintf(m->part, sizeof(m->part), "900-2G183-0000-001");
        break;
    case NVML_DEVICE_ARCH_AMPERE: /* A100-SXM4-80GB: 400 W, 1410 MHz, HBM2e */
        m->tdp_mw = 400000, m->idle_mw = 60000, m->min_limit_mw = 100000;
        m->idle_c = 30, m->load_c = 66;
        m->shutdown_c = 92, m->slowdown_c = 89, m->gpu_max_c = 85, m->mem_max_c = 95;
        m->sm_app_mhz = 1275, m->video_max_mhz = 1290;
        m->encoders = 0, m->decoders = 5, m->jpegs = 1, m->ofas = 1, m->copy_engines = 7;
        snprintf(m->vbios, sizeof(m->vbios), "92.00.45.00.01");
        snprintf(m->part, sizeof(m->part), "692-2G506-0210-002");
        break;
    case NVML_DEVICE_ARCH_ADA: /* L4: 72 W */
        m->tdp_mw = 72000, m->idle_mw = 16000, m->min_limit_mw = 40000;
        m->sm_app_mhz = 2040, m->video_max_mhz = 1770;
        m->encoders = 2, m->decoders = 4, m->jpegs = 4, m->ofas = 1, m->copy_engines = 2;
        snprintf(m->vbios, sizeof(m->vbios), "95.04.29.00.06");
        snprintf(m->part, sizeof(m->part), "900-2G193-0000-000");
        break;
    case NVML_DEVICE_ARCH_HOPPER: /* H200 SXM: 700 W, 1980 MHz, HBM3e, PCIe 5 */
        m->tdp_mw = 700000, m->idle_mw = 75000, m->min_limit_mw = 200000;
        m->idle_c = 28, m->load_c = 64;
        m->shutdown_c = 92, m->slowdown_c = 89, m->gpu_max_c = 87, m->mem_max_c = 95;
        m->sm_idle_mhz = 345, m->sm_app_mhz = 1755, m->video_max_mhz = 1755;
        m->pcie_gen = 5, m->encoders = 0, m->decoders = 7, m->jpegs = 7, m->ofas = 1;
        m->copy_engines = 8;
        snprintf(m->vbios, sizeof(m->vbios), "96.00.A5.00.01");
        snprintf(m->part, sizeof(m->part), "692-2G520-0280-000");
        break;
    case NVML_DEVICE_ARCH_BLACKWELL: /* B200: 1000 W */
        m->tdp_mw = 1000000, m->idle_mw = 120000, m->min_limit_mw = 200000;
        m->pcie_gen = 5, m->sm_app_mhz = 1965, m->video_max_mhz = 1965;
        m->encoders = 0, m->decoders = 7, m->jpegs = 7, m->ofas = 1, m->copy_engines = 8;
        snprintf(m->vbios, sizeof(m->vbios), "97.00.3B.00.01");
        snprintf(m->part, sizeof(m->part), "692-2G525-0200-000");
        break;
    default:
        break;
    }
    if (m->min_limit_mw == 0)
        m->min_limit_mw = m->tdp_mw / 2;
    m->sm_max_mhz = d->clock_khz > 0 ? (unsigned int)d->clock_khz / 1000 : 1410;
    m->mem_mhz = d->mem_clock_khz > 0 ? (unsigned int)d->mem_clock_khz / 1000 : 1593;
    if (m->mem_idle_mhz == 0 || m->mem_idle_mhz > m->mem_mhz)
        m->mem_idle_mhz = m->mem_mhz;
    if (m->video_max_mhz == 0)
        m->video_max_mhz = m->sm_max_mhz;
    if (m->sm_app_mhz > m->sm_max_mhz)
        m->sm_app_mhz = m->sm_max_mhz;
    if (m->sm_idle_mhz > m->sm_max_mhz)
        m->sm_idle_mhz = m->sm_max_mhz;
    /* BAR1: 256 MiB before Ampere; a window covering the whole memory (next power of two) after */
    m->bar1_bytes = d->arch >= NVML_DEVICE_ARCH_AMPERE ? pow2_at_least(d->total_mem) : 256ull << 20;
    /* Fans: the data-centre boards are passively cooled (nvidia-smi prints N/A); desktop brands
     * have one fan. */
    switch (d->brand) {
    case NVML_BRAND_GEFORCE:
    case NVML_BRAND_GEFORCE_RTX:
    case NVML_BRAND_TITAN:
    case NVML_BRAND_TITAN_RTX:
    case NVML_BRAND_QUADRO:
    case NVML_BRAND_QUADRO_RTX:
    case NVML_BRAND_NVIDIA_RTX:
        m->fans = 1;
        break;
    default:
        m->fans = 0;
    }
    uint64_t h = uuid_hash(d->uuid);
    snprintf(m->serial, sizeof(m->serial), "132%010llu", (unsigned long long)(h % 10000000000ull));
}

void nv_model_init(const struct sim_config *cfg)
{
    for (int i = 0; i < cfg->ndev && i < SIM_MAX_DEVICES; i++)
        model_for(&cfg->dev[i], &models[i]);
}

const struct nv_model *nv_model_of(int idx)
{
    return &models[idx];
}

static unsigned int lerp(unsigned int lo, unsigned int hi, unsigned int pct)
{
    return lo + (unsigned int)(((uint64_t)(hi > lo ? hi - lo : 0) * pct + 50) / 100);
}

void nv_read(int idx, struct nv_reading *r)
{
    const struct nv_model *m = &models[idx];
    memset(r, 0, sizeof(*r));
    r->util_1s = nv_busy_percent(idx, 1000000000ull);
    r->util_10s = nv_busy_percent(idx, 10000000000ull);
    r->power_mw = lerp(m->idle_mw, m->tdp_mw, r->util_1s);
    r->temp_c = lerp(m->idle_c, m->load_c, r->util_10s);
    r->mem_temp_c = r->temp_c + 2;
    bool busy = r->util_1s > 0;
    r->sm_mhz = busy ? m->sm_max_mhz : m->sm_idle_mhz;
    r->mem_mhz = busy ? m->mem_mhz : m->mem_idle_mhz;
    r->video_mhz = busy ? m->video_max_mhz : m->sm_idle_mhz;
    r->pstate = busy ? NVML_PSTATE_0 : NVML_PSTATE_8;
    r->fan_pct = m->fans ? lerp(30, 90, r->util_10s) : 0;
    /* Energy since boot (CLOCK_MONOTONIC, as the driver loads at boot): idle power all along,
     * plus the load share for the kernel time already run (enqueued minus what is still ahead). */
    uint64_t now = sim_now_ns();
    const struct sim_dev_state *d = &nv.st->sh->dev[idx];
    uint64_t busy_ns = __atomic_load_n(&d->busy_ns, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&d->tail_ns, __ATOMIC_ACQUIRE);
    uint64_t done = gs_sat_sub_u64(busy_ns, tail > now ? tail - now : 0);
    /* mW × s = mJ; split to keep the products in 64 bits. */
    unsigned long long idle =
        (unsigned long long)m->idle_mw * (now / 1000000000ull) +
        (unsigned long long)m->idle_mw * (now % 1000000000ull) / 1000000000ull;
    unsigned long long extra =
        (unsigned long long)(m->tdp_mw - m->idle_mw) * (done / 1000000000ull) +
        (unsigned long long)(m->tdp_mw - m->idle_mw) * (done % 1000000000ull) / 1000000000ull;
    r->energy_mj = idle + extra;
}
