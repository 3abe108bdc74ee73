# Warnings are errors in the project's own code and in generated code.
option(NDGEN_WERROR "Treat warnings as errors" ON)

set(NDGEN_WARNING_FLAGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
    -Wformat=2 -Wundef)
if(NDGEN_WERROR)
  list(APPEND NDGEN_WARNING_FLAGS -Werror)
endif()

function(ndgen_warnings target)
  target_compile_options(${target} PRIVATE ${NDGEN_WARNING_FLAGS})
endfunction()
