// JSON read straight from simdjson's DOM, for the inputs whose size makes the owned Json tree the
// cost (safetensors headers, index weight maps: 150k tensors is 30 MB of JSON). The rules are
// ParseJson's (limits, UTF-8, NaN and 64-bit integers named by pointer); a reader walking the DOM
// rejects duplicate keys itself, where it can do so cheaply, and converts the small or rare parts
// (metadata, values in error messages) to Json, which rejects them as ParseJson does.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"

namespace quantpath::json_internal {

// A parser that keeps its buffers from one document to the next. A parsed element lives until the
// next Parse.
class DomParser {
 public:
  // `text` is copied only when fewer than SIMDJSON_PADDING readable bytes follow it: `readable` is
  // how many bytes from text.data() may be read (text.size() when unknown).
  Result<simdjson::dom::element> Parse(std::string_view text, size_t readable,
                                       std::string_view file, const JsonLimits& limits);

 private:
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
};

// The calling thread's DomParser while a ThreadDomParser lives: one per thread keeps its buffers
// from document to document (allocating them costs more than many a parse), and gives them back
// after a document over kKeepBytes. One at a time per thread.
class ThreadDomParser {
 public:
  static constexpr size_t kKeepBytes = size_t{16} << 20;
  explicit ThreadDomParser(size_t bytes) : release_(bytes > kKeepBytes) {}
  ~ThreadDomParser() {
    if (release_) Parser() = {};
  }
  ThreadDomParser(const ThreadDomParser&) = delete;
  ThreadDomParser& operator=(const ThreadDomParser&) = delete;
  DomParser* operator->() { return &Parser(); }

 private:
  static DomParser& Parser() {
    thread_local DomParser parser;
    return parser;
  }
  bool release_;
};

// `element` (at `pointer` of `file`) as Json; duplicate keys and the value limit as ParseJson.
Result<Json> ToOwnedJson(simdjson::dom::element element, std::string_view file,
                         const std::string& pointer, const JsonLimits& limits);

// Json::TypeName of what `element` converts to.
std::string_view DomTypeName(simdjson::dom::element element);

// The first place `text` breaks JSON's grammar: its byte offset and what was expected there.
// nullopt when the grammar holds (the parse failed for another reason, e.g. invalid UTF-8).
struct JsonSyntaxError {
  size_t offset = 0;
  std::string what;
};
std::optional<JsonSyntaxError> FindJsonSyntaxError(std::string_view text, int max_depth);
// "file:line:column" of byte `offset` of `text` (both 1-based; columns count bytes).
std::string JsonErrorLocation(std::string_view file, std::string_view text, size_t offset);

// ParseJson's message for key `key` of the object at `object_pointer` given twice.
Status DuplicateKeyError(std::string_view file, std::string_view object_pointer,
                         std::string_view key);

}  // namespace quantpath::json_internal
