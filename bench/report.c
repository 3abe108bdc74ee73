/* report.c - results as a table for people and as JSON for scripts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ndrun.h"

static const char *jit_word(nd_jit_outcome j)
{
    static const char *const words[] = {"prebuilt", "cache", "built", "rebuilt", "fallback"};
    return words[j];
}

static void time_text(char *buf, size_t len, double s)
{
    if (s >= 1)
        snprintf(buf, len, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else
        snprintf(buf, len, "%.1f us", s * 1e6);
}

/* A rate as a percentage of the case's limit (limit.c): "FAULT" past NR_FAULT_PERCENT (a probe is
 * missing), "noisy, rerun" when the medians are not believed, "not measured" without a limit. */
static void percent_text(char *buf, size_t len, const nr_result *r, double rate)
{
    double limit = nr_limit(r), pct = 100 * rate / limit;
    switch (nr_judge(rate, limit, r->tight)) {
    case NR_NOT_MEASURED: snprintf(buf, len, "not measured"); break;
    case NR_NOISY: snprintf(buf, len, "noisy, rerun"); break;
    case NR_FAULT: snprintf(buf, len, "%.0f%% FAULT", pct); break;
    default: snprintf(buf, len, "%.0f%%", pct); break;
    }
}

static void timing_row(FILE *fp, const nr_result *r, const char *name, const nr_timing *t)
{
    char med[32], lo[32], hi[32], pct[32];
    time_text(med, sizeof med, t->median);
    time_text(lo, sizeof lo, t->min);
    time_text(hi, sizeof hi, t->max);
    double rate = nr_rate(r, t);
    percent_text(pct, sizeof pct, r, rate);
    fprintf(fp, "  %-40s %11s %11s %11s %9.2f %12s  spread %.0f%%\n", name, med, lo, hi, rate, pct,
            t->median > 0 ? 100 * (t->max - t->min) / t->median : 0.0);
}

static void cache_text(char *buf, size_t len, int64_t bytes, int instances)
{
    if (bytes <= 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, bytes % (1 << 20) == 0 ? "%lld MiB x %d" : "%lld KiB x %d",
                 (long long)(bytes % (1 << 20) == 0 ? bytes >> 20 : bytes >> 10), instances > 0 ? instances : 1);
}

/* The machine the run measured, as detected (machine.c). */
static void print_machine(FILE *fp)
{
    const nr_cpu *c = nr_machine_cpu();
    char l2[48], l3[48];
    cache_text(l2, sizeof l2, c->l2, c->l2_instances);
    cache_text(l3, sizeof l3, c->l3, c->l3_instances);
    fprintf(fp, "machine: %s, %d CPUs online, L1d %lld KiB, L2 %s, L3 %s (detected); kernels and probes compiled for "
                "%s\npeers: %s; OpenBLAS: %s\n", c->model, c->cpus, (long long)(c->l1d >> 10), l2, l3, c->isa,
            nr_peer_libraries(), c->peer);
}

