# Install rules and the CMake package: `cmake --install build --prefix P`
# installs the deep500 command, the shared libraries, the public headers
# (under include/deep500, with the same paths as in the tree) and
# lib/cmake/deep500/deep500Config.cmake, so that a plugin or benchmark author
# writes only find_package(deep500 CONFIG REQUIRED) and links deep500::<layer>
# (docs/custom-operators.md). The build tree exports the same package, for
# -Ddeep500_DIR=<build dir> without installing.
include(CMakePackageConfigHelpers)

# Installed programs find the libraries beside them in P/lib; libraries find
# each other ($ORIGIN) and keep link directories outside the system ones.
set(CMAKE_INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}" "$ORIGIN")
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)

# The custom-operator C ABI alone (operators/custom_op_abi.h): all a C plugin
# needs. DEEP500_PLUGIN_BUILD_TYPE lets the header record the plugin's build
# type, which results then name.
add_library(deep500_custom_op_abi INTERFACE)
target_include_directories(deep500_custom_op_abi INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<INSTALL_INTERFACE:${DEEP500_INSTALL_INCLUDEDIR}>)
target_compile_definitions(deep500_custom_op_abi INTERFACE DEEP500_PLUGIN_BUILD_TYPE="$<CONFIG>")
set_target_properties(deep500_custom_op_abi PROPERTIES EXPORT_NAME custom_op_abi)
install(TARGETS deep500_custom_op_abi EXPORT deep500Targets)

function(deep500_install_package)
  install(TARGETS deep500 RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(TARGET deep500_libtorch)  # a dlopen'ed plugin: installed, not exported
    install(TARGETS deep500_libtorch LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
  # Beside the library as recipes/CMakeLists.txt expects it (deep500 plot).
  install(PROGRAMS scripts/plot_results.py DESTINATION ${CMAKE_INSTALL_DATADIR}/deep500)
  install(DIRECTORY deep metrics operators network training distributed validation frameworks
          DESTINATION ${DEEP500_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.h" PATTERN "examples" EXCLUDE)

  set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/deep500)
  install(EXPORT deep500Targets NAMESPACE deep500:: DESTINATION ${config_dir})
  set(DEEP500_ABI_INCLUDEDIR ${DEEP500_INSTALL_INCLUDEDIR})
  configure_package_config_file(cmake/deep500Config.cmake.in
    ${PROJECT_BINARY_DIR}/install-package/deep500Config.cmake
    INSTALL_DESTINATION ${config_dir} PATH_VARS DEEP500_ABI_INCLUDEDIR)
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/deep500ConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/install-package/deep500Config.cmake
                ${PROJECT_BINARY_DIR}/deep500ConfigVersion.cmake DESTINATION ${config_dir})

  # The same package in the build tree (headers from the source tree).
  export(EXPORT deep500Targets NAMESPACE deep500:: FILE ${PROJECT_BINARY_DIR}/deep500Targets.cmake)
  set(DEEP500_ABI_INCLUDEDIR ${PROJECT_SOURCE_DIR})
  configure_package_config_file(cmake/deep500Config.cmake.in ${PROJECT_BINARY_DIR}/deep500Config.cmake
    INSTALL_DESTINATION . INSTALL_PREFIX ${PROJECT_BINARY_DIR} PATH_VARS DEEP500_ABI_INCLUDEDIR)
endfunction()
