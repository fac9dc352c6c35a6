// `check`'s values pass: the tensors the header pass found, read file by file in offset order
// (pread into one buffer, so that the read is the same whatever the rule) and held to their
// SourceValues rule; an integer layout's leg is decoded by its loader's own decoder, without its
// codes, once its last tensor is read (CheckIntegerSourceValues), so that `check` and `load`
// refuse the same zero points and g_idx.
// Non-goals: the rules of a loader's product (`run` measures those); threads (one reader: the
// benchmark compares it with a plain read of the same stretches by one thread).
#include "src/pipeline/check_values.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "quantpath/numeric.h"
#include "src/pipeline/bit_scan.h"

namespace quantpath::pipeline_internal {
namespace {

// The values of a tensor as doubles: floats decoded (U8 as E8M0 exponents where the leg is
// micro-scaled, as MX checkpoints store their scales), integers as they are; nullopt for a dtype
// no rule reads.
std::optional<std::vector<double>> Decode(std::span<const std::byte> bytes, StDtype dtype,
                                          bool e8m0_bytes) {
  const auto each = [&]<typename T>(T, auto convert) {
    std::vector<double> out(bytes.size() / sizeof(T));
    for (size_t i = 0; i < out.size(); ++i) {
      T v;
      std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
      out[i] = static_cast<double>(convert(v));
    }
    return out;
  };
  const auto same = [](auto v) { return v; };
  switch (dtype) {
    case StDtype::kF64:
      return each(double{}, same);
    case StDtype::kF32:
      return each(float{}, same);
    case StDtype::kF16:
      return each(uint16_t{}, Fp16ToFloat);
    case StDtype::kBF16:
      return each(uint16_t{}, Bf16ToFloat);
    case StDtype::kF8E4M3:
      return each(uint8_t{}, Fp8E4M3ToFloat);
    case StDtype::kF8E5M2:
      return each(uint8_t{}, Fp8E5M2ToFloat);
    case StDtype::kF8E8M0:
      return each(uint8_t{}, E8M0ToFloat);
    case StDtype::kU8:
      return e8m0_bytes ? each(uint8_t{}, E8M0ToFloat) : each(uint8_t{}, same);
    case StDtype::kI8:
      return each(int8_t{}, same);
    case StDtype::kI16:
      return each(int16_t{}, same);
    case StDtype::kI32:
      return each(int32_t{}, same);
    case StDtype::kI64:
      return each(int64_t{}, same);
    default:
      return std::nullopt;
  }
}

bool IsFloat(StDtype dtype, bool e8m0_bytes) {
  switch (dtype) {
    case StDtype::kF64:
    case StDtype::kF32:
    case StDtype::kF16:
    case StDtype::kBF16:
    case StDtype::kF8E4M3:
    case StDtype::kF8E5M2:
    case StDtype::kF8E8M0:
      return true;
    case StDtype::kU8:
      return e8m0_bytes;
    default:
      return false;
  }
}

// A scale tensor's rows as the layer's output rows see them: `count` rows of `width` scales,
// contiguous, or a column each (kScaleByGroup's [groups, N]).
struct ScaleRows {
  int64_t count = 1;
  int64_t width = 0;
  bool by_column = false;
};
ScaleRows RowsOf(const ValueTensor& v, int64_t size) {
  const TensorShape& shape = v.tensor->shape;
  if (v.values == SourceValues::kScaleByGroup && shape.size() == 2) {
    return {shape[1], shape[0], true};
  }
  if (shape.size() >= 2 && shape.back() > 0) return {size / shape.back(), shape.back(), false};
  const int64_t rows = v.leg.rows * std::max<int64_t>(v.leg.experts, 1);
  if (rows > 0 && size % rows == 0) return {rows, size / rows, false};
  return {1, size, false};
}

// Whether a leg's scales may be negative: integer codes' may (auto-round's symmetric export
// stores negative group scales, mapping the largest magnitude onto −2^(b−1)); an absmax
// (bitsandbytes) and a float format's scales may not.
bool NegativeScales(const SourceLeg& leg) {
  const SourceLayout layout = leg.weight.load.layout;
  if (layout == SourceLayout::kBnb4bit || layout == SourceLayout::kBnb8bit) return false;
  return !Info(leg.weight.dtype).is_float;
}

std::optional<FloatBits> BitsOf(StDtype dtype, bool e8m0_bytes) {
  switch (dtype) {
    case StDtype::kF32:
      return FloatBits{4, 0x7F800000, 0x80000000, 0x7FFFFFFF};
    case StDtype::kBF16:
      return FloatBits{2, 0x7F80, 0x8000, 0x7FFF};
    case StDtype::kF16:
      return FloatBits{2, 0x7C00, 0x8000, 0x7FFF};
    case StDtype::kF8E5M2:
      return FloatBits{1, 0x7C, 0x80, 0x7F};
    case StDtype::kF8E4M3:
      return FloatBits{1, 0x7F, 0x80, 0x7F};
    case StDtype::kF8E8M0:
      return FloatBits{1, 0xFF, 0, 0};
    case StDtype::kU8:
      if (e8m0_bytes) return FloatBits{1, 0xFF, 0, 0};
      return std::nullopt;
    case StDtype::kI8:
      return FloatBits{1, 0, 0, 0xFF};
    default:
      return std::nullopt;
  }
}

class ValueReader {
 public:
  ValueReader(const CheckpointAudit& audit, ValueReport* report) : audit_(audit), out_(*report) {}

