/*
 * limit.c - what a row's limit is and when its numbers can be believed, as plain functions of
 * timings (tests/test_limit.c drives them with synthetic ones).
 *
 * The limit is a ceiling: the best rate that anything moving the same bytes (or doing the same
 * multiply-adds) reached in the same rounds and cache state: the probes implementing the row's access
 * pattern, the plain loop and every peer library doing the op itself. None of them can beat the
 * machine, so a limit below any of them would not be a ceiling; a kernel above the limit means a probe
 * is missing, and is reported as a FAULT, never as a result.
 *
 * A median is believed when its 95% confidence interval is tight: by order statistics (no assumption
 * on the distribution of times), the interval between the sorted times of ranks n/2 -+ 0.98 sqrt(n)
 * covers the true median with about 95% probability; tight means within NR_TIGHT of the median on
 * either side. Below 8 rounds there is no such interval.
 */
#include <math.h>
#include <string.h>

#include "ndrun.h"

void nr_ceiling_add(nr_ceiling *c, const char *name, double rate)
{
    if (!(rate > 0) || !isfinite(rate) || c->n == NR_MAX_CANDIDATES)
        return;
    snprintf(c->name[c->n], sizeof c->name[c->n], "%s", name);
    c->rate[c->n] = rate;
    if (c->n == 0 || rate > c->rate[c->best])
        c->best = c->n;
    c->n++;
}

double nr_ceiling_rate(const nr_ceiling *c)
{
    return c->n ? c->rate[c->best] : 0;
}

const char *nr_ceiling_name(const nr_ceiling *c)
{
    return c->n ? c->name[c->best] : "not measured";
}

int nr_ceiling_check(const nr_ceiling *c, const char *who, double rate, nd_error *err)
{
    if (!(rate > 0) || !isfinite(rate) || rate <= nr_ceiling_rate(c))
        return 0;
    return nd_failc(err, ND_EINVAL, "the limit (%s, %.4g) is below %s (%.4g) in the same rounds: a limit must be the "
                    "best rate of anything doing the same work; this is a fault of ndrun's limit logic",
                    nr_ceiling_name(c), nr_ceiling_rate(c), who, rate);
}

bool nr_median_tight(const double *sorted, int n, double *half_width)
{
    *half_width = INFINITY;
    if (n < 8)
        return false;
    double h = 0.98 * sqrt((double)n);
    int lo = (int)floor(n / 2.0 - h), hi = (int)ceil(n / 2.0 + h);
    lo = lo < 0 ? 0 : lo;
    hi = hi > n - 1 ? n - 1 : hi;
    double med = sorted[n / 2];
    if (!(med > 0))
        return false;
    *half_width = fmax(med - sorted[lo], sorted[hi] - med) / med;
    return *half_width <= NR_TIGHT;
}

nr_verdict nr_judge(double rate, double limit, bool tight)
{
    if (!(limit > 0) || !isfinite(limit) || !(rate > 0))
        return NR_NOT_MEASURED;
    if (!tight)
        return NR_NOISY;
    return 100 * rate / limit > NR_FAULT_PERCENT ? NR_FAULT : NR_BELIEVED;
}

bool nr_could_be_limit(double rate, double best)
{
    return rate >= 0.9 * best;
}

bool nr_sum_intervals(const double *median, const double *half, int n, double *sum_median, double *sum_half)
{
    double m = 0, h = 0;
    for (int i = 0; i < n; ++i)
        m += median[i], h += isfinite(half[i]) ? median[i] * half[i] : INFINITY; /* not 0 x inf */
    *sum_median = m;
    *sum_half = m > 0 ? h / m : INFINITY;
    return *sum_half <= NR_TIGHT;
}

int nr_pick_fastest(const double *median, const double *half, const bool *tight, int n, bool *tie)
{
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (median[i] < median[best])
            best = i;
    int pick = best;
    *tie = false;
    for (int i = 0; i < n; ++i) { /* a loose interval's lower bound says nothing: its median must reach */
        double low = tight[i] ? median[i] * (1 - half[i]) : median[i];
        bool ties = i != best && low <= median[best] * (1 + half[best]);
        *tie |= ties;
        if (ties && i < pick)
            pick = i;
    }
    return pick;
}
