// Proxy authentication (--auth-token): HTTP `Proxy-Authorization: Basic` and SOCKS5 username/password, both
// accepted when the password equals the token (the user name is free, for logs). Comparisons take constant
// time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cordon::proxy {

std::optional<std::string> base64_decode(std::string_view text);
std::string base64_encode(std::string_view data);
bool token_matches(std::string_view given, std::string_view token);
// True when `header` (the Proxy-Authorization value) carries Basic credentials whose password is `token`.
bool basic_auth_ok(std::string_view header, std::string_view token);

inline constexpr const char* kProxyAuthenticate = "Basic realm=\"cordon\"";

}  // namespace cordon::proxy
