// simdjson's DOM parse with quantpath's JSON rules, and its conversion into the owned Json tree.
// simdjson keeps object members in document order and accepts duplicate keys, so duplicates are
// rejected while converting.
#include "src/base/json_dom.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "fmt/format.h"

namespace quantpath {
namespace {

// Copies simdjson's tree, counting values against the limit: the owned tree costs over a hundred
// bytes per value, so the count bounds memory where the byte limit alone would not.
struct Converter {
  std::string_view file;
  int64_t values_left = 0;
  int64_t max_values = 0;

  Status Convert(simdjson::dom::element element, const std::string& pointer, Json* out) {
    if (--values_left < 0) {
      return InvalidInput(fmt::format("{}: more than {} JSON values (QUANTPATH_MAX_JSON_VALUES)",
                                      file, max_values));
    }
    switch (element.type()) {
      case simdjson::dom::element_type::OBJECT: {
        std::vector<Json::Member> members;
        std::unordered_set<std::string_view> seen;
        for (auto field : simdjson::dom::object(element)) {
          std::string child = JsonPointerChild(pointer, field.key);
          if (!seen.insert(field.key).second) {
            return json_internal::DuplicateKeyError(file, pointer, field.key);
          }
          Json value;
          QP_RETURN_IF_ERROR(Convert(field.value, child, &value));
          members.emplace_back(std::string(field.key), std::move(value));
        }
        *out = Json::Object(std::move(members));
        break;
      }
      case simdjson::dom::element_type::ARRAY: {
        std::vector<Json> items;
        size_t index = 0;
        for (auto item : simdjson::dom::array(element)) {
          Json value;
          QP_RETURN_IF_ERROR(Convert(item, pointer + "/" + std::to_string(index++), &value));
          items.push_back(std::move(value));
        }
        *out = Json::Array(std::move(items));
        break;
      }
      case simdjson::dom::element_type::INT64:
        *out = Json::Int(int64_t(element));
        break;
      case simdjson::dom::element_type::UINT64:
        // Above INT64_MAX: no config field needs that range exactly.
        *out = Json::Double(static_cast<double>(uint64_t(element)));
        break;
      case simdjson::dom::element_type::DOUBLE:
        *out = Json::Double(double(element));
        break;
      case simdjson::dom::element_type::STRING:
        *out = Json::String(std::string(std::string_view(element)));
        break;
      case simdjson::dom::element_type::BOOL:
        *out = Json::Bool(bool(element));
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        *out = Json::Null();
        break;
    }
    out->set_pointer(pointer);
    return {};
  }
};

// simdjson rejects NaN / Infinity and integers beyond 64 bits without saying where. Python's
// json module writes all three, so find the first such token outside strings and name its
// pointer. Only used to explain a parse failure, on text whose nesting is within `max_depth`
// (deeper text failed for that reason), so the stack and the pointer stay small.
struct BadToken {
  std::string pointer;
  std::string token;
  bool integer = false;  // an integer outside 64 bits, else NaN / Infinity
};

bool OutsideInt64Range(std::string_view digits) {
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.remove_prefix(1);
  while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
  // simdjson keeps integers up to UINT64_MAX (positive) and down to INT64_MIN.
  const std::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
  if (digits.size() != limit.size()) return digits.size() > limit.size();
  return digits > limit;
}

std::optional<BadToken> FindBadToken(std::string_view text, int max_depth) {
  struct Frame {
    bool object;
    std::string key;
    size_t index = 0;
  };
  std::vector<Frame> stack;
  bool expecting_key = false;
  auto pointer = [&stack] {
    std::string p;
    for (const Frame& f : stack) {
      p = f.object ? JsonPointerChild(p, f.key) : p + "/" + std::to_string(f.index);
    }
    return p;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      std::string s;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
        if (i < text.size()) s += text[i];
      }
      if (expecting_key && !stack.empty()) stack.back().key = s;
    } else if (c == '{' || c == '[') {
      if (static_cast<int>(stack.size()) >= max_depth) return std::nullopt;
      stack.push_back({c == '{', "", 0});
      expecting_key = c == '{';
    } else if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      expecting_key = false;
    } else if (c == ':') {
      expecting_key = false;
    } else if (c == ',') {
      if (!stack.empty()) {
        stack.back().index++;
        expecting_key = stack.back().object;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      for (std::string_view t : {"-Infinity"}) {
        if (text.substr(i, t.size()) == t) return BadToken{pointer(), std::string(t)};
      }
      size_t end = i + 1;
      while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
      const bool fraction =
          end < text.size() && (text[end] == '.' || text[end] == 'e' || text[end] == 'E');
      const std::string_view digits = text.substr(i, end - i);
      if (!fraction && OutsideInt64Range(digits)) {
        return BadToken{pointer(), std::string(digits), true};
      }
      i = end - 1;
    } else {
      for (std::string_view t : {"NaN", "Infinity"}) {
        if (text.substr(i, t.size()) == t) return BadToken{pointer(), std::string(t)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

namespace json_internal {

static_assert(simdjson::SIMDJSON_PADDING <= kReadFilePadding);

Result<simdjson::dom::element> DomParser::Parse(std::string_view text, size_t readable,
                                                std::string_view file, const JsonLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_bytes) {
    return InvalidInput(fmt::format("{}: {} bytes of JSON, over the limit of {} bytes", file,
                                    text.size(), limits.max_bytes));
  }
  // simdjson stops at the depth limit itself, so over-deep text costs nothing more to reject
  // (simdjson counts the document itself as a level).
  const size_t depth = static_cast<size_t>(limits.max_depth) + 1;
  if ((parser_.capacity() < text.size() || parser_.max_depth() != depth) &&
      parser_.allocate(std::max<size_t>(text.size(), 1), depth) != simdjson::SUCCESS) {
    return InvalidInput(fmt::format("{}: out of memory for {} bytes of JSON", file, text.size()));
  }
  const char* data = text.data();
  if (readable < text.size() + simdjson::SIMDJSON_PADDING) {
    padded_.resize(text.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(padded_.data(), text.data(), text.size());
    data = padded_.data();
  }
  simdjson::dom::element root;
  auto error = parser_.parse(data, text.size(), false).get(root);
  if (error == simdjson::DEPTH_ERROR) {
    return InvalidInput(
        fmt::format("{}: JSON nested deeper than {} levels (QUANTPATH_MAX_JSON_DEPTH)", file,
                    limits.max_depth));
  }
  if (error) {
    if (std::optional<BadToken> bad = FindBadToken(text, limits.max_depth)) {
      if (bad->integer) {
        return InvalidInput(fmt::format("{}#{}: integer {} out of range (64 bits)", file,
                                        bad->pointer, bad->token));
      }
      return InvalidInput(fmt::format("{}#{}: {} is not valid JSON (write null or a finite number)",
                                      file, bad->pointer, bad->token));
    }
    if (std::optional<JsonSyntaxError> syntax = FindJsonSyntaxError(text, limits.max_depth)) {
      const size_t at = std::min(syntax->offset, text.size());
      std::string found;
      if (at < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[at]);
        found = c >= 0x20 && c < 0x7F ? fmt::format(" (found '{}')", text[at])
                                      : fmt::format(" (found byte 0x{:02X})", c);
      }
      return InvalidInput(fmt::format("{}: not valid JSON: {}{}", JsonErrorLocation(file, text, at),
                                      syntax->what, found));
    }
    return InvalidInput(
        fmt::format("{}: not valid JSON ({})", file, simdjson::error_message(error)));
  }
  return root;
}

Result<Json> ToOwnedJson(simdjson::dom::element element, std::string_view file,
                         const std::string& pointer, const JsonLimits& limits) {
  Converter converter{file, limits.max_values, limits.max_values};
  Json out;
  QP_RETURN_IF_ERROR(converter.Convert(element, pointer, &out));
  return out;
}

std::string_view DomTypeName(simdjson::dom::element element) {
  switch (element.type()) {
    case simdjson::dom::element_type::OBJECT:
      return "object";
    case simdjson::dom::element_type::ARRAY:
      return "array";
    case simdjson::dom::element_type::INT64:
      return "integer";
    case simdjson::dom::element_type::UINT64:  // converted to a double, as ParseJson does
    case simdjson::dom::element_type::DOUBLE:
      return "number";
    case simdjson::dom::element_type::STRING:
      return "string";
    case simdjson::dom::element_type::BOOL:
      return "boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
  }
  return "?";
}

Status DuplicateKeyError(std::string_view file, std::string_view object_pointer,
                         std::string_view key) {
  return InvalidInput(
      fmt::format("{}#{}: duplicate key \"{}\"", file, JsonPointerChild(object_pointer, key), key));
}

}  // namespace json_internal

Result<Json> ParseJson(std::string_view text, std::string_view file) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  return ParseJson(text, file, limits.json);
}

Result<Json> ParseJson(std::string_view text, std::string_view file, const JsonLimits& limits) {
  json_internal::DomParser parser;
  QP_ASSIGN_OR_RETURN(simdjson::dom::element root, parser.Parse(text, text.size(), file, limits));
  return json_internal::ToOwnedJson(root, file, "", limits);
}

}  // namespace quantpath
