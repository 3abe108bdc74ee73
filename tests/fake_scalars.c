/* A kernel library whose op declares an axis list of an operand it does not have ("axes(y)" on an op
 * of x and out), as no ndgen would write: a launch must be refused with a message, never read past the
 * operands. */
#include "nd_accessor.h"

static void fake_kernel(const nda_core *core, const nda_args *args)
{
    (void)core, (void)args;
}

static const char *const operands[] = {"x", "out"};
static const char *const indices[] = {"...", "..."};
static const char *const dtypes[] = {"f32", "f32"};

static const nda_kernel_entry entries[] = {{.op = "fake_list",
                                            .variant = "generic",
                                            .symbol = "fake_list_generic",
                                            .fn = fake_kernel,
                                            .noperands = 2,
                                            .operands = operands,
                                            .indices = indices,
                                            .dtypes = dtypes,
                                            .noutputs = 1,
                                            .scalars = "axes: axes(y)"}};

static const nda_kernel_group group = {.spec = "fake", .nentries = 1, .entries = entries};
static const nda_kernel_group *const groups[] = {&group};

__attribute__((visibility("default"))) const nda_kernel_library nda_kernel_registry = {NDA_ABI_VERSION, "fake", 1,
                                                                                       groups};
