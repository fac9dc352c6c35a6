// Where JSON text first breaks RFC 8259's grammar, for the parse error's line and column: simdjson
// says what kind of error it met, not where. Runs only after a failed parse; recursion is bounded
// by the depth limit the parse used.
#include <optional>
#include <string>
#include <string_view>

#include "src/base/json_dom.h"

namespace quantpath::json_internal {
namespace {

class SyntaxScanner {
 public:
  SyntaxScanner(std::string_view text, int max_depth) : t_(text), max_depth_(max_depth) {}

  std::optional<JsonSyntaxError> Scan() {
    SkipSpace();
    if (!Value(0)) return too_deep_ ? std::nullopt : error_;
    SkipSpace();
    if (i_ < t_.size()) {
      Fail("text after the end of the JSON document");
      return error_;
    }
    return std::nullopt;
  }

 private:
  bool Fail(std::string_view what) {
    if (!error_) error_ = JsonSyntaxError{i_, std::string(what)};
    return false;
  }
  bool AtEnd() const { return i_ >= t_.size(); }
  void SkipSpace() {
    while (!AtEnd() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool Digits() {
    const size_t start = i_;
    while (!AtEnd() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    return i_ > start;
  }
  bool IsHex(char c) const {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  bool String() {
    const size_t start = i_;
    ++i_;  // the opening quote
    while (!AtEnd()) {
      const unsigned char c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return Fail("a control character inside a string (escape it)");
      if (c == '\\') {
        ++i_;
        if (AtEnd()) break;
        const char e = t_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (i_ + k >= t_.size() || !IsHex(t_[i_ + k])) {
              return Fail("\\u needs four hexadecimal digits");
            }
          }
          i_ += 4;
        } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
          return Fail("an invalid escape in a string");
        }
      }
      ++i_;
    }
    i_ = start;
    return Fail("a string that does not end");
  }

  bool Number() {
    if (t_[i_] == '-') ++i_;
    if (!AtEnd() && t_[i_] == '0') {
      ++i_;
    } else if (!Digits()) {
      return Fail("an invalid number");
    }
    if (!AtEnd() && t_[i_] == '.') {
      ++i_;
      if (!Digits()) return Fail("an invalid number (digits must follow '.')");
    }
    if (!AtEnd() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (!AtEnd() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (!Digits()) return Fail("an invalid number (digits must follow the exponent)");
    }
    return true;
  }

  bool Word(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return Fail("expected a value");
    i_ += word.size();
    return true;
  }

  // An object or array body after its opening bracket.
  bool Container(bool object, int depth) {
    const char close = object ? '}' : ']';
    ++i_;
    SkipSpace();
    if (!AtEnd() && t_[i_] == close) {
      ++i_;
      return true;
    }
    while (true) {
      if (object) {
        if (AtEnd() || t_[i_] != '"') return Fail("expected a key in double quotes");
        if (!String()) return false;
        SkipSpace();
        if (AtEnd() || t_[i_] != ':') return Fail("expected ':' after the key");
        ++i_;
        SkipSpace();
      }
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (AtEnd()) return Fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
      if (t_[i_] == close) {
        ++i_;
        return true;
      }
      if (t_[i_] != ',') return Fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
      ++i_;
      SkipSpace();
    }
  }

  bool Value(int depth) {
    if (AtEnd()) return Fail("expected a value, found the end of the file");
    const char c = t_[i_];
    if (c == '{' || c == '[') {
      if (depth >= max_depth_) {
        too_deep_ = true;  // the depth limit's own message says that
        return false;
      }
      return Container(c == '{', depth);
    }
    if (c == '"') return String();
    if (c == '-' || (c >= '0' && c <= '9')) return Number();
    if (c == 't') return Word("true");
    if (c == 'f') return Word("false");
    if (c == 'n') return Word("null");
    return Fail("expected a value");
  }

  std::string_view t_;
  size_t i_ = 0;
  int max_depth_;
  std::optional<JsonSyntaxError> error_;
  bool too_deep_ = false;
};

}  // namespace

std::optional<JsonSyntaxError> FindJsonSyntaxError(std::string_view text, int max_depth) {
  return SyntaxScanner(text, max_depth).Scan();
}

std::string JsonErrorLocation(std::string_view file, std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace quantpath::json_internal