void nr_print_table(FILE *fp, const nr_result *r)
{
    const char *unit = r->flops > 0 ? "GFLOP/s" : "GB/s";
    fprintf(fp, "%s %s  %s  on %d threads\n", r->op, r->dtype, r->shapes, r->threads);
    fprintf(fp, "results: %s", r->match ? "all three agree" : "MISMATCH: ");
    fprintf(fp, "%s (largest difference from the reference %.3g)\n", r->match ? "" : r->mismatch, r->max_error);
    fprintf(fp, "kernels: %s (%lld bytes of code), %s (%lld bytes, %s%s%s)\n\n", r->generic_symbol,
            (long long)r->generic_code, r->specialized_symbol, (long long)r->specialized_code, jit_word(r->jit),
            r->jit_note[0] ? ": " : "", r->jit_note);
    fprintf(fp, "  %-40s %11s %11s %11s %9s %12s\n", "variant", "median", "min", "max", unit, "of limit");
    fprintf(fp, "  (spread: (max - min) / median; past %.0f%% of the limit a rate is a FAULT, a missing probe)\n",
            NR_FAULT_PERCENT);
    timing_row(fp, r, "generic", &r->generic);
    timing_row(fp, r, "specialized", &r->specialized);
    timing_row(fp, r, "plain loop", &r->reference);
    for (int i = 0; i < r->npeers; ++i)
        timing_row(fp, r, r->peer_name[i], &r->peer[i]);
    if (r->npeers == 0)
        fprintf(fp, "  (no peer: no library of %s does this op on these dtypes)\n", nr_peer_libraries());
    fprintf(fp, "\nspeedup, specialized over generic: %.2fx (medians of %d interleaved rounds; the medians' 95%% "
                "intervals within %.1f%%%s)\n", r->generic.median / r->specialized.median, r->specialized.repeats,
            100 * r->ci_half_width, r->tight ? "" : ": too noisy to believe, rerun on a quieter machine");
    if (r->ceiling.n == 0) { /* probes off: no number stands for a limit */
        fprintf(fp, "limit: not measured (probes off)\n");
    } else {
        fprintf(fp, "limit: %s, %.2f %s: the best of", nr_limit_name(r), nr_limit(r), unit);
        for (int i = 0; i < r->ceiling.n; ++i)
            fprintf(fp, "%s %s %.2f", i ? "," : "", r->ceiling.name[i], r->ceiling.rate[i]);
        fprintf(fp, "\n(timed in the same rounds, each from flushed caches unless the case is 4 times their size, in a\n"
                    "rotated order; past the minimum rounds, only those within reach of the best). Probed before: STREAM copy %.2f GB/s, add %.2f GB/s, read %.2f GB/s, memcpy %.2f "
                    "GB/s,\nf32 FMA peak %.1f GFLOP/s (the best of runs of 20 ms or more in this process)\n",
                r->machine.copy_gbs, r->machine.add_gbs, r->machine.read_gbs, r->machine.memcpy_gbs,
                r->machine.peak_gflops);
    }
    print_machine(fp);
    fprintf(fp, "load average (1 minute): %.2f before the rounds, %.2f after\n", r->load[0], r->load[1]);
    fprintf(fp, "pages read by the specialized kernel: %lld local, %lld remote: %.2f per page of input data%s\n",
            (long long)r->local_pages, (long long)r->remote_pages, nr_reads_per_page(r),
            nr_reads_per_page(r) > NR_MAX_READS_PER_PAGE ? " (TRAFFIC: more than 3, reads grow faster than the data)"
                                                         : "");
}

/* A JSON number; JSON has no NaN or infinity, so those become null. */
static void num(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, "%.6g", v);
    else
        fputs("null", fp);
}

void nr_json_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; ++s) {
        if (*s == '"' || *s == '\\')
            fprintf(fp, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(fp, "\\u%04x", *s);
        else
            fputc(*s, fp);
    }
    fputc('"', fp);
}

static void timing_json(FILE *fp, const char *in, const char *name, const nr_timing *t)
{
    fprintf(fp, "%s\"%s\": {\"median_s\": ", in, name);
    num(fp, t->median);
    fputs(", \"min_s\": ", fp);
    num(fp, t->min);
    fputs(", \"max_s\": ", fp);
    num(fp, t->max);
    fprintf(fp, ", \"repeats\": %d},\n", t->repeats);
}

static void field(FILE *fp, const char *in, const char *name, double v)
{
    fprintf(fp, "%s\"%s\": ", in, name);
    num(fp, v);
    fputs(",\n", fp);
}