  // A scan for `v` where its rule reads its bits as they are read (scales, codes), or nullopt
  // (the tensor is read whole, then Check).
  std::optional<BitScan> ScanFor(const ValueTensor& v) const {
    const StDtype dtype = *v.tensor->dtype;
    const int64_t bytes = static_cast<int64_t>(v.tensor->end - v.tensor->begin);
    if (v.values == SourceValues::kCodes) {
      const std::optional<FloatBits> bits = BitsOf(dtype, false);
      if (!bits) return std::nullopt;  // packed codes: read, with no rule of their own
      const int64_t count = bytes / bits->width;
      const int64_t leg_rows = v.leg.rows * std::max<int64_t>(v.leg.experts, 1);
      const int64_t rows = leg_rows > 0 && count % leg_rows == 0 ? leg_rows : 1;
      return BitScan(*bits, rows, count / rows, false);
    }
    if (v.values != SourceValues::kScale && v.values != SourceValues::kScaleByGroup) {
      return std::nullopt;
    }
    const std::optional<FloatBits> bits = BitsOf(dtype, v.leg.weight.micro_scaled);
    // bitsandbytes' double-quantized absmax is U8 codes into its nested map: no scale to read.
    if (!bits || !IsFloat(dtype, v.leg.weight.micro_scaled)) return std::nullopt;
    const ScaleRows rows = RowsOf(v, bytes / bits->width);
    return rows.by_column ? BitScan(*bits, rows.width, rows.count, true)
                          : BitScan(*bits, rows.count, rows.width, false);
  }

  void Finish(const ValueTensor& v, const BitScan& scan) {
    const std::string& file = audit_.FileOf(*v.tensor);
    if (v.values == SourceValues::kCodes) {
      FinishCodes(v, file, scan);
    } else {
      FinishScale(v, file, scan);
    }
  }

  void Check(const ValueTensor& v, std::span<const std::byte> bytes) {
    const std::string& file = audit_.FileOf(*v.tensor);
    const StDtype dtype = *v.tensor->dtype;
    const bool e8m0_bytes = v.leg.weight.micro_scaled;
    if (v.values == SourceValues::kUnchecked || v.values == SourceValues::kCodes) return;
    // An integer loader reads its own zero points and g_idx, packed as only it unpacks them.
    if (HasIntegerLoader(v.leg.weight.load.layout) &&
        (v.values == SourceValues::kZeroPoint || v.values == SourceValues::kGroupMap)) {
      return;
    }
    const bool scale = v.values == SourceValues::kScale || v.values == SourceValues::kScaleByGroup;
    if ((scale || v.values == SourceValues::kDivisor || v.values == SourceValues::kFinite) &&
        !IsFloat(dtype, e8m0_bytes)) {
      return;
    }
    // The small tensors (divisors, biases, zero points, shapes), decoded.
    const std::optional<std::vector<double>> values = Decode(bytes, dtype, e8m0_bytes);
    if (!values) return;
    switch (v.values) {
      case SourceValues::kScale:
      case SourceValues::kScaleByGroup:  // an F64 scale (ScanFor takes the others)
      case SourceValues::kFinite:
        FirstNonFinite(v, file, *values);
        return;
      case SourceValues::kDivisor:
        CheckDivisor(v, file, *values);
        return;
      case SourceValues::kZeroPoint:
        CheckZeroPoint(v, file, *values);
        return;
      case SourceValues::kOffset:
        CheckOffset(v, file, *values);
        return;
      case SourceValues::kShapeVector:
        CheckShapeVector(v, file, *values);
        return;
      default:
        return;
    }
  }

