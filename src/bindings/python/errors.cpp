// brisvox::Error -> a Python exception: brisvox.Error, subclassed per ErrorCode, each also deriving
// from the builtin a Python caller would expect (bad arguments and audio are ValueErrors, a missing
// file an OSError, a timeout a TimeoutError), so `except ValueError` keeps working.
#include <Python.h>

#include <array>
#include <string>

#include "bindings.h"
#include "brisvox/error.h"

namespace brisvox::python {
namespace {

struct Kind {
  ErrorCode code;
  const char* name;  // the Python class name
  PyObject* builtin;  // the second base, or nullptr
  const char* doc;
};

constexpr std::size_t kCodes = static_cast<std::size_t>(ErrorCode::kLimitExceeded) + 1;
std::array<PyObject*, kCodes> g_classes{};  // owned by the module (its attributes)
PyObject* g_base = nullptr;

}  // namespace

void bind_errors(nb::module_& m) {
  g_base = PyErr_NewExceptionWithDoc("brisvox.Error",
                                     "A brisvox failure. `code` is the stable name of its kind (the "
                                     "server's and the CLI's: \"bad_audio\", \"io\", ...).",
                                     PyExc_Exception, nullptr);
  if (g_base == nullptr) throw nb::python_error();
  nb::handle(g_base).attr("code") = "unknown";  // the subclasses' say which; raised as itself never
  m.attr("Error") = nb::handle(g_base);
  const Kind kinds[] = {
      {ErrorCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError, "A parameter out of range or malformed."},
      {ErrorCode::kIo, "IoError", PyExc_OSError, "A file could not be opened or read (audio, model)."},
      {ErrorCode::kBadAudio, "BadAudioError", PyExc_ValueError, "Audio holds NaN/Inf, or a file is corrupt."},
      {ErrorCode::kUnsupportedAudio, "UnsupportedAudioError", PyExc_ValueError, "An audio format brisvox does not read."},
      {ErrorCode::kBadModel, "BadModelError", nullptr, "ONNX Runtime cannot load the model file."},
      {ErrorCode::kModelMismatch, "ModelMismatchError", nullptr, "The model loads but is not of the expected family."},
      {ErrorCode::kProviderUnavailable, "ProviderUnavailableError", nullptr, "An execution provider is missing."},
      {ErrorCode::kRuntime, "InferenceError", nullptr, "ONNX Runtime failed while running a model."},
      {ErrorCode::kInferenceTimeout, "InferenceTimeoutError", PyExc_TimeoutError, "A model run passed its deadline."},
      {ErrorCode::kOverloaded, "OverloadedError", nullptr, "The engine is at capacity: try again later."},
      {ErrorCode::kClosed, "ClosedError", nullptr, "The stream was finished or closed."},
      {ErrorCode::kInternal, "InternalError", nullptr, "A bug in brisvox: please report it with the message."},
      {ErrorCode::kLimitExceeded, "LimitExceededError", PyExc_ValueError, "An input exceeds a configured limit."},
  };
  for (const Kind& k : kinds) {
    const std::string qualified = std::string("brisvox.") + k.name;
    PyObject* bases = k.builtin != nullptr ? PyTuple_Pack(2, g_base, k.builtin) : PyTuple_Pack(1, g_base);
    if (bases == nullptr) throw nb::python_error();
    PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), k.doc, bases, nullptr);
    Py_DECREF(bases);
    if (cls == nullptr) throw nb::python_error();
    nb::handle(cls).attr("code") = nb::str(to_string(k.code).data(), to_string(k.code).size());
    m.attr(k.name) = nb::handle(cls);
    g_classes[static_cast<std::size_t>(k.code)] = cls;
  }
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      const auto i = static_cast<std::size_t>(e.code());
      PyErr_SetString(i < kCodes && g_classes[i] != nullptr ? g_classes[i] : g_base, e.what());
    }
  });
}

}  // namespace brisvox::python
