# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# `cmake --install` and the MemWall CMake package (docs/embedding.md):
# headers (with the generated .inc files), libraries, the mlir-opt plugin,
# the tools, and MemWallConfig.cmake exporting them as MemWall:: targets.

include(CMakePackageConfigHelpers)

set(MEMWALL_VERSION ${PROJECT_VERSION})

set(MEMWALL_EXPORTED_LIBS
  MemWallSupport MemWallHardware MemWallReport MemWallDialect MemWallAnalysis
  MemWallTransforms MemWallModelGen MemWallTarget MemWallPipelines
  MemWallRegistration MemWallUpstreamCAPI MemWallCAPI MemWallOutputFile)
set(MEMWALL_CMAKE_DIR lib${LLVM_LIBDIR_SUFFIX}/cmake/MemWall)

foreach(lib ${MEMWALL_EXPORTED_LIBS})
  target_include_directories(${lib} INTERFACE $<INSTALL_INTERFACE:include>)
  target_compile_features(${lib} INTERFACE cxx_std_17)
endforeach()

# Installed binaries find libMLIR.so / libLLVM.so where they were linked.
set_property(TARGET memwall-opt memwall-gen memwall-compile
  APPEND PROPERTY INSTALL_RPATH "${LLVM_LIBRARY_DIR}")

install(TARGETS ${MEMWALL_EXPORTED_LIBS} memwall-opt memwall-gen memwall-compile
  EXPORT MemWallTargets
  ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
  LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX}
  RUNTIME DESTINATION bin)
install(TARGETS MemWallPlugin LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memwall
  ${PROJECT_SOURCE_DIR}/include/memwall-c
  DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
# memwall/Support/OutputFile.h includes the runtime's OutputFile.h.
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/memwall-runtime/OutputFile.h
  DESTINATION include/memwall-runtime)
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/memwall
  DESTINATION include
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT MemWallTargets
  NAMESPACE MemWall::
  DESTINATION ${MEMWALL_CMAKE_DIR})
string(REPLACE ";" " " MEMWALL_EXPORTED_LIBS "${MEMWALL_EXPORTED_LIBS}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/MemWallConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/MemWallConfig.cmake
  INSTALL_DESTINATION ${MEMWALL_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/MemWallConfigVersion.cmake
  VERSION ${MEMWALL_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/MemWallConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/MemWallConfigVersion.cmake
  DESTINATION ${MEMWALL_CMAKE_DIR})
