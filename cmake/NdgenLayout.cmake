# The install layout, as paths relative to the executables' folder, and the build tree's mirror of it.
#
# ndgen and ndrun find their headers, templates, specs, bundled library and libnd_dist.a from
# /proc/self/exe and these relative paths (gen/exe_dir.h), so an install works under any prefix and
# after the source and build trees are gone. In the build tree, bin/ holds ndgen and ndrun (their
# RUNTIME_OUTPUT_DIRECTORY), and ndgen_build_layout() puts beside it links to the source tree's headers,
# templates and specs and to the built libraries, at the same relative places.
#
# NDGEN_OPS_INSTALL_DIR: where the bundled kernel library is installed. The runtime finds a library's
# installed specs relative to the folder above the library's folder, so it is one level below the
# prefix: CMAKE_INSTALL_LIBDIR when that is one folder (lib, lib64), else lib.

if(CMAKE_INSTALL_LIBDIR MATCHES "^[^/]+$")
  set(NDGEN_OPS_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR})
else()
  set(NDGEN_OPS_INSTALL_DIR lib)
endif()
set(NDGEN_SPEC_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/ndgen/specs)
set(NDGEN_TEMPLATE_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/ndgen/templates)
set(NDGEN_HEADER_INSTALL_DIR ${CMAKE_INSTALL_INCLUDEDIR}/ndgen)

# A path relative to the prefix (or absolute), made relative to the installed bin folder.
function(_ndgen_from_bin out path)
  cmake_path(ABSOLUTE_PATH path BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE)
  set(bin "${CMAKE_INSTALL_BINDIR}")
  cmake_path(ABSOLUTE_PATH bin BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE)
  file(RELATIVE_PATH rel "${bin}" "${path}")
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()
_ndgen_from_bin(NDGEN_REL_INCLUDE ${NDGEN_HEADER_INSTALL_DIR})
_ndgen_from_bin(NDGEN_REL_TEMPLATES ${NDGEN_TEMPLATE_INSTALL_DIR})
_ndgen_from_bin(NDGEN_REL_SPECS ${NDGEN_SPEC_INSTALL_DIR})
_ndgen_from_bin(NDGEN_REL_OPS ${NDGEN_OPS_INSTALL_DIR}/libndgen_ops.so)
_ndgen_from_bin(NDGEN_REL_ND_DIST ${CMAKE_INSTALL_LIBDIR}/libnd_dist.a)

# Debug info and __FILE__ name the trees' files relative to them: the installed libraries and
# executables keep no path of this machine's trees. (The build tree last: it may lie inside the source
# tree, and the last matching map wins.)
include(CheckCCompilerFlag)
check_c_compiler_flag(-ffile-prefix-map=/a=b NDGEN_HAVE_FILE_PREFIX_MAP)
if(NDGEN_HAVE_FILE_PREFIX_MAP)
  add_compile_options(-ffile-prefix-map=${PROJECT_SOURCE_DIR}/=ndgen/ -ffile-prefix-map=${PROJECT_BINARY_DIR}/=ndgen-build/)
endif()

# ndgen_layout_defines(<target>): the relative paths, as NDGEN_REL_* string macros.
function(ndgen_layout_defines target)
  target_compile_definitions(${target} PRIVATE NDGEN_REL_INCLUDE="${NDGEN_REL_INCLUDE}"
    NDGEN_REL_TEMPLATES="${NDGEN_REL_TEMPLATES}" NDGEN_REL_SPECS="${NDGEN_REL_SPECS}"
    NDGEN_REL_OPS="${NDGEN_REL_OPS}" NDGEN_REL_ND_DIST="${NDGEN_REL_ND_DIST}")
  # Installed, it still finds libraries it links from outside the trees (libclang), not those of the build.
  set_target_properties(${target} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endfunction()

# ndgen_build_layout(): the build tree's mirror: links beside bin/ to the source tree's headers,
# templates and specs (now), and to the built libndgen_ops.so and libnd_dist.a (target ndgen_build_layout,
# which ndgen and ndrun depend on).
function(ndgen_build_layout)
  set(bin ${PROJECT_BINARY_DIR}/bin)
  foreach(pair "${NDGEN_REL_INCLUDE}=runtime/include" "${NDGEN_REL_TEMPLATES}=templates" "${NDGEN_REL_SPECS}=specs")
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 rel)
    list(GET pair 1 src)
    set(link "${bin}/${rel}")
    cmake_path(NORMAL_PATH link)
    cmake_path(GET link PARENT_PATH parent)
    file(MAKE_DIRECTORY "${parent}")
    if(IS_SYMLINK "${link}" OR EXISTS "${link}")
      file(REMOVE "${link}")
    endif()
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${src}" "${link}" SYMBOLIC)
  endforeach()
  set(ops "${bin}/${NDGEN_REL_OPS}")
  set(dist "${bin}/${NDGEN_REL_ND_DIST}")
  cmake_path(NORMAL_PATH ops)
  cmake_path(NORMAL_PATH dist)
  cmake_path(GET ops PARENT_PATH opsdir)
  cmake_path(GET dist PARENT_PATH distdir)
  file(MAKE_DIRECTORY "${opsdir}" "${distdir}")
  add_custom_target(ndgen_build_layout ALL
    COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:ndgen_ops> ${ops}
    COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:nd_dist> ${dist}
    COMMENT "ndgen: the build tree's install layout beside bin/"
    VERBATIM)
  add_dependencies(ndgen_build_layout ndgen_ops nd_dist)
  add_dependencies(ndrun ndgen_build_layout)
endfunction()
