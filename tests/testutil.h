/* testutil.h - checks that report where they failed and the seed that reproduces the case. */
#ifndef ND_TESTUTIL_H
#define ND_TESTUTIL_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_dist.h"

extern uint64_t test_seed;     /* the seed of the case being checked; printed on failure */
extern const char *test_case;  /* a description of that case, or NULL */
extern int test_failures;

#define CHECK(cond, ...)                                                                                   \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n  seed %" PRIu64 "%s%s\n  ", __FILE__, __LINE__,   \
                    #cond, test_seed, test_case ? ", case " : "", test_case ? test_case : "");             \
            fprintf(stderr, __VA_ARGS__);                                                                  \
            fputc('\n', stderr);                                                                           \
            if (++test_failures >= 10)                                                                     \
                exit(1);                                                                                   \
        }                                                                                                  \
    } while (0)

/* A call that must fail: rc -1, err's code want_code, and a message containing text. rc is read more
 * than once: pass a variable. Branch on codes, never on messages; the text checks the message says
 * what is wrong. */
#define CHECK_ERROR(rc, err, want_code, text)                                                              \
    CHECK((rc) == -1 && (err).code == (want_code) && strstr((err).msg, (text)) != NULL,                    \
          "want %s and '%s', got rc %d: %s '%s'", nd_errcode_name(want_code), (text), (int)(rc),          \
          (rc) ? nd_errcode_name((err).code) : "success", (rc) ? (err).msg : "")

/* splitmix64: small, fast, and the same on every platform. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

/* IEEE 754 binary16 written out from its definition, for references independent of nd_accessor.h's
 * conversions: the value of the bits h (infinities and NaN included), and the bits of the f16 nearest
 * to v, found by bisection over the finite values (ties to the even one; from 65520 on, infinity; a
 * NaN gives the quiet NaN 0x7e00 with v's sign). */
double test_f16_value(uint16_t h);
uint16_t test_f16_nearest(double v);

/* The exit status of a test program: prints "N passed, N failed" for the log. */
int test_finish(int64_t passed);

/* Runs one_case on cases seeded seed, seed+1, ...; argv may override: [cases [seed]]. Each case gets
 * its own generator state and a buffer for its description, both reported on failure. */
void test_run_cases(int argc, char **argv, int cases, uint64_t seed, void (*one_case)(uint64_t *rng, char *desc));

#endif
