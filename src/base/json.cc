// JSON through simdjson's DOM, copied into an owned, order-preserving tree that knows each value's
// pointer. simdjson keeps object members in document order and accepts duplicate keys, so
// duplicates are rejected here while copying.
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "fmt/format.h"
#include "quantpath/base.h"

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
            return InvalidInput(fmt::format("{}#{}: duplicate key \"{}\"", file, child, field.key));
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

void AppendJson(const Json& v, int indent, int level, std::string* out) {
  auto newline = [&](int l) {
    if (indent > 0) {
      *out += '\n';
      out->append(static_cast<size_t>(indent * l), ' ');
    }
  };
  switch (v.type()) {
    case Json::Type::kNull:
      *out += "null";
      break;
    case Json::Type::kBool:
      *out += v.bool_value() ? "true" : "false";
      break;
    case Json::Type::kInt:
      *out += std::to_string(v.int_value());
      break;
    case Json::Type::kDouble: {
      double d = v.number_value();
      if (!std::isfinite(d)) {
        *out += "null";
      } else if (d == std::floor(d) && std::fabs(d) < 1e15) {
        *out += fmt::format("{:.1f}", d);
      } else {
        *out += fmt::format("{}", d);
      }
      break;
    }
    case Json::Type::kString:
      *out += JsonQuote(v.string_value());
      break;
    case Json::Type::kArray: {
      *out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += indent > 0 ? "," : ", ";
        newline(level + 1);
        AppendJson(v.items()[i], indent, level + 1, out);
      }
      if (!v.items().empty()) newline(level);
      *out += ']';
      break;
    }
    case Json::Type::kObject: {
      *out += '{';
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (i) *out += indent > 0 ? "," : ", ";
        newline(level + 1);
        *out += JsonQuote(v.members()[i].first);
        *out += ": ";
        AppendJson(v.members()[i].second, indent, level + 1, out);
      }
      if (!v.members().empty()) newline(level);
      *out += '}';
      break;
    }
  }
}

template <typename T, typename Check, typename Get>
Result<std::optional<T>> OptionalMember(const Json& object, std::string_view key,
                                        std::string_view file, std::string_view expected,
                                        Check check, Get get) {
  const Json* v = object.FindNonNull(key);
  if (v == nullptr) return std::optional<T>();
  if (!check(*v)) {
    return InvalidInput(fmt::format("{}: expected {} for \"{}\", found {}", Where(file, *v),
                                    expected, key, v->TypeName()));
  }
  return std::optional<T>(get(*v));
}

}  // namespace

Json Json::Bool(bool v) {
  Json j;
  j.type_ = Type::kBool;
  j.bool_ = v;
  return j;
}
Json Json::Int(int64_t v) {
  Json j;
  j.type_ = Type::kInt;
  j.int_ = v;
  return j;
}
Json Json::Double(double v) {
  Json j;
  j.type_ = Type::kDouble;
  j.double_ = v;
  return j;
}
Json Json::String(std::string v) {
  Json j;
  j.type_ = Type::kString;
  j.string_ = std::move(v);
  return j;
}
Json Json::Array(std::vector<Json> items) {
  Json j;
  j.type_ = Type::kArray;
  j.items_ = std::move(items);
  return j;
}
Json Json::Object(std::vector<Member> members) {
  Json j;
  j.type_ = Type::kObject;
  j.members_ = std::move(members);
  return j;
}

