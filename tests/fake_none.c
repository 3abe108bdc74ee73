/* A shared library with no kernel registry at all. */
__attribute__((visibility("default"))) int not_a_kernel_library = 1;
