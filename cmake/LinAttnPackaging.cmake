#===- LinAttnPackaging.cmake - The installed LinAttn package -------------===//
#
# What other compilers link against: the installed CMake package
# (find_package(LinAttn CONFIG)), its imported targets, and the list of
# libraries the mlir-opt plugin is compiled from.
#
# The set of libraries is not written down anywhere: every library declared
# with add_mlir_*_library (and not DISABLE_INSTALL) is installed by AddMLIR
# into the `MLIRTargets` export set and recorded in the global property
# MLIR_EXPORTS. The functions below read that property back, so a library the
# project adds later is exported, linked by LinAttn::LinAttn and compiled into
# the plugin without touching this file. See the comment in lib/CMakeLists.txt.
#
#===----------------------------------------------------------------------===//

include(CMakePackageConfigHelpers)

set(LINATTN_INSTALL_PACKAGE_DIR "lib${LLVM_LIBDIR_SUFFIX}/cmake/linattn")

# Sets `out` to the project's own libraries declared with add_mlir_*_library,
# in declaration order. MLIR_EXPORTS also names the imported MLIR targets when
# MLIRConfig.cmake sets it, hence the IMPORTED filter.
function(linattn_get_mlir_libraries out)
  get_property(exports GLOBAL PROPERTY MLIR_EXPORTS)
  set(libs)
  foreach(lib IN LISTS exports)
    if(NOT TARGET ${lib})
      continue()
    endif()
    get_target_property(imported ${lib} IMPORTED)
    get_target_property(type ${lib} TYPE)
    if(NOT imported AND type MATCHES "^(STATIC|SHARED)_LIBRARY$")
      list(APPEND libs ${lib})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES libs)
  set(${out} ${libs} PARENT_SCOPE)
endfunction()

# Sets `out` to the C++ compiler libraries: everything above but the C API
# (MLIRLinAttnCAPI*), whose objects are built with hidden visibility for a
# C shared library and depend on MLIR's C API libraries, which libMLIR.so
# does not contain.
function(linattn_get_compiler_libraries out)
  linattn_get_mlir_libraries(libs)
  list(FILTER libs EXCLUDE REGEX "^MLIRLinAttnCAPI")
  set(${out} ${libs} PARENT_SCOPE)
endfunction()

# The name a library has under the LinAttn:: namespace: MLIRLinAttnDialect
# -> LinAttn::Dialect, MLIRLinAttnToLoops -> LinAttn::ToLoops.
function(linattn_export_name lib out)
  string(REGEX REPLACE "^MLIRLinAttn" "" name "${lib}")
  string(REGEX REPLACE "^LinAttn" "" name "${name}")
  set(${out} ${name} PARENT_SCOPE)
endfunction()

