// The pieces of the module brisvox._brisvox, one per file, registered by module.cpp.
#pragma once

#include <nanobind/nanobind.h>

namespace brisvox::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);   // errors.cpp: brisvox.Error and one subclass per ErrorCode
void bind_engine(nb::module_& m);   // engine_bindings.cpp: Engine, Stream, Event
void bind_offline(nb::module_& m);  // offline_bindings.cpp: whole files, Smart Turn on samples

}  // namespace brisvox::python

namespace brisvox {
class Engine;
}

namespace brisvox::python {
// The brisvox::Engine of a brisvox.Engine object (engine_bindings.cpp). TypeError for another object.
Engine& engine_of(nb::handle py_engine);
}  // namespace brisvox::python
