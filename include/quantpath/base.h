// quantpath base: error values, order-preserving JSON and small string helpers.
//
// Goals: every stage reports failure through Status / Result<T> values whose messages name the
// file, the JSON pointer or tensor, and the layer. Non-goals: exceptions across stage boundaries,
// aborts on untrusted input (a config, a safetensors header, a regex).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace quantpath {

// The version of the libquantpath this program runs with ("0.1.0"); quantpath/version.h holds the
// version of the headers it was built with.
std::string_view LibraryVersion();

// ---------------------------------------------------------------------------------------------
// Status / Result

enum class ErrorCode {
  kOk = 0,
  kInvalidInput,  // the user's files or arguments are malformed or inconsistent
  kNotFound,      // a file, tensor or layer that was asked for does not exist
  kUnsupported,   // recognised, but not implemented (format, spec on a device, …)
  kIo,            // the operating system refused (open, mmap, write)
  kLimit,         // a resource limit was hit (regex match limit, header size)
  kInternal,      // an invariant of quantpath itself broke
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

Status InvalidInput(std::string message);
Status NotFound(std::string message);
Status Unsupported(std::string message);
Status IoError(std::string message);
Status LimitError(std::string message);
Status InternalError(std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

#define QP_CONCAT_INNER_(a, b) a##b
#define QP_CONCAT_(a, b) QP_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not ok.
#define QP_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::quantpath::Status qp_status_ = (expr); \
    if (!qp_status_.ok()) return qp_status_; \
  } while (0)

// `lhs` = value of the Result `expr`, or return its Status.
#define QP_ASSIGN_OR_RETURN(lhs, expr) \
  QP_ASSIGN_OR_RETURN_IMPL_(QP_CONCAT_(qp_result_, __LINE__), lhs, expr)
#define QP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// ---------------------------------------------------------------------------------------------
// JSON: an owned tree that keeps object members in document order (GPTQ `dynamic` is first-match in
// document order) and remembers each value's JSON pointer, so errors can name it.

class Json {
 public:
  enum class Type { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Member = std::pair<std::string, Json>;

  Json() = default;
  static Json Null() { return Json(); }
  static Json Bool(bool v);
  static Json Int(int64_t v);
  static Json Double(double v);
  static Json String(std::string v);
  static Json Array(std::vector<Json> items = {});
  static Json Object(std::vector<Member> members = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kDouble; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Accessors assume the type was checked (they return a zero value otherwise).
  bool bool_value() const { return bool_; }
  int64_t int_value() const { return int_; }
  double number_value() const { return type_ == Type::kInt ? static_cast<double>(int_) : double_; }
  const std::string& string_value() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }
  std::vector<Json>& mutable_items() { return items_; }
  std::vector<Member>& mutable_members() { return members_; }

  // The member named `key`, or nullptr when this is not an object or has no such member.
  const Json* Find(std::string_view key) const;
  // Like Find, but a JSON null counts as absent (configs write `"x": null` for "not given").
  const Json* FindNonNull(std::string_view key) const;

  // RFC 6901 pointer of this value inside its document ("" for the root).
  const std::string& pointer() const { return pointer_; }
  void set_pointer(std::string pointer) { pointer_ = std::move(pointer); }
  // "null", "boolean", "integer", "number", "string", "array", "object".
  std::string_view TypeName() const;