# Called once, at the end of the top-level CMakeLists.txt, after every
# library, tool and plugin is declared.
function(linattn_install_package)
  linattn_get_mlir_libraries(mlir_libs)
  linattn_get_compiler_libraries(compiler_libs)

  # add_mlir_library relies on directory-level include_directories(); an
  # imported target needs them on the target itself.
  set(exported)
  set(LINATTN_CONFIG_MLIR_LIBRARIES)
  foreach(lib IN LISTS mlir_libs)
    linattn_export_name(${lib} name)
    set_target_properties(${lib} PROPERTIES EXPORT_NAME ${name})
    target_include_directories(${lib} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
      $<INSTALL_INTERFACE:include>)
    if(NOT TARGET LinAttn::${name})
      add_library(LinAttn::${name} ALIAS ${lib})
    endif()
    list(APPEND exported ${name})
    list(APPEND LINATTN_CONFIG_MLIR_LIBRARIES ${name})
  endforeach()

  # LinAttn::LinAttn: dialect, conversions, transforms and pipelines; what a
  # compiler embedding LinAttn links. The C API and the runtime are separate.
  add_library(LinAttnAll INTERFACE)
  set_target_properties(LinAttnAll PROPERTIES EXPORT_NAME LinAttn)
  target_link_libraries(LinAttnAll INTERFACE ${compiler_libs})
  target_compile_features(LinAttnAll INTERFACE cxx_std_17)
  add_library(LinAttn::LinAttn ALIAS LinAttnAll)

  # The MLIR-free runtime comes from a plain add_library (runtime/ also
  # builds without MLIR), so it joins the export set by hand.
  set_target_properties(LinAttnNpy PROPERTIES EXPORT_NAME Npy)
  add_library(LinAttn::Npy ALIAS LinAttnNpy)
  set_target_properties(LinAttnPlugin PROPERTIES EXPORT_NAME Plugin)
  add_library(LinAttn::Plugin ALIAS LinAttnPlugin)
  # The CUDA runtime: LinAttn::CudaRuntime (static) and
  # LinAttn::CudaRuntimeShared (liblinattn_cuda_runtime.so, the mgpu* ABI for
  # compiled specs).
  set_target_properties(LinAttnCudaRuntime PROPERTIES EXPORT_NAME CudaRuntime)
  add_library(LinAttn::CudaRuntime ALIAS LinAttnCudaRuntime)
  set_target_properties(linattn_cuda_runtime PROPERTIES
    EXPORT_NAME CudaRuntimeShared)
  add_library(LinAttn::CudaRuntimeShared ALIAS linattn_cuda_runtime)

  install(TARGETS LinAttnAll LinAttnNpy LinAttnPlugin
      LinAttnCudaRuntime linattn_cuda_runtime
    EXPORT MLIRTargets
    ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT linattn-libraries
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT linattn-libraries)
  list(APPEND exported LinAttn Npy Plugin CudaRuntime CudaRuntimeShared)

  # The user-facing tools (not the test programs).
  foreach(tool linattn-opt linattn-run linattn-device-info)
    if(TARGET ${tool})
      install(TARGETS ${tool} RUNTIME DESTINATION bin COMPONENT linattn-tools)
    endif()
  endforeach()

  # Headers: the sources, the tablegen outputs they include (*.inc, as MLIR
  # installs its own) and the .td files, so that a consumer's ODS can build on
  # LinAttn's.
  install(DIRECTORY
      ${PROJECT_SOURCE_DIR}/include/LinAttn
      ${PROJECT_SOURCE_DIR}/include/LinAttn-c
      ${PROJECT_BINARY_DIR}/include/LinAttn
      ${PROJECT_BINARY_DIR}/include/LinAttn-c
    DESTINATION include COMPONENT linattn-headers
    FILES_MATCHING PATTERN "*.h" PATTERN "*.inc" PATTERN "*.td"
    PATTERN "CMakeFiles" EXCLUDE)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/linattn
    DESTINATION include COMPONENT linattn-headers
    FILES_MATCHING PATTERN "*.h")

  # The export set is AddMLIR's (see the top of this file); under our
  # namespace its targets read LinAttn::<EXPORT_NAME>.
  install(EXPORT MLIRTargets
    NAMESPACE LinAttn::
    FILE LinAttnTargets.cmake
    DESTINATION ${LINATTN_INSTALL_PACKAGE_DIR}
    COMPONENT linattn-cmake-exports)
  # The same targets for a build tree (LinAttn_DIR=<build>/lib/cmake/linattn).
  set(build_package_dir ${PROJECT_BINARY_DIR}/${LINATTN_INSTALL_PACKAGE_DIR})
  export(EXPORT MLIRTargets
    NAMESPACE LinAttn::
    FILE ${build_package_dir}/LinAttnTargets.cmake)

  # LinAttnConfig.cmake records the MLIR this build used: consumers must use
  # the same one (two MLIRs in a process means two sets of registries and
  # TypeIDs).
  set(LINATTN_CONFIG_MLIR_DIR "${MLIR_DIR}")
  set(LINATTN_CONFIG_LLVM_VERSION "${LLVM_PACKAGE_VERSION}")
  set(LINATTN_CONFIG_EXPORTED_TARGETS "${exported}")
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/LinAttnConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/LinAttnConfig.cmake
    INSTALL_DESTINATION ${LINATTN_INSTALL_PACKAGE_DIR})
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/LinAttnConfig.cmake.in
    ${build_package_dir}/LinAttnConfig.cmake
    INSTALL_DESTINATION ${LINATTN_INSTALL_PACKAGE_DIR}
    INSTALL_PREFIX ${PROJECT_BINARY_DIR})
  install(FILES ${PROJECT_BINARY_DIR}/cmake/LinAttnConfig.cmake
    DESTINATION ${LINATTN_INSTALL_PACKAGE_DIR}
    COMPONENT linattn-cmake-exports)
endfunction()
