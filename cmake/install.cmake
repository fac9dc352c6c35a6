# `cmake --install`: libquantpath.so with the public headers and quantpath/version.h, the CMake
# package (find_package(quantpath CONFIG) → quantpath::quantpath), a pkg-config file, the CLI,
# its bundled examples and its shell completions.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QUANTPATH_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/quantpath)
install(TARGETS quantpath_shared EXPORT quantpathTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/quantpath DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${QUANTPATH_GENERATED_INCLUDE}/quantpath/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/quantpath)
install(EXPORT quantpathTargets NAMESPACE quantpath:: DESTINATION ${QUANTPATH_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/quantpathConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/quantpathConfig.cmake
                              INSTALL_DESTINATION ${QUANTPATH_CMAKE_DIR})
# 0.x releases change the API between minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/quantpathConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/quantpathConfig.cmake
              ${PROJECT_BINARY_DIR}/quantpathConfigVersion.cmake
        DESTINATION ${QUANTPATH_CMAKE_DIR})

# pkg-config: the prefix found from the .pc file's own place, so `cmake --install --prefix` and a
# relocated prefix both work.
file(RELATIVE_PATH QUANTPATH_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${CMAKE_CURRENT_LIST_DIR}/quantpath.pc.in ${PROJECT_BINARY_DIR}/quantpath.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/quantpath.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET quantpath_cli)
  install(TARGETS quantpath_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # `quantpath plan` without a folder plans the bundled example, found beside the installed CLI.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/quantpath/examples)
  # Completions come from the installed CLI's own command definitions.
  install(CODE "
    foreach(shell bash zsh)
      execute_process(COMMAND \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/quantpath\"
                              completion \${shell}
                      OUTPUT_VARIABLE script RESULT_VARIABLE rc)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR \"quantpath completion \${shell} failed: \${rc}\")
      endif()
      if(shell STREQUAL bash)
        set(file \"${CMAKE_INSTALL_DATADIR}/bash-completion/completions/quantpath\")
      else()
        set(file \"${CMAKE_INSTALL_DATADIR}/zsh/site-functions/_quantpath\")
      endif()
      file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${file}\" \"\${script}\")
      message(STATUS \"Installing: \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${file}\")
    endforeach()")
endif()