  bool operator==(const Json& other) const;  // structural; pointers are ignored

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<Member> members_;
  std::string pointer_;
};

// Bounds on untrusted JSON (config files, indexes, safetensors headers, case files). The parsed
// tree costs far more memory than its text, and nesting costs stack and pointer text, so both are
// capped; the defaults are far above every published model.
struct JsonLimits {
  int64_t max_bytes = int64_t{64} << 20;  // QUANTPATH_MAX_JSON_BYTES
  int max_depth = 256;                    // QUANTPATH_MAX_JSON_DEPTH
  int64_t max_values = int64_t{4} << 20;  // QUANTPATH_MAX_JSON_VALUES
};

// Every bound on untrusted input, each with a default far above every published model (DeepSeek-R1
// has 163 shards and 91k tensors) and the environment variable that changes it. A limit that is
// hit is an error naming the file and the variable, never a stall or an abort.
struct InputLimits {
  JsonLimits json;
  int64_t header_bytes = 100'000'000;  // QUANTPATH_MAX_HEADER_BYTES, as the safetensors reference
  int64_t tensors = int64_t{1} << 21;  // QUANTPATH_MAX_TENSORS, in one checkpoint
  int64_t shards = 16384;              // QUANTPATH_MAX_SHARDS, in one checkpoint
  int64_t regex_chars = 1 << 16;       // QUANTPATH_MAX_REGEX_CHARS, per pattern
  // Counted PCRE2 steps (machine-independent, unlike a timer): per match, and for every match of
  // one plan together, so many rules that each backtrack just under the per-match limit cannot
  // multiply into minutes over a large model.
  int64_t regex_match_steps = 1'000'000;   // QUANTPATH_MAX_REGEX_MATCH_STEPS
  int64_t regex_plan_steps = 100'000'000;  // QUANTPATH_MAX_REGEX_PLAN_STEPS
};
// The environment's limits, read now: an unusable value is an error naming the variable.
Result<InputLimits> ReadInputLimits();
// ReadInputLimits() as it was at first use, for the rest of the process.
const Result<InputLimits>& CurrentLimits();

// Parses `text`. `file` only names the input in error messages. Duplicate object keys, NaN and
// Infinity (which Python's json writes), integers outside 64 bits, text over the size limit and
// nesting over the depth limit are errors naming the file (and the pointer where there is one).
Result<Json> ParseJson(std::string_view text, std::string_view file);
Result<Json> ParseJson(std::string_view text, std::string_view file, const JsonLimits& limits);
// Reads and parses a file; errors name the file.
Result<Json> ReadJsonFile(const std::filesystem::path& path);
// Serialises compactly, or with `indent` spaces per level when indent > 0.
std::string ToJson(const Json& value, int indent = 0);
// A JSON string literal for `s`, quotes included.
std::string JsonQuote(std::string_view s);
// Appends an RFC 6901 reference token ("~" → "~0", "/" → "~1") to a pointer.
std::string JsonPointerChild(std::string_view parent, std::string_view token);

// Typed member access for importers: absent or null → nullopt; present with another type → an
// error naming `file` and the member's pointer.
Result<std::optional<bool>> OptionalBool(const Json& object, std::string_view key,
                                         std::string_view file);
Result<std::optional<int64_t>> OptionalInt(const Json& object, std::string_view key,
                                           std::string_view file);
Result<std::optional<double>> OptionalNumber(const Json& object, std::string_view key,
                                             std::string_view file);
Result<std::optional<std::string>> OptionalString(const Json& object, std::string_view key,
                                                  std::string_view file);
// A list of strings (null → empty). Any non-string item is an error naming its pointer.
Result<std::vector<std::string>> OptionalStringList(const Json& object, std::string_view key,
                                                    std::string_view file);
// "file#/pointer" as used in provenance and error messages.
std::string Where(std::string_view file, const Json& value);

// Where a value came from: "config.json" + "/quantization_config/ignore/3". Every stage that
// reports a value's origin (sources, importers, planner traces, reports) shares it.
struct Provenance {
  std::string file;
  std::string pointer;
  std::string ToString() const { return pointer.empty() ? file : file + "#" + pointer; }
};

// ---------------------------------------------------------------------------------------------
// A value derived from its owner's fields, built on first use and then shared by every thread
// reading it (a rule group's screen, a plan's decision texts). A copy or an assigned owner starts
// without one, since its fields may then be edited; the fields must not change once it is built.
// T may be incomplete where the owner is declared and destroyed (the deleter is type-erased).
template <typename T>
class BuiltOnce {
 public:
  BuiltOnce() = default;
  BuiltOnce(const BuiltOnce&) {}
  BuiltOnce& operator=(const BuiltOnce& other) {
    if (this == &other) return *this;
    const std::lock_guard<std::mutex> lock(mutex_);
    value_.store(nullptr, std::memory_order_release);
    owned_.reset();
    return *this;
  }
  // `build()` returns a std::unique_ptr<const T>; it runs at most once.
  template <typename Build>
  const T& Get(const Build& build) const {
    if (const void* value = value_.load(std::memory_order_acquire)) {
      return *static_cast<const T*>(value);
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    if (owned_ == nullptr) {
      owned_ = std::shared_ptr<const void>(build());
      value_.store(owned_.get(), std::memory_order_release);
    }
    return *static_cast<const T*>(owned_.get());
  }

 private:
  mutable std::mutex mutex_;
  mutable std::atomic<const void*> value_{nullptr};
  mutable std::shared_ptr<const void> owned_;
};

// ---------------------------------------------------------------------------------------------
// Strings

// An immutable string whose copies share one buffer. A rule's text is the same in every decision
// the rule makes, and a plan of thousands of sites would otherwise copy it once per site.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT: implicit, assigned from strings everywhere
      : text_(std::make_shared<const std::string>(std::move(text))) {}
  SharedText(const char* text) : SharedText(std::string(text)) {}  // NOLINT: implicit
  SharedText(std::string_view text) : SharedText(std::string(text)) {}

  const std::string& str() const { return text_ != nullptr ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: implicit, reads as a string
  operator std::string_view() const { return str(); }    // NOLINT: and formats as one (fmt)
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }
  size_t find(std::string_view part, size_t from = 0) const { return str().find(part, from); }
  bool starts_with(std::string_view part) const { return str().starts_with(part); }
  bool ends_with(std::string_view part) const { return str().ends_with(part); }
  // One overload per string type, so that no comparison needs a conversion to pick one.
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.str() == b.str(); }
  friend bool operator==(const SharedText& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedText& a, const char* b) { return a.str() == b; }

 private:
  static const std::string& Empty();
  std::shared_ptr<const std::string> text_;
};
std::ostream& operator<<(std::ostream& out, const SharedText& text);

std::vector<std::string> Split(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
// `s` without the spaces at either end.
std::string_view TrimSpaces(std::string_view s);
// Everything before the last '.', or "" when there is none.
std::string_view ParentPath(std::string_view path);
// Everything after the last '.'.
std::string_view LastSegment(std::string_view path);
std::string ToLower(std::string_view s);
// Reads a whole regular file of at most `max_bytes` (default: the JSON size limit). A directory,
// FIFO, device or socket is refused without blocking on it; a symlink is followed to what it
// names. Errors name the file, and the size error the setting that changes the limit. The text has
// kReadFilePadding bytes of capacity past its end, which a JSON parser may read (its padding), so
// parsing it needs no copy.
inline constexpr size_t kReadFilePadding = 64;
Result<std::string> ReadFile(const std::filesystem::path& path);
Result<std::string> ReadFile(const std::filesystem::path& path, int64_t max_bytes,
                             std::string_view limit_name = {});
// Writes through a temporary file in the same folder and renames it, so readers never see a
// partial file.
Status WriteFileAtomically(const std::filesystem::path& path, std::string_view content);

}  // namespace quantpath
