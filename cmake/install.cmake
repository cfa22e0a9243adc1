# `cmake --install` of the engine-facing libraries: the public headers under <prefix>/include/specplan, the
# static libraries, the bundled profiles under <prefix>/share/specplan/calib, and an exported CMake
# package, so that an engine does
#   find_package(specplan REQUIRED)
#   target_link_libraries(engine PRIVATE specplan::ops)   # <specplan/specplan.h>: specplan::Planner
# (specplan::planner and specplan::costmodel alone serve engines that price and plan by hand).
# Nothing here depends on Torch, gRPC or CUDA. tests/install/ builds a consumer against it.
include(CMakePackageConfigHelpers)

install(TARGETS specplan_util specplan_costmodel specplan_planner specplan_whatif specplan_ops
  EXPORT specplanTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The public surface: the entry headers of include/specplan/ (<specplan/cost.h>, <specplan/planner.h>,
# <specplan/tree.h>) and the project headers they include, found by scripts/public_headers.py;
# implementation headers (fitting, profile I/O, the composer, other policies, util/check.h) are
# not installed. Each lands under <prefix>/include/specplan/ at its path in the source tree.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/public_headers.py ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE SPECPLAN_PUBLIC_HEADERS OUTPUT_STRIP_TRAILING_WHITESPACE
  COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" SPECPLAN_PUBLIC_HEADERS "${SPECPLAN_PUBLIC_HEADERS}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/scripts/public_headers.py)
foreach(header ${SPECPLAN_PUBLIC_HEADERS})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${header})
  string(REGEX REPLACE "^include/specplan/" "" installed ${header})
  get_filename_component(dir ${installed} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/specplan/${dir})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/calib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/specplan/calib)

set(SPECPLAN_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/specplan)
install(EXPORT specplanTargets NAMESPACE specplan:: DESTINATION ${SPECPLAN_PACKAGE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/specplanConfig.cmake.in
  ${PROJECT_BINARY_DIR}/specplanConfig.cmake INSTALL_DESTINATION ${SPECPLAN_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/specplanConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/specplanConfig.cmake
  ${PROJECT_BINARY_DIR}/specplanConfigVersion.cmake DESTINATION ${SPECPLAN_PACKAGE_DIR})