void nr_print_json(FILE *fp, const nr_result *r, const char *in)
{
    fprintf(fp, "{\n%s\"label\": ", in);
    nr_json_str(fp, r->label);
    fprintf(fp, ",\n%s\"family\": ", in);
    nr_json_str(fp, r->family);
    fprintf(fp, ",\n%s\"op\": ", in);
    nr_json_str(fp, r->op);
    fprintf(fp, ",\n%s\"dtype\": ", in);
    nr_json_str(fp, r->dtype);
    fprintf(fp, ",\n%s\"shapes\": ", in);
    nr_json_str(fp, r->shapes);
    fprintf(fp, ",\n%s\"threads\": %d,\n%s\"match\": %s,\n%s\"mismatch\": ", in, r->threads, in,
            r->match ? "true" : "false", in);
    nr_json_str(fp, r->mismatch);
    fputs(",\n", fp);
    field(fp, in, "max_error", r->max_error);
    field(fp, in, "generic_s", r->generic.median);
    field(fp, in, "specialized_s", r->specialized.median);
    field(fp, in, "reference_s", r->reference.median);
    field(fp, in, "speedup", r->generic.median / r->specialized.median);
    field(fp, in, "bytes", r->bytes);
    field(fp, in, "flops", r->flops);
    field(fp, in, "bandwidth_gbs", r->bytes / r->specialized.median / 1e9);
    field(fp, in, "generic_gbs", r->bytes / r->generic.median / 1e9);
    field(fp, in, "reference_gbs", r->bytes / r->reference.median / 1e9);
    if (r->flops > 0) {
        field(fp, in, "gflops", r->flops / r->specialized.median / 1e9);
        field(fp, in, "generic_gflops", r->flops / r->generic.median / 1e9);
        field(fp, in, "reference_gflops", r->flops / r->reference.median / 1e9);
    }
    fprintf(fp, "%s\"limit\": ", in);
    nr_json_str(fp, nr_limit_name(r));
    fputs(",\n", fp);
    field(fp, in, "limit_value", nr_limit(r));
    double pct = nr_limit(r) > 0 ? 100 * nr_rate(r, &r->specialized) / nr_limit(r) : NAN;
    field(fp, in, "limit_percent", pct);
    static const char *const verdicts[] = {"believed", "noisy", "fault", "not measured"};
    fprintf(fp, "%s\"verdict\": \"%s\",\n%s\"measurement_fault\": %s,\n", in, verdicts[nr_result_verdict(r)], in,
            nr_result_verdict(r) == NR_FAULT ? "true" : "false");
    field(fp, in, "ci_half_width", r->ci_half_width);
    field(fp, in, "load_before", r->load[0]);
    field(fp, in, "load_after", r->load[1]);
    fprintf(fp, "%s\"limit_candidates\": [", in);
    for (int i = 0; i < r->ceiling.n; ++i) {
        fputs(i ? ", {\"name\": " : "{\"name\": ", fp);
        nr_json_str(fp, r->ceiling.name[i]);
        fputs(", \"rate\": ", fp);
        num(fp, r->ceiling.rate[i]);
        fputs("}", fp);
    }
    fprintf(fp, "],\n%s\"peers\": [", in);
    for (int i = 0; i < r->npeers; ++i) {
        fputs(i ? ", {\"name\": " : "{\"name\": ", fp);
        nr_json_str(fp, r->peer_name[i]);
        fputs(", \"median_s\": ", fp);
        num(fp, r->peer[i].median);
        fputs(", \"rate\": ", fp);
        num(fp, nr_rate(r, &r->peer[i]));
        fputs("}", fp);
    }
    fputs("],\n", fp);
    fprintf(fp, "%s\"best_peer\": ", in);
    if (nr_best_peer(r) >= 0)
        nr_json_str(fp, r->peer_name[nr_best_peer(r)]);
    else
        fputs("null", fp);
    fputs(",\n", fp);
    field(fp, in, "stream_read_gbs", r->machine.read_gbs);
    field(fp, in, "stream_copy_gbs", r->machine.copy_gbs);
    field(fp, in, "stream_add_gbs", r->machine.add_gbs);
    field(fp, in, "memcpy_gbs", r->machine.memcpy_gbs);
    field(fp, in, "fma_peak_gflops", r->machine.peak_gflops);
    timing_json(fp, in, "generic", &r->generic);
    timing_json(fp, in, "specialized", &r->specialized);
    timing_json(fp, in, "reference", &r->reference);
    fprintf(fp, "%s\"local_pages\": %lld,\n%s\"remote_pages\": %lld,\n%s\"input_pages\": %lld,\n", in,
            (long long)r->local_pages, in, (long long)r->remote_pages, in, (long long)r->input_pages);
    field(fp, in, "reads_per_page", nr_reads_per_page(r));
    fprintf(fp, "%s\"generic_code_bytes\": %lld,\n%s\"specialized_code_bytes\": %lld,\n", in,
            (long long)r->generic_code, in, (long long)r->specialized_code);
    const nr_cpu *c = nr_machine_cpu();
    fprintf(fp, "%s\"machine\": {\"cpu_model\": ", in);
    nr_json_str(fp, c->model);
    fprintf(fp, ", \"cpus\": %d, \"l1d_bytes\": %lld, \"l2_bytes\": %lld, \"l2_instances\": %d, \"l3_bytes\": %lld, "
                "\"l3_instances\": %d, \"isa\": ", c->cpus, (long long)c->l1d, (long long)c->l2, c->l2_instances,
            (long long)c->l3, c->l3_instances);
    nr_json_str(fp, c->isa);
    fputs(", \"peers\": ", fp);
    nr_json_str(fp, nr_peer_libraries());
    fputs(", \"peer\": ", fp);
    nr_json_str(fp, c->peer);
    fputs("},\n", fp);
    fprintf(fp, "%s\"generic_symbol\": ", in);
    nr_json_str(fp, r->generic_symbol);
    fprintf(fp, ",\n%s\"specialized_symbol\": ", in);
    nr_json_str(fp, r->specialized_symbol);
    fprintf(fp, ",\n%s\"jit\": \"%s\"\n%.*s}", in, jit_word(r->jit), (int)strlen(in) - 2, in);
}

