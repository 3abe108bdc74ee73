# install: everything a user needs, under the prefix alone: the ndgen and ndrun commands, the headers
# and libraries, the bundled kernel library with its specs and templates, a CMake package
# (find_package(ndgen), ndgen_add_kernels()) and a pkg-config file (ndgen.pc). Nothing installed names
# the build or source tree: ndgen and ndrun find their files relative to themselves (NdgenLayout.cmake),
# the package and ndgen.pc relative to their own folders, and the bundled library records its specs
# and templates relative to the prefix. tests/test_install.sh checks it.
include(CMakePackageConfigHelpers)

install(TARGETS ndgen ndrun nd_dist nd_accessor nd_runtime nd_files EXPORT ndgenTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${NDGEN_HEADER_INSTALL_DIR})
if(TARGET nd_runtime_mpi) # the library alone (link it with MPI yourself): the package needs no MPI
  install(TARGETS nd_runtime_mpi ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
file(GLOB ndgen_headers ${PROJECT_SOURCE_DIR}/runtime/include/*.h)
install(FILES ${ndgen_headers} DESTINATION ${NDGEN_HEADER_INSTALL_DIR})
install(DIRECTORY runtime/include/nd_dist/ DESTINATION ${NDGEN_HEADER_INSTALL_DIR}/nd_dist FILES_MATCHING PATTERN "*.h")
install(TARGETS ndgen_ops LIBRARY DESTINATION ${NDGEN_OPS_INSTALL_DIR})
install(DIRECTORY templates/ DESTINATION ${NDGEN_TEMPLATE_INSTALL_DIR})
install(DIRECTORY specs/ DESTINATION ${NDGEN_SPEC_INSTALL_DIR} PATTERN "CMakeLists.txt" EXCLUDE)
install(EXPORT ndgenTargets NAMESPACE ndgen:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen)

configure_package_config_file(cmake/ndgenConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen
  PATH_VARS NDGEN_HEADER_INSTALL_DIR NDGEN_TEMPLATE_INSTALL_DIR NDGEN_SPEC_INSTALL_DIR NDGEN_OPS_INSTALL_DIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ndgenConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfigVersion.cmake
  cmake/NdgenKernels.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen)

# ndgen.pc: the prefix relative to the file's own folder (${pcfiledir}), so the install can move.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
cmake_path(ABSOLUTE_PATH pc_dir BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE OUTPUT_VARIABLE pc_full)
file(RELATIVE_PATH NDGEN_PC_TO_PREFIX "${pc_full}" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" NDGEN_PC_TO_PREFIX "${NDGEN_PC_TO_PREFIX}")
foreach(v BINDIR LIBDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${v}}")
    message(FATAL_ERROR "ndgen: CMAKE_INSTALL_${v} ${CMAKE_INSTALL_${v}} must be relative to the prefix, "
                        "so that the installed ndgen, ndrun and ndgen.pc find their files wherever it is")
  endif()
endforeach()
set(CMAKE_DL_LIBS_FLAG "")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND CMAKE_DL_LIBS_FLAG " -l${lib}")
endforeach()
string(STRIP "${CMAKE_DL_LIBS_FLAG}" CMAKE_DL_LIBS_FLAG)
configure_file(cmake/ndgen.pc.in ${CMAKE_CURRENT_BINARY_DIR}/ndgen.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ndgen.pc DESTINATION ${pc_dir})
