# `cmake --install <build> --prefix P` and the Debian package (CPack): a relocatable layout
#   P/bin/brisvox                        the tool (RUNPATH $ORIGIN/../lib)
#   P/lib/libbrisvox_c.so*               the C API (RUNPATH $ORIGIN/../lib, i.e. its own folder)
#   P/lib/libonnxruntime.so.1            the ONNX Runtime it was built against
#   P/include/brisvox/brisvox.h          the C API header
#   P/lib/cmake/brisvox/                 find_package(brisvox): the imported target brisvox::c
#   P/lib/pkgconfig/brisvox.pc           pkg-config brisvox
#   P/share/brisvox/models, web          the bundled models (BRISVOX_INSTALL_MODELS) and the demo page
#   P/share/brisvox/serve.toml, brisvox.service   an example config and systemd unit
# The binaries find share/brisvox relative to themselves (src/base/install_dirs.cpp), so P can be
# moved; docs/INSTALL.md. Nothing here rebuilds anything: install and cpack copy what was built.
include(CMakePackageConfigHelpers)

set(BRISVOX_INSTALL_MODELS "silero;smart-turn" CACHE STRING
    "Model families copied into share/brisvox/models by install and the .deb: silero (VAD, 9 MB), smart-turn (8 MB), whisper (tiny.en, tiny.en-int8 and base-int8, 450 MB), piper (the voices under models/piper)")

set_target_properties(brisvox_c PROPERTIES EXPORT_NAME c)
target_include_directories(brisvox_c PUBLIC $<INSTALL_INTERFACE:include>)
if(TARGET brisvox_cli)
  install(TARGETS brisvox_cli RUNTIME DESTINATION bin)
endif()
# libbrisvox_c.so.0.1.0, its soname link .so.0 and the development link .so (-lbrisvox_c).
install(TARGETS brisvox_c EXPORT brisvoxTargets LIBRARY DESTINATION lib)
install(FILES "${PROJECT_SOURCE_DIR}/include/brisvox/brisvox.h" DESTINATION include/brisvox)

# ONNX Runtime under its soname (the release's libonnxruntime.so is the file, .so.1 a link to it).
file(REAL_PATH "${OnnxRuntime_LIBRARY}" _ort_file)
install(FILES "${_ort_file}" DESTINATION lib RENAME libonnxruntime.so.1)

# Models: only what BRISVOX_INSTALL_MODELS names; a file missing at install time fails it, naming it.
set(_m "${BRISVOX_MODELS_DIR}")
foreach(family IN LISTS BRISVOX_INSTALL_MODELS)
  if(family STREQUAL "silero")
    install(FILES "${_m}/silero_vad_v5.onnx" "${_m}/silero_vad_v5.flat.onnx" "${_m}/silero_vad_v6.onnx"
                  "${_m}/silero_vad_v6.flat.onnx" DESTINATION share/brisvox/models)
  elseif(family STREQUAL "smart-turn")
    install(FILES "${_m}/smart-turn-v3.2-cpu.onnx" "${_m}/smart-turn-v3.2-cpu.LICENSE"
            DESTINATION share/brisvox/models)
  elseif(family STREQUAL "whisper")
    install(DIRECTORY "${_m}/whisper-tiny.en" "${_m}/whisper-tiny.en-int8" "${_m}/whisper-base-int8"
            DESTINATION share/brisvox/models)
  elseif(family STREQUAL "piper")
    install(DIRECTORY "${_m}/piper" DESTINATION share/brisvox/models)
  else()
    message(FATAL_ERROR "BRISVOX_INSTALL_MODELS: unknown family '${family}' (silero, smart-turn, whisper, piper)")
  endif()
endforeach()
install(DIRECTORY "${PROJECT_SOURCE_DIR}/web/" DESTINATION share/brisvox/web)
install(FILES "${PROJECT_SOURCE_DIR}/packaging/serve.toml" "${PROJECT_SOURCE_DIR}/packaging/brisvox.service"
        DESTINATION share/brisvox)

# find_package(brisvox): brisvox::c, with paths relative to the config file (relocatable).
install(EXPORT brisvoxTargets NAMESPACE brisvox:: DESTINATION lib/cmake/brisvox FILE brisvoxTargets.cmake)
configure_package_config_file("${PROJECT_SOURCE_DIR}/packaging/brisvoxConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/packaging/brisvoxConfig.cmake"
                              INSTALL_DESTINATION lib/cmake/brisvox)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/packaging/brisvoxConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/packaging/brisvoxConfig.cmake"
              "${PROJECT_BINARY_DIR}/packaging/brisvoxConfigVersion.cmake" DESTINATION lib/cmake/brisvox)
# pkg-config: prefix from the .pc file's own place (${pcfiledir}), so the prefix may move too.
configure_file("${PROJECT_SOURCE_DIR}/packaging/brisvox.pc.in" "${PROJECT_BINARY_DIR}/packaging/brisvox.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/packaging/brisvox.pc" DESTINATION lib/pkgconfig)

# ---- The Debian package: cpack -G DEB --config <build>/CPackConfig.cmake ----------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME brisvox)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "brisvox maintainers <brisvox@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # brisvox_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION sound)
# Without the debug info of a RelWithDebInfo build (bin/brisvox: 170 MB -> 4 MB; the .deb 27 MB).
set(CPACK_STRIP_FILES ON)
# Depends from what the binaries link (dpkg-shlibdeps); the bundled ONNX Runtime is found in the
# package itself.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# (dpkg-shlibdeps runs in the staging folder: usr/lib is the package's lib/).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS usr/lib)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/packaging/deb/conffiles")
# /etc/brisvox/serve.toml and the unit in /usr/lib/systemd/system: only the package has them
# (an install into a prefix must not write /etc), so they are added to its staging folder.
# file(COPY), not file(INSTALL): CPack sets DESTDIR, which file(INSTALL) would add a second time.
set(CPACK_PRE_BUILD_SCRIPTS "${PROJECT_SOURCE_DIR}/packaging/deb/stage_system_files.cmake")
set(CPACK_BRISVOX_PACKAGING_DIR "${PROJECT_SOURCE_DIR}/packaging")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "espeak-ng")
include(CPack)
