/* device_setup.c - see device_setup.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_setup.h"

int td_setup_config(const char *const *sigs, int n, int threads, td_setup *s, nd_device_config *cfg, nd_error *err)
{
    int64_t per_core = 0;
    memset(s, 0, sizeof *s);
    if (n < 1 || n > TD_OPERANDS)
        return nd_fail(err, "%d operands; a test setup holds 1 to %d", n, TD_OPERANDS);
    nd_device_config_init(cfg);
    cfg->grid_x = cfg->grid_y = cfg->dram_banks = 1;
    cfg->threads = threads;
    s->n = n;
    for (int i = 0; i < n; ++i) {
        int gx, gy;
        if (nd_dist_from_signature(sigs[i], &s->d[i], &gx, &gy, err))
            return -1;
        if (s->d[i].spec.buffer == ND_DRAM)
            cfg->dram_banks = gx > cfg->dram_banks ? gx : cfg->dram_banks;
        else
            cfg->grid_y = gy > cfg->grid_y ? gy : cfg->grid_y;
        cfg->grid_x = gx > cfg->grid_x ? gx : cfg->grid_x;
        per_core += s->d[i].bytes_per_core + 64;
        s->elems[i] = 1;
        for (int k = 0; k < s->d[i].spec.rank; ++k)
            s->elems[i] *= s->d[i].spec.shape[k];
    }
    cfg->l1_bytes = cfg->dram_bank_bytes = per_core + 4096;
    return 0;
}

int td_setup_alloc(td_setup *s, nd_error *err)
{
    for (int i = 0; i < s->n; ++i)
        if (nd_tensor_alloc(s->dev, &s->d[i], &s->t[i], err))
            return -1;
    return 0;
}

int td_setup_open(const char *const *sigs, int n, int threads, td_setup *s, nd_error *err)
{
    nd_device_config cfg;
    if (td_setup_config(sigs, n, threads, s, &cfg, err) || nd_device_open(&cfg, &s->dev, err))
        return -1;
    return td_setup_alloc(s, err);
}

nd_device *td_device_for(const nd_dist *d, int grid_x, int grid_y, int threads)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    bool dram = d->spec.buffer == ND_DRAM;
    cfg.grid_x = dram ? 2 : grid_x;
    cfg.grid_y = dram ? 2 : grid_y;
    cfg.dram_banks = dram ? grid_x : 1;
    cfg.l1_bytes = cfg.dram_bank_bytes = d->bytes_per_core > 4096 ? d->bytes_per_core : 4096;
    cfg.threads = threads;
    if (nd_device_open(&cfg, &dev, &err)) {
        fprintf(stderr, "device: %s\n", err.msg);
        exit(1);
    }
    return dev;
}

void td_setup_free(td_setup *s)
{
    for (int i = 0; i < s->n; ++i)
        nd_tensor_free(s->t[i]);
    nd_device_close(s->dev);
    memset(s, 0, sizeof *s);
}

int td_open_library(const char *who, const char *lib, int threads, nd_kernels **k, nd_device **dev)
{
    nd_error err;
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.threads = threads;
    *k = NULL, *dev = NULL;
    if (nd_kernels_open(k, &err) == 0 && nd_kernels_load(*k, lib, &err) == 0 && nd_device_open(&cfg, dev, &err) == 0)
        return 0;
    fprintf(stderr, "%s: %s\n", who, err.msg);
    if (*k)
        nd_kernels_close(*k);
    *k = NULL;
    return -1;
}

void td_jit_config(nd_jit_config *cfg, char *const *words, const char *cache_dir)
{
    nd_jit_config_init(cfg);
    cfg->cache_dir = cache_dir;
    cfg->ndgen = words[0];
    cfg->spec_dir = words[1];
    cfg->ntemplate_dirs = 1;
    cfg->template_dirs[0] = words[2];
    cfg->include_dir = words[3];
    cfg->cflags = words[4];
    cfg->ldflags = words[5];
}

int td_set_jit(nd_kernels *k, char *const *words, nd_error *err)
{
    nd_jit_config cfg;
    td_jit_config(&cfg, words, NULL);
    return nd_kernels_set_jit(k, &cfg, err);
}
