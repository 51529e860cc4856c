// brisvox._brisvox: the compiled part of the Python package `brisvox` (python/brisvox wraps it and
// documents the public API; the stubs are python/brisvox/_brisvox.pyi).
#include "bindings.h"

NB_MODULE(_brisvox, m) {
  m.doc() = "brisvox's engine (C++), bound with nanobind. Use the package `brisvox`, not this module.";
  m.attr("__version__") = BRISVOX_VERSION;
  // Engines cached by the package live until the interpreter ends; their workers stop then.
  nanobind::set_leak_warnings(false);
  brisvox::python::bind_errors(m);
  brisvox::python::bind_engine(m);
  brisvox::python::bind_offline(m);
}