 private:
  // NaN or ±inf: true when one was found (and reported).
  bool FirstNonFinite(const ValueTensor& v, const std::string& file,
                      const std::vector<double>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isfinite(values[i])) continue;
      Add(FindingKind::kBadValue, v, file, "a finite value", fmt::format("{}", values[i]),
          fmt::format("holds {} at index {}", values[i], i));
      return true;
    }
    return false;
  }

  // The value of one code of `dtype`, for a message.
  static double ValueOf(uint32_t code, StDtype dtype, bool e8m0_bytes, int width) {
    std::byte bytes[4];
    std::memcpy(bytes, &code, 4);
    const std::optional<std::vector<double>> one =
        Decode(std::span<const std::byte>(bytes, static_cast<size_t>(width)), dtype, e8m0_bytes);
    return one && !one->empty() ? one->front() : std::numeric_limits<double>::quiet_NaN();
  }

  void FinishScale(const ValueTensor& v, const std::string& file, const BitScan& scan) {
    const StDtype dtype = *v.tensor->dtype;
    const bool e8m0_bytes = v.leg.weight.micro_scaled;
    const int width = scan.bits().width;
    if (scan.first_special >= 0) {
      const double value = ValueOf(scan.special_code, dtype, e8m0_bytes, width);
      Add(FindingKind::kBadValue, v, file, "a finite value", fmt::format("{}", value),
          fmt::format("holds {} at index {}", value, scan.first_special));
      return;
    }
    if (scan.first_negative >= 0 && !NegativeScales(v.leg)) {
      const double value = ValueOf(scan.negative_code, dtype, e8m0_bytes, width);
      Add(FindingKind::kBadValue, v, file, "a scale of at least 0", fmt::format("{}", value),
          fmt::format("holds the negative scale {} at index {}", value, scan.first_negative));
      return;
    }
    const auto zero = std::find(scan.nonzero.begin(), scan.nonzero.end(), 0);
    if (zero == scan.nonzero.end()) return;
    if (std::all_of(scan.nonzero.begin(), scan.nonzero.end(), [](uint8_t nz) { return nz == 0; })) {
      const uint64_t size = (v.tensor->end - v.tensor->begin) / static_cast<uint64_t>(width);
      Add(FindingKind::kDeadRows, v, file, "a nonzero scale", "0",
          fmt::format("has only zero scales ({} of them): the layer computes zeros", size));
      return;
    }
    Add(FindingKind::kDeadRows, v, file, "a nonzero scale in every row", "0",
        fmt::format("has only zero scales in {} {}: the rows it scales compute zeros",
                    scan.by_column() ? "column" : "row", zero - scan.nonzero.begin()));
  }

