// Validation of a safetensors header, rule for rule as the reference implementation (huggingface
// safetensors, `SafeTensors::read_metadata` and `Metadata::validate`) applies them, with messages
// that name the file and the tensor.
//
// File layout: [u64 little-endian N][N bytes of UTF-8 JSON][data section]. The JSON maps tensor
// names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data section)
// plus an optional "__metadata__" of string → string.
#include <algorithm>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "quantpath/checkpoint.h"

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

// A JSON value that must be an integer in [0, INT64_MAX] (serde's usize, within what a file can
// address). Integers above INT64_MAX arrive as doubles and are refused with the other non-integers.
bool IsIndex(const Json& v) { return v.is_int() && v.int_value() >= 0; }

// A JSON value for an error message, cut short: a hostile header may hold huge values.
std::string ValueText(const Json& v) {
  constexpr size_t kMaxChars = 60;
  std::string text = v.is_string() ? JsonQuote(v.string_value()) : ToJson(v);
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

// Reads one tensor entry and checks it on its own: known dtype, shape and offsets of non-negative
// integers, dtype × shape = end - begin. Offsets against other tensors are checked afterwards.
Status ParseTensor(std::string_view file, const std::string& name, const Json& entry,
                   TensorInfo* out) {
  out->name = name;
  if (!entry.is_object()) {
    return TensorError(
        file, name,
        fmt::format("expected an object with dtype, shape and data_offsets, found {}",
                    entry.TypeName()));
  }
  const Json* dtype = entry.Find("dtype");
  const Json* shape = entry.Find("shape");
  const Json* offsets = entry.Find("data_offsets");
  for (auto [field, value] :
       {std::pair{"dtype", dtype}, std::pair{"shape", shape}, std::pair{"data_offsets", offsets}}) {
    if (value == nullptr) return TensorError(file, name, fmt::format("missing \"{}\"", field));
  }
  if (!dtype->is_string()) {
    return TensorError(file, name,
                       fmt::format("\"dtype\" must be a string, found {}", dtype->TypeName()));
  }
  std::optional<StDtype> parsed = ParseStDtype(dtype->string_value());
  if (!parsed) {
    return TensorError(file, name,
                       fmt::format("unknown dtype {}", JsonQuote(dtype->string_value())));
  }
  out->dtype = *parsed;

  if (!shape->is_array()) {
    return TensorError(file, name,
                       fmt::format("\"shape\" must be a list of non-negative "
                                   "integers, found {}",
                                   shape->TypeName()));
  }
  for (size_t i = 0; i < shape->items().size(); ++i) {
    const Json& dim = shape->items()[i];
    if (!IsIndex(dim)) {
      return TensorError(file, name,
                         fmt::format("shape[{}] = {} is not a non-negative integer "
                                     "(below 2^63)",
                                     i, ValueText(dim)));
    }
    out->shape.push_back(dim.int_value());
  }

  if (!offsets->is_array() || offsets->items().size() != 2 || !IsIndex(offsets->items()[0]) ||
      !IsIndex(offsets->items()[1])) {
    return TensorError(file, name,
                       fmt::format("\"data_offsets\" must be [begin, end] of "
                                   "non-negative integers, found {}",
                                   ValueText(*offsets)));
  }
  out->begin = static_cast<uint64_t>(offsets->items()[0].int_value());
  out->end = static_cast<uint64_t>(offsets->items()[1].int_value());

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

// Sorts by offsets (as the reference does: any document order is accepted) and checks that the
// tensors tile the data section from 0 without gaps or overlaps, ending at the end of the file.
Status CheckTiling(std::string_view file, uint64_t data_bytes, std::vector<TensorInfo>* tensors) {
  std::stable_sort(tensors->begin(), tensors->end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t expected = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& t : *tensors) {
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

Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::span<const std::byte> bytes,
                                                       uint64_t file_size, std::string_view file,
                                                       uint64_t* data_start,
                                                       SafetensorsMetadata* metadata) {
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
  // ParseJson validates UTF-8 and rejects duplicate keys, naming the file and the key. The header
  // has its own size limit (above); nesting and the value count keep the JSON limits.
  JsonLimits json_limits = limits.json;
  json_limits.max_bytes = limits.header_bytes;
  QP_ASSIGN_OR_RETURN(Json root, ParseJson(text, file, json_limits));
  if (!root.is_object()) {
    return InvalidInput(fmt::format("{}: the header must be a JSON object", file));
  }

  if (static_cast<int64_t>(root.members().size()) > limits.tensors + 1) {  // + __metadata__
    return LimitError(
        fmt::format("{}: the header lists {} tensors, over the limit of {} "
                    "(QUANTPATH_MAX_TENSORS)",
                    file, root.members().size(), limits.tensors));
  }
  std::vector<TensorInfo> tensors;
  tensors.reserve(root.members().size());
  for (const auto& [name, entry] : root.members()) {
    if (name == "__metadata__") {
      QP_RETURN_IF_ERROR(ParseMetadata(entry, file, metadata));
      continue;
    }
    TensorInfo info;
    QP_RETURN_IF_ERROR(ParseTensor(file, name, entry, &info));
    tensors.push_back(std::move(info));
  }
  QP_RETURN_IF_ERROR(CheckTiling(file, file_size - kLengthBytes - header_bytes, &tensors));
  *data_start = kLengthBytes + header_bytes;
  return tensors;
}

}  // namespace quantpath
