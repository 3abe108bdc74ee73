# FindLibClang: the libclang C API (clang-c/Index.h) and its resource folder.
#   LibClang::LibClang       imported target
#   LIBCLANG_RESOURCE_DIR    clang's resource folder (so stddef.h and friends are found when parsing)
# Debian puts each LLVM under /usr/lib/llvm-N; the newest one wins unless LIBCLANG_ROOT is set.
file(GLOB _llvm_roots LIST_DIRECTORIES true /usr/lib/llvm-*)
list(SORT _llvm_roots COMPARE NATURAL ORDER DESCENDING)
find_path(LIBCLANG_INCLUDE_DIR clang-c/Index.h HINTS ${LIBCLANG_ROOT}/include PATHS ${_llvm_roots} PATH_SUFFIXES include)
find_library(LIBCLANG_LIBRARY NAMES clang libclang HINTS ${LIBCLANG_ROOT}/lib PATHS ${_llvm_roots} PATH_SUFFIXES lib)

if(LIBCLANG_LIBRARY AND NOT LIBCLANG_RESOURCE_DIR)
  get_filename_component(_libdir "${LIBCLANG_LIBRARY}" DIRECTORY)
  file(GLOB _res LIST_DIRECTORIES true "${_libdir}/clang/*")
  list(SORT _res COMPARE NATURAL ORDER DESCENDING)
  list(GET _res 0 _res0)
  set(LIBCLANG_RESOURCE_DIR "${_res0}" CACHE PATH "libclang resource folder")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibClang REQUIRED_VARS LIBCLANG_LIBRARY LIBCLANG_INCLUDE_DIR LIBCLANG_RESOURCE_DIR)

if(LibClang_FOUND AND NOT TARGET LibClang::LibClang)
  add_library(LibClang::LibClang UNKNOWN IMPORTED)
  set_target_properties(LibClang::LibClang PROPERTIES IMPORTED_LOCATION "${LIBCLANG_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LIBCLANG_INCLUDE_DIR}")
endif()