  void CheckDivisor(const ValueTensor& v, const std::string& file,
                    const std::vector<double>& values) {
    if (FirstNonFinite(v, file, values)) return;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] > 0) continue;
      Add(FindingKind::kBadValue, v, file, "a positive value", fmt::format("{}", values[i]),
          fmt::format("holds {} at index {}, and the layer divides by it", values[i], i));
      return;
    }
  }

  // A zero point stored unpacked (compressed-tensors' int8 layout, ModelSlim's weight_offset):
  // a signed b-bit integer, 0 where the scheme is symmetric.
  void CheckZeroPoint(const ValueTensor& v, const std::string& file,
                      const std::vector<double>& values) {
    const QDTypeInfo& weight = Info(v.leg.weight.dtype);
    if (weight.is_float) return;
    const double lo = -std::ldexp(1.0, weight.bits - 1);
    const double hi = std::ldexp(1.0, weight.bits - 1) - 1;
    for (size_t i = 0; i < values.size(); ++i) {
      const double z = values[i];
      if (v.leg.weight.symmetric && z != 0) {
        Add(FindingKind::kZeroPoint, v, file, "0", fmt::format("{}", z),
            fmt::format("the scheme is symmetric, but it holds zero point {} at index {}, not 0", z,
                        i));
        return;
      }
      if (std::isfinite(z) && z == std::trunc(z) && z >= lo && z <= hi) continue;
      Add(FindingKind::kZeroPoint, v, file, fmt::format("an integer in [{}, {}]", lo, hi),
          fmt::format("{}", z),
          fmt::format("holds zero point {} at index {}, outside the {}-bit code range [{}, {}]", z,
                      i, weight.bits, lo, hi));
      return;
    }
  }

  // An activation zero point: an integer of the 8-bit codes, signed or not.
  void CheckOffset(const ValueTensor& v, const std::string& file,
                   const std::vector<double>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      const double z = values[i];
      if (std::isfinite(z) && z == std::trunc(z) && z >= -128 && z <= 255) continue;
      Add(FindingKind::kZeroPoint, v, file, "an integer in [-128, 255]", fmt::format("{}", z),
          fmt::format("holds the activation zero point {} at index {}", z, i));
      return;
    }
  }

  void CheckShapeVector(const ValueTensor& v, const std::string& file,
                        const std::vector<double>& values) {
    if (v.leg.rows == 0) return;
    const std::vector<double> expected{static_cast<double>(v.leg.rows),
                                       static_cast<double>(v.leg.cols)};
    if (values == expected) return;
    std::vector<int64_t> found(values.begin(), values.end());
    const std::string found_text = fmt::format("[{}]", fmt::join(found, ", "));
    const std::string expected_text = fmt::format("[{}, {}]", v.leg.rows, v.leg.cols);
    Add(FindingKind::kStoredShape, v, file, expected_text, found_text,
        fmt::format("says the weight is {}, but the layer's is {}", found_text, expected_text));
  }

  // --deep: a weight's codes. Float codes: no NaN or infinity (fp8's NaN codes 0x7F / 0xFF);
  // float and int8 codes of a leg: no output row all zero.
  void FinishCodes(const ValueTensor& v, const std::string& file, const BitScan& scan) {
    const int width = scan.bits().width;
    if (scan.first_special >= 0) {
      Add(FindingKind::kBadValue, v, file, "finite codes",
          fmt::format("0x{:0{}X}", scan.special_code, 2 * width),
          fmt::format("holds the NaN or infinity code 0x{:0{}X} at index {}", scan.special_code,
                      2 * width, scan.first_special));
      return;
    }
    if (scan.nonzero.size() < 2) return;  // not read by rows
    const auto zero = std::find(scan.nonzero.begin(), scan.nonzero.end(), 0);
    if (zero == scan.nonzero.end()) return;
    Add(FindingKind::kDeadRows, v, file, "a nonzero weight in every row", "0",
        fmt::format("row {} is all zeros", zero - scan.nonzero.begin()));
  }

  void Add(FindingKind kind, const ValueTensor& v, const std::string& file, std::string expected,
           std::string found, const std::string& what) {
    const std::string of = v.layer.empty() ? "" : fmt::format(" of layer {}", v.layer);
    out_.findings.push_back({kind, std::nullopt, true, file, std::string(v.tensor->name), v.layer,
                             std::move(expected), std::move(found),
                             fmt::format("{}: tensor {}{} {}", file, v.tensor->name, of, what)});
  }

  const CheckpointAudit& audit_;
  ValueReport& out_;
};

// Whether an integer loader decodes `v` (CheckIntegerSourceValues): zero points, g_idx and
// compressed-tensors' weight_shape.
bool DecodedByItsLoader(const ValueTensor& v) {
  return (v.values == SourceValues::kZeroPoint || v.values == SourceValues::kGroupMap ||
          v.values == SourceValues::kShapeVector) &&
         HasIntegerLoader(v.leg.weight.load.layout);
}

