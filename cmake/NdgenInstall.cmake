# install: the ndgen command, the libraries and their headers, and a package config, so another
# CMake project can find_package(ndgen) and call ndgen_add_kernels().
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ndgen nd_dist nd_accessor nd_runtime EXPORT ndgenTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ndgen)
install(FILES runtime/include/nd_dist.h runtime/include/nd_accessor.h runtime/include/nd_runtime.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ndgen)
install(DIRECTORY runtime/include/nd_dist/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ndgen/nd_dist)
install(TARGETS ndgen_ops LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/ndgen)
install(DIRECTORY templates/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ndgen/templates)
install(EXPORT ndgenTargets NAMESPACE ndgen:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen)

configure_package_config_file(cmake/ndgenConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ndgenConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ndgenConfigVersion.cmake
  cmake/NdgenKernels.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ndgen)
