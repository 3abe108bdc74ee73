/* report.c - results as a table for people and as JSON for scripts. */
#include <math.h>
#include <string.h>

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

static void timing_row(FILE *fp, const nr_result *r, const char *name, const nr_timing *t)
{
    char med[32], lo[32], hi[32];
    time_text(med, sizeof med, t->median);
    time_text(lo, sizeof lo, t->min);
    time_text(hi, sizeof hi, t->max);
    double rate = nr_rate(r, t), limit = nr_limit(r);
    fprintf(fp, "  %-12s %11s %11s %11s %9.2f %8.0f%%\n", name, med, lo, hi, rate, limit > 0 ? 100 * rate / limit : 0);
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
    fprintf(fp, "  %-12s %11s %11s %11s %9s %9s\n", "variant", "median", "min", "max", unit, "of limit");
    timing_row(fp, r, "generic", &r->generic);
    timing_row(fp, r, "specialized", &r->specialized);
    timing_row(fp, r, "reference", &r->reference);
    if (r->has_blas)
        timing_row(fp, r, "OpenBLAS", &r->blas);
    fprintf(fp, "\nspeedup, specialized over generic: %.2fx (medians of %d interleaved rounds)\n",
            r->generic.median / r->specialized.median, r->specialized.repeats);
    fprintf(fp, "limit: %s, %.2f %s (a memory-bound case's limit is timed in the same rounds, over arrays of its\n"
                "size). Probed on the same threads: STREAM copy %.2f GB/s, add %.2f GB/s, memcpy %.2f GB/s, f32 FMA "
                "peak %.1f GFLOP/s\n",
            nr_limit_name(r), nr_limit(r), unit, r->machine.copy_gbs, r->machine.add_gbs, r->machine.memcpy_gbs,
            r->machine.peak_gflops);
    fprintf(fp, "pages read by the specialized kernel: %lld local, %lld remote\n", (long long)r->local_pages,
            (long long)r->remote_pages);
}

/* A JSON number; JSON has no NaN or infinity, so those become null. */
static void num(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, "%.6g", v);
    else
        fputs("null", fp);
}

/* s as a JSON string: symbols, shapes and messages, escaped where JSON needs it. */
static void str(FILE *fp, const char *s)
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
    str(fp, r->label);
    fprintf(fp, ",\n%s\"family\": ", in);
    str(fp, r->family);
    fprintf(fp, ",\n%s\"op\": ", in);
    str(fp, r->op);
    fprintf(fp, ",\n%s\"dtype\": ", in);
    str(fp, r->dtype);
    fprintf(fp, ",\n%s\"shapes\": ", in);
    str(fp, r->shapes);
    fprintf(fp, ",\n%s\"threads\": %d,\n%s\"match\": %s,\n%s\"mismatch\": ", in, r->threads, in,
            r->match ? "true" : "false", in);
    str(fp, r->mismatch);
    fputs(",\n", fp);
    field(fp, in, "max_error", r->max_error);
    field(fp, in, "generic_s", r->generic.median);
    field(fp, in, "specialized_s", r->specialized.median);
    field(fp, in, "reference_s", r->reference.median);
    if (r->has_blas)
        field(fp, in, "openblas_s", r->blas.median);
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
        if (r->has_blas)
            field(fp, in, "openblas_gflops", r->flops / r->blas.median / 1e9);
    }
    fprintf(fp, "%s\"limit\": ", in);
    str(fp, nr_limit_name(r));
    fputs(",\n", fp);
    field(fp, in, "limit_value", nr_limit(r));
    field(fp, in, "stream_copy_gbs", r->machine.copy_gbs);
    field(fp, in, "stream_add_gbs", r->machine.add_gbs);
    field(fp, in, "memcpy_gbs", r->machine.memcpy_gbs);
    field(fp, in, "fma_peak_gflops", r->machine.peak_gflops);
    timing_json(fp, in, "generic", &r->generic);
    timing_json(fp, in, "specialized", &r->specialized);
    timing_json(fp, in, "reference", &r->reference);
    if (r->has_blas)
        timing_json(fp, in, "openblas", &r->blas);
    fprintf(fp, "%s\"local_pages\": %lld,\n%s\"remote_pages\": %lld,\n", in, (long long)r->local_pages, in,
            (long long)r->remote_pages);
    fprintf(fp, "%s\"generic_code_bytes\": %lld,\n%s\"specialized_code_bytes\": %lld,\n", in,
            (long long)r->generic_code, in, (long long)r->specialized_code);
    fprintf(fp, "%s\"generic_symbol\": ", in);
    str(fp, r->generic_symbol);
    fprintf(fp, ",\n%s\"specialized_symbol\": ", in);
    str(fp, r->specialized_symbol);
    fprintf(fp, ",\n%s\"jit\": \"%s\"\n%.*s}", in, jit_word(r->jit), (int)strlen(in) - 2, in);
}

void nr_print_suite_table(FILE *fp, const nr_result *r, int n)
{
    fprintf(fp, "%-34s %-11s %10s %10s %10s %8s %10s %6s\n", "case", "family", "generic", "special.", "reference",
            "speedup", "rate", "limit");
    for (int i = 0; i < n; ++i) {
        char g[32], s[32], ref[32], rate[32];
        time_text(g, sizeof g, r[i].generic.median);
        time_text(s, sizeof s, r[i].specialized.median);
        time_text(ref, sizeof ref, r[i].reference.median);
        snprintf(rate, sizeof rate, "%.1f %s", nr_rate(&r[i], &r[i].specialized), r[i].flops > 0 ? "GF/s" : "GB/s");
        fprintf(fp, "%-34s %-11s %10s %10s %10s %7.2fx %10s %5.0f%%%s\n", r[i].label, r[i].family, g, s, ref,
                r[i].generic.median / r[i].specialized.median, rate,
                100 * nr_rate(&r[i], &r[i].specialized) / nr_limit(&r[i]), r[i].match ? "" : "  MISMATCH");
    }
}