// An integer layout's leg, gathered as its tensors are read and decoded once all are.
struct PendingLeg {
  const ValueTensor* first = nullptr;
  size_t left = 0;       // tensors not read yet
  bool decodes = false;  // it has zero points or g_idx
  bool failed = false;
  std::vector<Checkpoint::OwnedTensor> tensors;
};

// What a scanned tensor is read in: a few hundred KB stay in a core's cache while scanned.
constexpr uint64_t kPieceBytes = 256 << 10;

// Read in pieces, a cold tensor would come from disk a piece at a time, each piece a request of
// its own. So the kernel is told (POSIX_FADV_WILLNEED) which bytes come next, a window ahead of
// the piece being read and across stretches of the same file: the disk reads while the pieces
// are scanned, and on a warm file the advice costs a call per window.
class ReadAhead {
 public:
  static constexpr uint64_t kWindow = 8 << 20;
  // Stretches this close are advised as one range: the gap costs less than a call.
  static constexpr uint64_t kGap = 64 << 10;

  explicit ReadAhead(const std::vector<ReadStretch>& stretches) : stretches_(stretches) {
    before_.reserve(stretches.size() + 1);
    uint64_t total = 0;
    for (const ReadStretch& s : stretches) {
      before_.push_back(total);
      total += s.length;
    }
    before_.push_back(total);
    if (!stretches.empty()) at_ = stretches.front().offset;
  }

  // Before reading stretch `i` of the open file `fd` from the absolute offset `at`.
  void Before(int fd, size_t i, uint64_t at) {
    const uint64_t now = Position(i, at);
    if (Position(next_, at_) < now) {
      next_ = i;
      at_ = at;
    }
    if (Position(next_, at_) >= now + kWindow / 2) return;
    const uint64_t until = now + kWindow;
    uint64_t from = at_, to = at_;
    while (next_ < stretches_.size() && stretches_[next_].file == stretches_[i].file &&
           Position(next_, at_) < until) {
      const ReadStretch& s = stretches_[next_];
      if (at_ > to + kGap || at_ < to) {
        Advise(fd, from, to);
        from = at_;
      }
      to = std::min(s.offset + s.length, at_ + (until - Position(next_, at_)));
      if (to < s.offset + s.length) {
        at_ = to;
        break;
      }
      if (++next_ < stretches_.size()) at_ = stretches_[next_].offset;
    }
    Advise(fd, from, to);
  }

 private:
  // How many bytes of the stretches come before `at` in stretch `i`.
  uint64_t Position(size_t i, uint64_t at) const {
    return i < stretches_.size() ? before_[i] + (at - stretches_[i].offset) : before_.back();
  }
  static void Advise(int fd, uint64_t from, uint64_t to) {
    if (to > from) {
      posix_fadvise(fd, static_cast<off_t>(from), static_cast<off_t>(to - from),
                    POSIX_FADV_WILLNEED);
    }
  }

  const std::vector<ReadStretch>& stretches_;
  std::vector<uint64_t> before_;
  size_t next_ = 0;  // the first byte not yet advised: stretch next_, offset at_
  uint64_t at_ = 0;
};

}  // namespace