const Json* Json::Find(std::string_view key) const {
  for (const Member& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

const Json* Json::FindNonNull(std::string_view key) const {
  const Json* v = Find(key);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

std::string_view Json::TypeName() const {
  switch (type_) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kInt:
      return "integer";
    case Type::kDouble:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "?";
}

bool Json::operator==(const Json& other) const {
  if (is_number() && other.is_number()) return number_value() == other.number_value();
  return type_ == other.type_ && bool_ == other.bool_ && string_ == other.string_ &&
         items_ == other.items_ && members_ == other.members_;
}

Result<Json> ParseJson(std::string_view text, std::string_view file) {
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  return ParseJson(text, file, limits.json);
}

Result<Json> ParseJson(std::string_view text, std::string_view file, const JsonLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_bytes) {
    return InvalidInput(fmt::format("{}: {} bytes of JSON, over the limit of {} bytes", file,
                                    text.size(), limits.max_bytes));
  }
  simdjson::dom::parser parser;
  // simdjson stops at the depth limit itself, so over-deep text costs nothing more to reject.
  // (simdjson counts the document itself as a level).
  if (parser.allocate(std::max<size_t>(text.size(), 1),
                      static_cast<size_t>(limits.max_depth) + 1) != simdjson::SUCCESS) {
    return InvalidInput(fmt::format("{}: out of memory for {} bytes of JSON", file, text.size()));
  }
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  auto error = parser.parse(padded).get(root);
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
    return InvalidInput(
        fmt::format("{}: not valid JSON ({})", file, simdjson::error_message(error)));
  }
  Converter converter{file, limits.max_values, limits.max_values};
  Json out;
  QP_RETURN_IF_ERROR(converter.Convert(root, "", &out));
  return out;
}

Result<Json> ReadJsonFile(const std::filesystem::path& path) {
  QP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJson(text, path.string());
}

std::string ToJson(const Json& value, int indent) {
  std::string out;
  AppendJson(value, indent, 0, &out);
  return out;
}

namespace {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0 when the bytes there are not one.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > s.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else if (static_cast<unsigned char>(c) < 0x80) {
          out += c;
        } else if (size_t length = Utf8SequenceLength(s, i)) {
          out.append(s.substr(i, length));
          i += length - 1;
        } else {
          // Not UTF-8 (a file name from a non-UTF-8 locale): JSON must be, so the byte becomes
          // U+FFFD (each byte that does not begin a well-formed sequence).
          out += "\\ufffd";
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonPointerChild(std::string_view parent, std::string_view token) {
  std::string out(parent);
  out += '/';
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Where(std::string_view file, const Json& value) {
  return fmt::format("{}#{}", file, value.pointer());
}

Result<std::optional<bool>> OptionalBool(const Json& o, std::string_view key,
                                         std::string_view file) {
  return OptionalMember<bool>(
      o, key, file, "a boolean", [](const Json& v) { return v.is_bool(); },
      [](const Json& v) { return v.bool_value(); });
}

Result<std::optional<int64_t>> OptionalInt(const Json& o, std::string_view key,
                                           std::string_view file) {
  return OptionalMember<int64_t>(
      o, key, file, "an integer", [](const Json& v) { return v.is_int(); },
      [](const Json& v) { return v.int_value(); });
}

Result<std::optional<double>> OptionalNumber(const Json& o, std::string_view key,
                                             std::string_view file) {
  return OptionalMember<double>(
      o, key, file, "a number", [](const Json& v) { return v.is_number(); },
      [](const Json& v) { return v.number_value(); });
}

Result<std::optional<std::string>> OptionalString(const Json& o, std::string_view key,
                                                  std::string_view file) {
  return OptionalMember<std::string>(
      o, key, file, "a string", [](const Json& v) { return v.is_string(); },
      [](const Json& v) { return v.string_value(); });
}

Result<std::vector<std::string>> OptionalStringList(const Json& o, std::string_view key,
                                                    std::string_view file) {
  std::vector<std::string> out;
  const Json* v = o.FindNonNull(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    return InvalidInput(fmt::format("{}: expected a list of strings for \"{}\", found {}",
                                    Where(file, *v), key, v->TypeName()));
  }
  for (const Json& item : v->items()) {
    if (!item.is_string()) {
      return InvalidInput(fmt::format("{}: expected a string in \"{}\", found {}",
                                      Where(file, item), key, item.TypeName()));
    }
    out.push_back(item.string_value());
  }
  return out;
}

}  // namespace quantpath
