// The owned, order-preserving JSON tree (parsed in json_dom.cc): access, serialisation, pointers.
#include <cmath>

#include "fmt/format.h"
#include "quantpath/base.h"

namespace quantpath {
namespace {

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
