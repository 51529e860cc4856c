# Finds ONNX Runtime in BRISVOX_ORT_ROOT: any official release folder (include/ + lib/) or the
# one scripts/setup.sh unpacks into third_party/onnxruntime.
#
# Provides OnnxRuntime::OnnxRuntime, OnnxRuntime_LIBRARY_DIR and OnnxRuntime_VERSION (read from
# the C API header's ORT_API_VERSION: API 29 ships with ONNX Runtime 1.29).
find_path(OnnxRuntime_INCLUDE_DIR onnxruntime_cxx_api.h
  HINTS "${BRISVOX_ORT_ROOT}"
  PATH_SUFFIXES include include/onnxruntime include/onnxruntime/core/session
  NO_DEFAULT_PATH)
find_library(OnnxRuntime_LIBRARY onnxruntime
  HINTS "${BRISVOX_ORT_ROOT}" PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)

if(OnnxRuntime_INCLUDE_DIR AND EXISTS "${OnnxRuntime_INCLUDE_DIR}/onnxruntime_c_api.h")
  file(STRINGS "${OnnxRuntime_INCLUDE_DIR}/onnxruntime_c_api.h" _ort_api
       REGEX "^#define ORT_API_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" OnnxRuntime_API_VERSION "${_ort_api}")
  set(OnnxRuntime_VERSION "1.${OnnxRuntime_API_VERSION}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OnnxRuntime
  REQUIRED_VARS OnnxRuntime_LIBRARY OnnxRuntime_INCLUDE_DIR
  VERSION_VAR OnnxRuntime_VERSION
  FAIL_MESSAGE "ONNX Runtime not found in BRISVOX_ORT_ROOT='${BRISVOX_ORT_ROOT}'. Run scripts/setup.sh, or pass -DBRISVOX_ORT_ROOT=<folder of an official ONNX Runtime release with include/ and lib/>")

if(OnnxRuntime_FOUND AND NOT TARGET OnnxRuntime::OnnxRuntime)
  if(OnnxRuntime_API_VERSION LESS 17)
    message(FATAL_ERROR "ONNX Runtime API ${OnnxRuntime_API_VERSION} in ${BRISVOX_ORT_ROOT} is too old: brisvox needs 1.17 or newer (built and tested with 1.29)")
  endif()
  get_filename_component(OnnxRuntime_LIBRARY_DIR "${OnnxRuntime_LIBRARY}" DIRECTORY)
  add_library(OnnxRuntime::OnnxRuntime SHARED IMPORTED)
  set_target_properties(OnnxRuntime::OnnxRuntime PROPERTIES
    IMPORTED_LOCATION "${OnnxRuntime_LIBRARY}"
    IMPORTED_NO_SONAME FALSE
    INTERFACE_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}")
  # Treat ORT headers as system headers: their warnings are not ours.
  set_target_properties(OnnxRuntime::OnnxRuntime PROPERTIES
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${OnnxRuntime_INCLUDE_DIR}")
endif()
mark_as_advanced(OnnxRuntime_INCLUDE_DIR OnnxRuntime_LIBRARY)
