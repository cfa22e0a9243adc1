# `cmake --install` of the engine-facing libraries: headers under <prefix>/include/specplan, the
# static libraries, the bundled profiles under <prefix>/share/specplan/calib, and an exported CMake
# package, so that an engine does
#   find_package(specplan REQUIRED)
#   target_link_libraries(engine PRIVATE specplan::planner)   # pulls in specplan::costmodel
# Nothing here depends on Torch, gRPC or CUDA. tests/install/ builds a consumer against it.
include(CMakePackageConfigHelpers)

install(TARGETS specplan_util specplan_costmodel specplan_planner
  EXPORT specplanTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(component util costmodel planner)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${component}/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/specplan/${component}
    FILES_MATCHING PATTERN "*.h")
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
