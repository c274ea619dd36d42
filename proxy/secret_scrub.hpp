// The real value of a secret in the forms a server may send it back in, turned into its sentinel in the same
// form. A pure function of the text: the termination stage (inspect.cpp) runs it over the responses of the
// hosts that hold a real value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cordon::proxy {

// Every occurrence of `value` in `text`, each character spelled literally, percent-encoded (`%2F`, `%2f`),
// JSON-escaped (`\/`, `\u002F`) or any mix of these, becomes `sentinel` spelled the same way; and every run
// of base64 (standard or URL alphabet, at any of the three byte alignments) that only `value`'s bytes
// determine becomes the run of `sentinel`'s. `sentinel` has `value`'s length; `text` keeps its length.
void scrub_secret(std::string& text, std::string_view value, std::string_view sentinel);

// One secret's forms, worked out once (the base64 runs of the value and the sentinel): what a stream of
// responses is scrubbed with, piece by piece. scrub() does what scrub_secret() does. The copy of the value it
// keeps is wiped when it goes.
class SecretForms {
  public:
    SecretForms(std::string_view value, std::string_view sentinel);
    ~SecretForms();
    SecretForms(SecretForms&&) = default;
    SecretForms& operator=(SecretForms&&) = default;
    SecretForms(const SecretForms&) = delete;
    SecretForms& operator=(const SecretForms&) = delete;
    void scrub(std::string& text) const;

  private:
    std::string value_, sentinel_;
    std::vector<std::pair<std::string, std::string>> base64_;  // the value's run -> the sentinel's
};

// The most bytes a form of a value of `size` bytes takes: how much of a stream to hold back between reads so
// that a form split across them is still found.
std::size_t longest_secret_form(std::size_t size);

}  // namespace cordon::proxy
