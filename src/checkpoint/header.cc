// Validation of a safetensors header, rule for rule as the reference implementation (huggingface
// safetensors, `SafeTensors::read_metadata` and `Metadata::validate`) applies them, with messages
// that name the file and the tensor.
//
// File layout: [u64 little-endian N][N bytes of UTF-8 JSON][data section]. The JSON maps tensor
// names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data section)
// plus an optional "__metadata__" of string → string.
#include <algorithm>
#include <array>
#include <optional>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "quantpath/checkpoint.h"
#include "src/base/json_dom.h"
#include "src/base/name_ids.h"

namespace quantpath {
namespace {

// safetensors' MAX_HEADER_SIZE: headers beyond it are refused before any parsing.
constexpr uint64_t kLengthBytes = 8;

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

Status TensorError(std::string_view file, std::string_view name, std::string_view message) {
  return InvalidInput(fmt::format("{}: tensor \"{}\": {}", file, name, message));
}

using simdjson::dom::element;
using simdjson::dom::element_type;

// A JSON value that must be an integer in [0, INT64_MAX] (serde's usize, within what a file can
// address). Integers above INT64_MAX are refused with the other non-integers.
bool IsIndex(element v) {
  return v.type() == element_type::INT64 && v.get_int64().value_unsafe() >= 0;
}

// A JSON value for an error message, cut short: a hostile header may hold huge values.
std::string ValueText(element v, std::string_view file, const JsonLimits& limits) {
  constexpr size_t kMaxChars = 60;
  Result<Json> owned = json_internal::ToOwnedJson(v, file, "", limits);
  if (!owned.ok()) return "a value";
  std::string text = owned->is_string() ? JsonQuote(owned->string_value()) : ToJson(*owned);
  return text.size() <= kMaxChars ? text : text.substr(0, kMaxChars) + "...";
}

Status ParseMetadata(const Json& value, std::string_view file, SafetensorsMetadata* out) {
  if (value.is_null()) return {};  // serde reads `null` as an absent Option
  if (!value.is_object()) {
    return InvalidInput(fmt::format("{}: \"__metadata__\" must be an object of strings, found {}",
                                    file, value.TypeName()));
  }
  for (const auto& [key, v] : value.members()) {
    if (!v.is_string()) {
      return InvalidInput(fmt::format(
          "{}: \"__metadata__\" entry \"{}\" must be a string, found {}", file, key, v.TypeName()));
    }
    if (out != nullptr) out->emplace_back(key, v.string_value());
  }
  return {};
}

// The three fields of a tensor entry, each given once. Other fields are ignored, as serde ignores
// them, but still held to ParseJson's rules (no duplicate keys, at any depth).
struct EntryFields {
  std::optional<element> dtype, shape, offsets;
};
Status ReadEntryFields(std::string_view file, std::string_view name, element entry,
                       const JsonLimits& limits, EntryFields* out) {
  const auto pointer = [name] { return JsonPointerChild("", name); };  // built only when needed
  std::vector<std::string_view> others;
  for (auto [key, value] : simdjson::dom::object(entry)) {
    std::optional<element>* field = key == "dtype"          ? &out->dtype
                                    : key == "shape"        ? &out->shape
                                    : key == "data_offsets" ? &out->offsets
                                                            : nullptr;
    if (field == nullptr) {
      if (std::find(others.begin(), others.end(), key) != others.end()) {
        return json_internal::DuplicateKeyError(file, pointer(), key);
      }
      others.push_back(key);
      QP_RETURN_IF_ERROR(
          json_internal::ToOwnedJson(value, file, JsonPointerChild(pointer(), key), limits)
              .status());
      continue;
    }
    if (field->has_value()) return json_internal::DuplicateKeyError(file, pointer(), key);
    *field = value;
  }
  return {};
}

// Reads one tensor entry and checks it on its own: known dtype, shape and offsets of non-negative
// integers, dtype × shape = end - begin. Offsets against other tensors are checked afterwards.
Status ParseTensor(std::string_view file, std::string_view name, element entry,
                   const JsonLimits& limits, TensorInfo* out) {
  out->name = name;
  if (entry.type() != element_type::OBJECT) {
    return TensorError(
        file, name,
        fmt::format("expected an object with dtype, shape and data_offsets, found {}",
                    json_internal::DomTypeName(entry)));
  }
  EntryFields fields;
  QP_RETURN_IF_ERROR(ReadEntryFields(file, name, entry, limits, &fields));
  for (auto [field, value] : {std::pair{"dtype", &fields.dtype}, std::pair{"shape", &fields.shape},
                              std::pair{"data_offsets", &fields.offsets}}) {
    if (!value->has_value()) return TensorError(file, name, fmt::format("missing \"{}\"", field));
  }
  const element dtype = *fields.dtype, shape = *fields.shape, offsets = *fields.offsets;
  if (dtype.type() != element_type::STRING) {
    return TensorError(
        file, name,
        fmt::format("\"dtype\" must be a string, found {}", json_internal::DomTypeName(dtype)));
  }
  const std::string_view dtype_text(dtype);
  std::optional<StDtype> parsed = ParseStDtype(dtype_text);
  if (!parsed)
    return TensorError(file, name, fmt::format("unknown dtype {}", JsonQuote(dtype_text)));
  out->dtype = *parsed;

  if (shape.type() != element_type::ARRAY) {
    return TensorError(file, name,
                       fmt::format("\"shape\" must be a list of non-negative "
                                   "integers, found {}",
                                   json_internal::DomTypeName(shape)));
  }
  const simdjson::dom::array dims(shape);
  out->shape.reserve(dims.size());
  for (element dim : dims) {
    if (!IsIndex(dim)) {
      return TensorError(file, name,
                         fmt::format("shape[{}] = {} is not a non-negative integer "
                                     "(below 2^63)",
                                     out->shape.size(), ValueText(dim, file, limits)));
    }
    out->shape.push_back(dim.get_int64().value_unsafe());
  }

  // Walked once: at(i) on a DOM array walks it from the start.
  std::array<element, 2> ends;
  bool pair = offsets.type() == element_type::ARRAY && simdjson::dom::array(offsets).size() == 2;
  if (pair) {
    size_t i = 0;
    for (element end : simdjson::dom::array(offsets)) ends[i++] = end;
    pair = IsIndex(ends[0]) && IsIndex(ends[1]);
  }
  if (!pair) {
    return TensorError(file, name,
                       fmt::format("\"data_offsets\" must be [begin, end] of "
                                   "non-negative integers, found {}",
                                   ValueText(offsets, file, limits)));
  }
  out->begin = static_cast<uint64_t>(ends[0].get_int64().value_unsafe());
  out->end = static_cast<uint64_t>(ends[1].get_int64().value_unsafe());

  int64_t elements = out->Elements();
  if (elements < 0) {
    return TensorError(
        file, name,
        fmt::format("shape {} has more elements than fit in 63 bits", ShapeText(out->shape)));
  }
  std::string_view dtype_name = StDtypeName(out->dtype);
  std::optional<uint64_t> bytes = StDtypeByteLength(out->dtype, elements);
  if (!bytes) {
    int bits = StDtypeBits(out->dtype);
    // elements × bits is a whole number of bytes iff (elements mod 8) × bits is.
    if (static_cast<uint64_t>(elements) % 8 * static_cast<uint64_t>(bits) % 8 != 0) {
      return TensorError(file, name,
                         fmt::format("dtype {} × shape {} = {} × {} bits, not a whole number of "
                                     "bytes",
                                     dtype_name, ShapeText(out->shape), elements, bits));
    }
    return TensorError(file, name,
                       fmt::format("dtype {} × shape {} overflows 64 bits of size", dtype_name,
                                   ShapeText(out->shape)));
  }
  if (out->end < out->begin) {
    return TensorError(
        file, name,
        fmt::format("data_offsets [{}, {}] end before they begin", out->begin, out->end));
  }
  if (out->end - out->begin != *bytes) {
    return TensorError(file, name,
                       fmt::format("dtype {} × shape {} = {} bytes but offsets give {}", dtype_name,
                                   ShapeText(out->shape), *bytes, out->end - out->begin));
  }
  return {};
}

// The reference accepts any document order and checks the tensors in offset order. Writers store
// them in offset order, so they are moved only when they are not.
bool ByOffsets(const TensorInfo& a, const TensorInfo& b) {
  return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
}

// Checks that the tensors, in offset order, tile the data section from 0 without gaps or
// overlaps, ending at the end of the file.
Status CheckTiling(std::string_view file, uint64_t data_bytes,
                   const std::vector<TensorInfo>& tensors) {
  uint64_t expected = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.begin != expected) {
      std::string where = fmt::format("data_offsets [{}, {}]", t.begin, t.end);
      if (previous == nullptr) {
        return TensorError(file, t.name,
                           where + " must start at 0: no tensor covers the first " +
                               std::to_string(t.begin) + " bytes of data");
      }
      return TensorError(file, t.name,
                         fmt::format("{} {} tensor \"{}\", which ends at {}", where,
                                     t.begin > expected ? "leave a gap after" : "overlap",
                                     previous->name, expected));
    }
    expected = t.end;
    previous = &t;
  }
  if (expected != data_bytes) {
    if (previous == nullptr) {
      return InvalidInput(
          fmt::format("{}: the header lists no tensors but {} bytes of data follow "
                      "it",
                      file, data_bytes));
    }
    return TensorError(file, previous->name,
                       fmt::format("the last tensor ends at data offset {} but the file has {} "
                                   "bytes of data after the header ({})",
                                   expected, data_bytes,
                                   expected < data_bytes ? "unused bytes at the end"
                                                         : "the tensor runs past the end"));
  }
  return {};
}

}  // namespace

