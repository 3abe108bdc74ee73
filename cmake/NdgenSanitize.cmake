# NDGEN_SANITIZE selects sanitizers for every target of the build:
#   ""                  none (default)
#   "address,undefined" ASan + UBSan
#   "thread"            TSan, for the runtime's thread pool and launches
set(NDGEN_SANITIZE "" CACHE STRING "Sanitizers: empty, address,undefined, or thread")
if(NDGEN_SANITIZE)
  if(NOT NDGEN_SANITIZE MATCHES "^(address|undefined|thread)(,(address|undefined|thread))*$")
    message(FATAL_ERROR "NDGEN_SANITIZE=${NDGEN_SANITIZE}: expected a comma list of address, undefined, thread")
  endif()
  if(NDGEN_SANITIZE MATCHES "thread" AND NDGEN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "NDGEN_SANITIZE=${NDGEN_SANITIZE}: thread and address sanitizers cannot be combined")
  endif()
  add_compile_options(-fsanitize=${NDGEN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NDGEN_SANITIZE})
endif()
