# One CMake target per layer, and include paths that only point down.
#
# A layer's headers are reached through folders in the build tree that hold a link to that layer
# alone: build/layers/<layer>/public/brisvox/<layer> -> include/brisvox/<layer> (its public
# headers) and build/layers/<layer>/internal/<layer> -> src/<layer> (its internal ones). A target
# sees its own folders and, through target_link_libraries, those of the layers below it, so
# `#include "brisvox/engine/engine.h"` in src/models fails to compile: no include path of
# brisvox_models holds brisvox/engine. tests/layers proves it for each boundary.

# brisvox_layer_includes(<target> <layer> [EXPORT_INTERNAL])
#   <target> gets <layer>'s public headers (PUBLIC: for the layers above too) and its internal
#   headers (PRIVATE, or PUBLIC with EXPORT_INTERNAL when a layer above may use them, as models
#   use runtime/model_session.h).
function(brisvox_layer_includes target layer)
  cmake_parse_arguments(ARG "EXPORT_INTERNAL" "" "" ${ARGN})
  set(root "${PROJECT_BINARY_DIR}/layers/${layer}")
  set(public_dir "${PROJECT_SOURCE_DIR}/include/brisvox/${layer}")
  if(IS_DIRECTORY "${public_dir}")
    file(MAKE_DIRECTORY "${root}/public/brisvox")
    if(NOT EXISTS "${root}/public/brisvox/${layer}")
      file(CREATE_LINK "${public_dir}" "${root}/public/brisvox/${layer}" SYMBOLIC)
    endif()
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}/public>)
  endif()
  file(MAKE_DIRECTORY "${root}/internal")
  if(NOT EXISTS "${root}/internal/${layer}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/src/${layer}" "${root}/internal/${layer}" SYMBOLIC)
  endif()
  if(ARG_EXPORT_INTERNAL)
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}/internal>)
  else()
    target_include_directories(${target} PRIVATE ${root}/internal)
  endif()
endfunction()

# brisvox_library(<target> <layer> [EXPORT_INTERNAL] SOURCES ... DEPENDS ...)
#   A static library for one layer, with brisvox's warnings and the layer's include folders.
function(brisvox_library target layer)
  cmake_parse_arguments(ARG "EXPORT_INTERNAL" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  add_library(${target} STATIC ${ARG_SOURCES})
  set(export "")
  if(ARG_EXPORT_INTERNAL)
    set(export EXPORT_INTERNAL)
  endif()
  brisvox_layer_includes(${target} ${layer} ${export})
  target_link_libraries(${target} PUBLIC ${ARG_DEPENDS} PRIVATE ${ARG_PRIVATE_DEPENDS})
  target_compile_definitions(${target} PRIVATE BRISVOX_VERSION="${PROJECT_VERSION}")
  brisvox_set_warnings(${target})
endfunction()
