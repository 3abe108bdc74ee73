/* A kernel library whose registry has another ABI version: the runtime must refuse it. */
#include "nd_accessor.h"

__attribute__((visibility("default"))) const nda_kernel_library nda_kernel_registry = {NDA_ABI_VERSION + 1, "fake", 0,
                                                                                       NULL};
