// Reading a telephony provider's media-stream messages (twilio_messages.h, telnyx_messages.h): the
// JSON helpers both readers share, each bounded (every string has a limit) and each returning an
// error text instead of throwing, so that a reader is a sequence of checks. The texts name the
// field as the provider spells it. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace brisvox::server {

// A JSON string, as nlohmann writes it (invalid UTF-8 replaced, so that a peer's bytes never make
// the answer invalid JSON).
std::string json_quoted(std::string_view s);

// `s` as valid UTF-8 without control characters (JSON's escapes of them), for a log line.
std::string printable(const std::string& s);

// Reads the string field `key` of `obj` into `out`, at most `max` bytes; absent is an error only
// when `required`. `where` names `obj` in the error. Empty: fine.
std::string read_string(const nlohmann::json& obj, const char* key, std::string& out, std::size_t max, bool required,
                        std::string_view where);

// The object `key` of `j`, or null and `error`.
const nlohmann::json* object_field(const nlohmann::json& j, const char* key, std::string& error);

// A counter the providers send as a string of digits (sequence numbers, chunks, timestamps); a
// number is taken too, absent is fine. Only checked: brisvox does not use them.
std::string check_counter(const nlohmann::json& obj, const char* key, std::string_view where);

// An object of string parameters (`obj`.`key`, absent or null: none), at most `max_entries` of at
// most `max_bytes` a name or value, in the order sent.
std::string read_parameters(const nlohmann::json& obj, const char* key, std::size_t max_entries,
                            std::size_t max_bytes, std::vector<std::pair<std::string, std::string>>& out,
                            std::string_view where);

// Every key of `obj` but those in `skip`, as parameters in the order sent (jambonz's preamble,
// FreeSWITCH's metadata: the caller's keys sit flat beside the provider's): a string value as it is,
// another as its JSON text; at most `max_entries` of at most `max_bytes` a name or value.
std::string read_flat_parameters(const nlohmann::json& obj, std::initializer_list<std::string_view> skip,
                                 std::size_t max_entries, std::size_t max_bytes,
                                 std::vector<std::pair<std::string, std::string>>& out, std::string_view where);

// A DTMF event as jambonz's FreeSWITCH module writes it, {"event": "dtmf", "dtmf": "5", "duration":
// "1600"} (the values strings; duration in RTP timestamp units, only checked): the key into `digit`.
std::string read_dtmf_event(const nlohmann::json& obj, std::string& digit);

// A non-negative integer field (at most 1,000,000: rates and channel counts), required.
std::string read_count(const nlohmann::json& obj, const char* key, int& out, std::string_view where);

}  // namespace brisvox::server
