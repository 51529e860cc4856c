// Where an installed brisvox keeps its data: `cmake --install` (and the .deb) lay out
// <prefix>/bin/brisvox, <prefix>/lib/libbrisvox_c.so and <prefix>/share/brisvox/{models,web}, so
// the data is found relative to the binary that holds this code, wherever the prefix was moved.
#pragma once

#include <string>
#include <string_view>

namespace brisvox::detail {

// The folder of the binary that holds this code: the executable (/proc/self/exe), or the shared
// library (libbrisvox_c.so) it was linked into. Empty when it cannot be told.
std::string binary_dir();

// <binary_dir>/../share/brisvox/<name> (normalised), the folder an installed layout keeps <name>
// in; empty when binary_dir() is. Whether it exists is for the caller to check.
std::string installed_data_dir(std::string_view name);

}  // namespace brisvox::detail
