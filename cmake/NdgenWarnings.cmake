# Warnings in the project's own code, and in generated kernel libraries (see NdgenKernels.cmake).
# NDGEN_WERROR makes them errors: .ci/run and developers turn it on; it is off by default, so that a
# user building with another compiler version is not stopped by a warning it adds.
option(NDGEN_WERROR "Treat warnings as errors (CI and development)" OFF)

set(NDGEN_WARNING_FLAGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
    -Wformat=2 -Wundef)
if(NDGEN_WERROR)
  list(APPEND NDGEN_WARNING_FLAGS -Werror)
endif()

function(ndgen_warnings target)
  target_compile_options(${target} PRIVATE ${NDGEN_WARNING_FLAGS})
endfunction()