ValueReport ReadValues(const CheckpointAudit& audit, std::vector<ValueTensor> tensors,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  ValueReport report;
  std::erase_if(tensors, [&](const ValueTensor& v) {
    return !v.tensor->dtype || audit.data_starts[v.tensor->file] == 0;
  });
  std::sort(tensors.begin(), tensors.end(), [](const ValueTensor& a, const ValueTensor& b) {
    return std::tie(a.tensor->file, a.tensor->begin) < std::tie(b.tensor->file, b.tensor->begin);
  });
  uint64_t total = 0;
  std::map<std::string, PendingLeg> legs;
  for (const ValueTensor& v : tensors) {
    total += v.tensor->end - v.tensor->begin;
    if (!DecodedByItsLoader(v)) continue;
    PendingLeg& leg = legs[v.prefix];
    if (leg.first == nullptr) leg.first = &v;
    leg.decodes = leg.decodes || v.values != SourceValues::kShapeVector;
    ++leg.left;
  }
  // A leg with neither zero points nor g_idx has nothing its decoder would add.
  std::erase_if(legs, [](const auto& leg) { return !leg.second.decodes; });
  for (const ValueTensor& v : tensors) {
    const AuditedTensor& t = *v.tensor;
    report.stretches.push_back({t.file, audit.data_starts[t.file] + t.begin, t.end - t.begin});
  }
  ValueReader reader(audit, &report);
  ReadAhead ahead(report.stretches);
  std::vector<std::byte> buffer;
  int fd = -1;
  uint32_t open_file = UINT32_MAX;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ValueTensor& v = tensors[i];
    const AuditedTensor& t = *v.tensor;
    if (t.file != open_file) {
      if (fd >= 0) close(fd);
      fd = open(audit.files[t.file].c_str(), O_RDONLY | O_CLOEXEC);
      open_file = t.file;
    }
    const uint64_t offset = report.stretches[i].offset;
    const uint64_t length = report.stretches[i].length;
    // A scanned tensor is read a piece at a time (each scanned while in cache); any other whole.
    std::optional<BitScan> scan = reader.ScanFor(v);
    const uint64_t piece = scan ? std::min(length, scan->PieceBytes(kPieceBytes)) : length;
    if (buffer.size() < piece) buffer.resize(piece);
    uint64_t got = 0;
    while (fd >= 0 && got < length) {
      const uint64_t want = std::min(piece, length - got);
      ahead.Before(fd, i, offset + got);
      uint64_t in = 0;
      while (in < want) {
        const ssize_t n =
            pread(fd, buffer.data() + in, want - in, static_cast<off_t>(offset + got + in));
        if (n <= 0) break;
        in += static_cast<uint64_t>(n);
      }
      if (in < want) break;
      if (scan) scan->Add(std::span<const std::byte>(buffer.data(), want));
      got += want;
    }
    report.bytes += length;
    if (got < length) {
      report.findings.push_back({FindingKind::kCheckpoint, CheckpointProblemKind::kUnreadableShard,
                                 true, audit.files[t.file], std::string(t.name), v.layer, "", "",
                                 fmt::format("{}: tensor {}: read {} of its {} bytes",
                                             audit.files[t.file], t.name, got, length)});
      continue;
    }
    const size_t before = report.findings.size();
    const std::span<const std::byte> bytes =
        scan ? std::span<const std::byte>() : std::span<const std::byte>(buffer.data(), length);
    if (scan) {
      reader.Finish(v, *scan);
    } else {
      reader.Check(v, bytes);
    }
    if (progress) progress(report.bytes, total);
    const auto it = DecodedByItsLoader(v) ? legs.find(v.prefix) : legs.end();
    if (it == legs.end()) continue;
    PendingLeg& leg = it->second;
    leg.failed = leg.failed || report.findings.size() != before;
    leg.tensors.push_back({std::string(t.name), *t.dtype, t.shape,
                           std::vector<std::byte>(bytes.begin(), bytes.end())});
    if (--leg.left > 0) continue;
    if (!leg.failed) {
      const ValueTensor& first = *leg.first;
      Result<Checkpoint> values =
          Checkpoint::FromTensors(audit.files[first.tensor->file], std::move(leg.tensors));
      std::optional<SourceValueProblem> problem =
          values.ok()
              ? CheckIntegerSourceValues(*values, first.leg, first.prefix, first.layer)
              : SourceValueProblem{std::nullopt, "", std::string(values.status().message())};
      if (problem) {
        const FindingKind kind = problem->slot == Slot::kWeightZero ? FindingKind::kZeroPoint
                                 : problem->slot == Slot::kGIdx     ? FindingKind::kGroupMap
                                                                    : FindingKind::kBadValue;
        const std::string tensor = problem->tensor.empty() ? first.prefix : problem->tensor;
        const AuditedTensor* held = audit.Find(tensor);
        const std::string& file = audit.files[(held != nullptr ? held : first.tensor)->file];
        report.findings.push_back({kind, std::nullopt, true, file, tensor, first.layer, "", "",
                                   fmt::format("{}: {}", file, problem->message)});
      }
    }
    legs.erase(it);
  }
  if (fd >= 0) close(fd);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace quantpath::pipeline_internal
