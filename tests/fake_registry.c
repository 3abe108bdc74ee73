/* Kernel libraries whose registries lie, one way per value of LIE, as no ndgen would write them: the
 * runtime must refuse each at load with a message (test_kernel_load), never read past what is there.
 *   1 a group's entry count past its array     2 forty operands
 *   3 a dtype the runtime does not know        4 a shape class naming no operand
 *   5 no op name                               6 a specialized entry without signatures
 *   7 op 'add' from a spec of its own, beside the bundled library's 'add' (spec 'eltwise')
 *   8 a signature not as ndgen writes it (a short orientation name): two texts would be one key
 *   9 a partial kernel whose pattern is not its signature with the free fields starred
 *  10 a dtype in capitals ("F32"), which the dtype parser alone would take for f32
 *  11 a read kind past NDA_READS_KINDS */
#include "nd_accessor.h"

static void fake_kernel(const nda_core *core, const nda_args *args)
{
    (void)core, (void)args;
}

static const char *const operands[] = {"x", "out"};
static const char *const indices[] = {"...", "..."};
#if LIE == 3
static const char *const dtypes[] = {"f32", "f99"};
#elif LIE == 10
static const char *const dtypes[] = {"F32", "f32"};
#else
static const char *const dtypes[] = {"f32", "f32"};
#endif
#if LIE == 8
static const char *const signatures[] = {"f32 shape=4 page=4 shard=4 cores=(0,0)-(0,0) row round_robin l1",
                                         "f32 shape=4 page=4 shard=4 cores=(0,0)-(0,0) row round_robin l1"};
#else
static const char *const signatures[] = {"f32 shape=8 page=4 shard=4 cores=(0,0)-(1,0) row_major round_robin l1",
                                         "f32 shape=8 page=4 shard=4 cores=(0,0)-(1,0) row_major round_robin l1"};
#endif
#if LIE == 9
static const char *const patterns[] = {"f32 shape=* page=4 shard=2 cores=(0,0)-(1,0) row_major round_robin l1",
                                       "f32 shape=* page=4 shard=4 cores=(0,0)-(1,0) row_major round_robin l1"};
static const int classes[] = {0, 0};
#else
static const char *const patterns[] = {"f32 *", "f32 *"};
static const int classes[] = {0, 5};
#endif

static const nda_kernel_entry entries[] = {{
#if LIE == 5
    .op = NULL,
#elif LIE == 7
    .op = "add",
#else
    .op = "fake_lie",
#endif
#if LIE == 6
    .variant = "specialized",
#elif LIE == 8 || LIE == 9
    .variant = "specialized",
    .signatures = signatures,
#else
    .variant = "generic",
#endif
    .symbol = "fake_lie_generic",
    .fn = fake_kernel,
#if LIE == 2
    .noperands = 40,
#else
    .noperands = 2,
#endif
    .operands = operands,
    .indices = indices,
    .dtypes = dtypes,
    .noutputs = 1,
#if LIE == 11
    .reads = NDA_READS_COUNT + 7,
#endif
#if LIE == 4 || LIE == 9
    .fixed = "pattern",
    .patterns = patterns,
    .shape_classes = classes,
#endif
}};

#if LIE == 1
static const nda_kernel_group group = {.spec = "fake", .nentries = 100000, .entries = entries};
#else
static const nda_kernel_group group = {.spec = "fake", .nentries = 1, .entries = entries};
#endif
static const nda_kernel_group *const groups[] = {&group};

__attribute__((visibility("default"))) const nda_kernel_library nda_kernel_registry = {NDA_ABI_VERSION, "fake", 1,
                                                                                       groups};