/* The library of a peer's name ("oneDNN" of "oneDNN reorder (jit:uni)"). */
static void peer_library(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%.*s", (int)strcspn(name, " "), name);
}

void nr_print_suite_table(FILE *fp, const nr_result *r, int n)
{
    double lo = n ? r[0].load[0] : 0, hi = lo;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < 2; ++k)
            lo = r[i].load[k] < lo ? r[i].load[k] : lo, hi = r[i].load[k] > hi ? r[i].load[k] : hi;
    print_machine(fp);
    fprintf(fp, "load average (1 minute) during the timed rounds: %.2f to %.2f (%d CPUs)\n", lo, hi,
            nr_machine_cpu()->cpus);
    fprintf(fp, "%-34s %10s %10s %10s %18s %8s %10s %13s %6s  %s\n", "case", "generic", "special.", "plain loop",
            "best peer", "speedup", "rate", "of limit", "reads", "limit");
    for (int i = 0; i < n; ++i) {
        char g[32], s[32], ref[32], rate[32], pct[32], peer[48] = "-", lib[24];
        time_text(g, sizeof g, r[i].generic.median);
        time_text(s, sizeof s, r[i].specialized.median);
        if (r[i].has_reference)
            time_text(ref, sizeof ref, r[i].reference.median);
        else
            snprintf(ref, sizeof ref, "-");
        int best = nr_best_peer(&r[i]);
        if (best >= 0) {
            char t[24];
            time_text(t, sizeof t, r[i].peer[best].median);
            peer_library(lib, sizeof lib, r[i].peer_name[best]);
            snprintf(peer, sizeof peer, "%s %s", t, lib);
        }
        snprintf(rate, sizeof rate, "%.1f %s", nr_rate(&r[i], &r[i].specialized), r[i].flops > 0 ? "GF/s" : "GB/s");
        percent_text(pct, sizeof pct, &r[i], nr_rate(&r[i], &r[i].specialized));
        fprintf(fp, "%-34s %10s %10s %10s %18s %7.2fx %10s %13s %6.2f  %s%s%s\n", r[i].label, g, s, ref, peer,
                r[i].generic.median / r[i].specialized.median, rate, pct, nr_reads_per_page(&r[i]), nr_limit_name(&r[i]),
                nr_reads_per_page(&r[i]) > NR_MAX_READS_PER_PAGE ? "  TRAFFIC" : "", r[i].match ? "" : "  MISMATCH");
    }
    fprintf(fp, "(every row's kernels, plain loop and peers were checked against the op's reference and agree, "
                "unless marked MISMATCH;\n reads: pages the specialized kernel read per page of input data, TRAFFIC "
                "past %.0f)\n", NR_MAX_READS_PER_PAGE);
}

int nr_outputs_open(ndf_output *out, const char *const *paths, const char *const *what, int n, nd_error *err)
{
    if (ndf_check_clobber(paths, what, n, NULL, 0, err)) {
        err->code = ND_EINVAL;
        return -1;
    }
    for (int i = 0; i < n; ++i)
        if (ndf_open(&out[i], paths[i], err)) {
            while (i-- > 0)
                ndf_abort(&out[i]);
            err->code = ND_EIO;
            return -1;
        }
    return 0;
}

int nr_write_file(ndf_output *out, void (*write)(FILE *fp, const void *ctx), const void *ctx, nd_error *err)
{
    write(out->fp, ctx);
    if (ndf_commit(out, NULL, err)) {
        err->code = ND_EIO;
        return -1;
    }
    return 0;
}
