#include "server/peer_json.h"

#include <fmt/format.h>

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

// nlohmann's own DOM builder, with a depth check in front of every object and array it opens.
class BoundedSax {
 public:
  explicit BoundedSax(Json& root) : dom_(root, /*allow_exceptions=*/false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool key(Json::string_t& v) { return dom_.key(v); }
  bool start_object(std::size_t n) { return deeper() && dom_.start_object(n); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return deeper() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  std::string& error() { return error_; }

 private:
  bool deeper() {
    if (++depth_ <= kMaxPeerJsonDepth) return true;
    error_ = fmt::format("JSON nested deeper than {} levels", kMaxPeerJsonDepth);
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  int depth_ = 0;
  std::string error_;
};

}  // namespace

PeerJson parse_peer_json(std::string_view text) {
  PeerJson out;
  BoundedSax sax(out.value);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::detail::input_format_t::json,
                                  /*strict=*/true);
  if (!ok || out.value.is_discarded()) {
    out.error = sax.error().empty() ? "not valid JSON" : std::move(sax.error());
    out.value = Json(nlohmann::json::value_t::discarded);
  }
  return out;
}

}  // namespace brisvox::server
