// Pieces the writers of the formats share: a CSV field, an RTTM file id, a transcript's text.
#pragma once

#include <string>

namespace brisvox::formats {

// `s` as one CSV field: quoted (quotes doubled) when it holds a comma, a quote or a newline.
std::string csv_quote(const std::string& s);
// The RTTM file id of a path: its stem, spaces replaced (RTTM fields cannot hold them); "stdin"
// for "-".
std::string rttm_id(const std::string& file);
// `s` without the spaces, tabs and newlines around it (Whisper's texts start with a space).
std::string trimmed(const std::string& s);

}  // namespace brisvox::formats