namespace checkpoint_internal {

Result<std::vector<TensorInfo>> ParseHeader(std::span<const std::byte> bytes, uint64_t file_size,
                                            std::string_view file, uint64_t* data_start,
                                            SafetensorsMetadata* metadata, NameIds* ids) {
  if (file_size < kLengthBytes || bytes.size() < kLengthBytes) {
    return InvalidInput(
        fmt::format("{}: {} bytes, too small for a safetensors file (which starts "
                    "with an 8-byte header length)",
                    file, file_size));
  }
  // Little-endian whatever the host: assemble the bytes explicitly.
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) {
    header_bytes = (header_bytes << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  }
  QP_ASSIGN_OR_RETURN(InputLimits limits, CurrentLimits());
  if (header_bytes > static_cast<uint64_t>(limits.header_bytes)) {
    return LimitError(fmt::format(
        "{}: header length {} exceeds the limit of {} bytes (QUANTPATH_MAX_HEADER_BYTES)", file,
        header_bytes, limits.header_bytes));
  }
  if (kLengthBytes + header_bytes > file_size) {
    return InvalidInput(fmt::format("{}: header length {} runs past the end of the file ({} bytes)",
                                    file, header_bytes, file_size));
  }
  if (bytes.size() < kLengthBytes + header_bytes) {
    return InternalError(fmt::format("{}: only {} bytes of the {}-byte header were read", file,
                                     bytes.size() - kLengthBytes, header_bytes));
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + kLengthBytes, header_bytes);
  if (text.empty() || text.front() != '{') {
    return InvalidInput(
        fmt::format("{}: the header must begin with '{{', found {}", file,
                    text.empty() ? std::string("an empty header")
                                 : fmt::format("byte 0x{:02x}", static_cast<uint8_t>(text[0]))));
  }
  // The DOM parse validates UTF-8 and the JSON; duplicate keys are rejected below, naming the file
  // and the key. The header has its own size limit (above) and keeps the JSON depth limit; the
  // value limit bounds the owned Json tree, which only the metadata is copied into.
  JsonLimits json_limits = limits.json;
  json_limits.max_bytes = limits.header_bytes;
  json_internal::ThreadDomParser parser(header_bytes);
  QP_ASSIGN_OR_RETURN(simdjson::dom::element root,
                      parser->Parse(text, bytes.size() - kLengthBytes, file, json_limits));
  if (root.type() != simdjson::dom::element_type::OBJECT) {
    return InvalidInput(fmt::format("{}: the header must be a JSON object", file));
  }
  const simdjson::dom::object entries(root);
  const size_t count = entries.size();
  if (static_cast<int64_t>(count) > limits.tensors + 1) {  // + __metadata__
    return LimitError(
        fmt::format("{}: the header lists {} tensors, over the limit of {} "
                    "(QUANTPATH_MAX_TENSORS)",
                    file, count, limits.tensors));
  }
  std::vector<TensorInfo> tensors;
  tensors.reserve(count);
  // The tensors' names, each given its index in `tensors`: the table rejects a name given twice.
  NameIds names;
  names.Reserve(count, header_bytes);
  bool has_metadata = false;
  for (auto [name, entry] : entries) {
    if (name == "__metadata__") {
      if (has_metadata) return json_internal::DuplicateKeyError(file, "", name);
      has_metadata = true;
      QP_ASSIGN_OR_RETURN(Json owned,
                          json_internal::ToOwnedJson(entry, file, "/__metadata__", json_limits));
      QP_RETURN_IF_ERROR(ParseMetadata(owned, file, metadata));
      continue;
    }
    if (!names.Insert(name).second) return json_internal::DuplicateKeyError(file, "", name);
    TensorInfo& info = tensors.emplace_back();
    QP_RETURN_IF_ERROR(ParseTensor(file, name, entry, json_limits, &info));
  }
  if (!std::is_sorted(tensors.begin(), tensors.end(), ByOffsets)) {
    std::stable_sort(tensors.begin(), tensors.end(), ByOffsets);
    names = NameIds();
    names.Reserve(tensors.size(), header_bytes);
    for (const TensorInfo& t : tensors) names.Insert(t.name);
  }
  QP_RETURN_IF_ERROR(CheckTiling(file, file_size - kLengthBytes - header_bytes, tensors));
  *data_start = kLengthBytes + header_bytes;
  *ids = std::move(names);
  return tensors;
}

}  // namespace checkpoint_internal

Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::span<const std::byte> bytes,
                                                       uint64_t file_size, std::string_view file,
                                                       uint64_t* data_start,
                                                       SafetensorsMetadata* metadata) {
  NameIds ids;
  return checkpoint_internal::ParseHeader(bytes, file_size, file, data_start, metadata, &ids);
}

}  // namespace quantpath
