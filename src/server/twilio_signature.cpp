#include "server/twilio_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "brisvox/error.h"
#include "server/access_policy.h"
#include "server/base64.h"

namespace brisvox::server {
namespace {

// `url` with its scheme's default port toggled: added when absent, removed when present; nullopt
// for a URL without a scheme it knows or with another port.
std::optional<std::string> with_port_toggled(std::string_view url) {
  std::string_view port;
  for (auto [scheme, default_port] : {std::pair<std::string_view, std::string_view>{"wss://", "443"},
                                      {"https://", "443"}, {"ws://", "80"}, {"http://", "80"}}) {
    if (url.starts_with(scheme)) {
      port = default_port;
      const std::size_t host = scheme.size();
      const std::size_t end = std::min(url.find_first_of("/?", host), url.size());
      const std::string_view authority = url.substr(host, end - host);
      const std::size_t colon = authority.rfind(':');
      const bool bracketed = authority.find(']') != std::string_view::npos;
      const bool has_port = colon != std::string_view::npos && (!bracketed || colon > authority.find(']'));
      std::string out(url.substr(0, host));
      if (!has_port) {
        out.append(authority).append(":").append(port);
      } else if (authority.substr(colon + 1) == port) {
        out.append(authority.substr(0, colon));
      } else {
        return std::nullopt;
      }
      out.append(url.substr(end));
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string twilio_signature(std::string_view auth_token, std::string_view url,
                             std::vector<std::pair<std::string, std::string>> params) {
  std::sort(params.begin(), params.end());
  std::string data(url);
  for (const auto& [name, value] : params) data.append(name).append(value);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha1(), auth_token.data(), static_cast<int>(auth_token.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length) == nullptr) {
    throw Error(ErrorCode::kInternal, "HMAC-SHA1 failed (OpenSSL's libcrypto)");
  }
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

std::string twilio_request_url(std::string_view public_url, std::string_view host, std::string_view target) {
  std::string url = public_url.empty() ? "wss://" + std::string(host) : std::string(public_url);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url.append(target);
}

bool twilio_signature_valid(std::string_view auth_token, std::string_view url, std::string_view signature) {
  if (signature.empty()) return false;
  if (equal_constant_time(twilio_signature(auth_token, url), signature)) return true;
  const std::optional<std::string> other = with_port_toggled(url);
  return other && equal_constant_time(twilio_signature(auth_token, *other), signature);
}

}  // namespace brisvox::server
