# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): adds to the .deb's staging folder the files only
# a system package has, outside its /usr prefix: /etc/brisvox/serve.toml (a conffile,
# packaging/deb/conffiles) and the systemd unit in /usr/lib/systemd/system. `cmake --install` into a
# prefix keeps them as examples under share/brisvox and never writes /etc.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
set(_stage "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT IS_DIRECTORY "${_stage}/usr/bin")
  message(FATAL_ERROR "stage_system_files.cmake: no usr/bin in the staging folder '${_stage}'")
endif()
file(COPY "${CPACK_BRISVOX_PACKAGING_DIR}/serve.toml" DESTINATION "${_stage}/etc/brisvox")
file(COPY "${CPACK_BRISVOX_PACKAGING_DIR}/brisvox.service" DESTINATION "${_stage}/usr/lib/systemd/system")
