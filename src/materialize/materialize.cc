// Materialize: an ordered candidate list of (predicate, spec factory); the first candidate whose
// predicate holds builds the spec. Adding a spec means adding a row, never a branch elsewhere.
#include "quantpath/materialize.h"

#include "fmt/format.h"

namespace quantpath {
namespace {

using SpecResult = Result<std::unique_ptr<WeightSpec>>;

struct Candidate {
  std::string_view spec;     // the spec_id (pattern) it builds, for messages
  std::string_view accepts;  // what its predicate accepts, in words
  bool (*matches)(const QuantScheme& scheme, const DeviceCaps& device);
  SpecResult (*make)(const QuantScheme& scheme, const DeviceCaps& device);
};

bool IsUnquantized(const QuantScheme& scheme, const DeviceCaps&) {
  const QDType dtype = scheme.weight.dtype;
  return dtype == QDType::kBF16 || dtype == QDType::kFP16 || dtype == QDType::kFP32;
}

template <Granularity kGranularity>
bool IsFp8With(const QuantScheme& scheme, const DeviceCaps&) {
  return scheme.weight.dtype == QDType::kFP8E4M3 && scheme.weight.granularity == kGranularity;
}

SpecResult MakeBf16(const QuantScheme&, const DeviceCaps&) { return MakeBf16Spec(); }

SpecResult MakeFp8(const QuantScheme& scheme, const DeviceCaps& device) {
  const TensorQuant& w = scheme.weight;
  const std::string name = scheme.CanonicalName();
  if (scheme.online) {
    return Unsupported(
        fmt::format("{} on {}: quantizing high-precision weights to fp8 at load "
                    "time is not implemented",
                    name, device.name));
  }
  if (!w.symmetric) {
    return Unsupported(
        fmt::format("{} on {}: asymmetric fp8 weights have no spec", name, device.name));
  }
  SpecKey key;
  switch (w.granularity) {
    case Granularity::kPerTensor:
      key.family = SpecFamily::kFp8PerTensor;
      break;
    case Granularity::kPerChannel:
      key.family = SpecFamily::kFp8PerChannel;
      break;
    default:
      key.family = SpecFamily::kFp8Block;
      if (!w.block_shape || (*w.block_shape)[0] <= 0 || (*w.block_shape)[1] <= 0) {
        return InvalidInput(
            fmt::format("{} on {}: block fp8 weights need a positive "
                        "block_shape [n, k]",
                        name, device.name));
      }
      key.block = *w.block_shape;
      break;
  }
  QP_ASSIGN_OR_RETURN(ActivationQuant act, ActivationQuantFor(scheme));
  return MakeFp8Spec(key, act);
}

// In order: the first candidate whose predicate holds builds the spec.
constexpr Candidate kCandidates[] = {
    {"bf16", "unquantized (bf16, fp16, fp32) weights", IsUnquantized, MakeBf16},
    {"fp8_per_tensor", "fp8 e4m3 weights with per-tensor scales",
     IsFp8With<Granularity::kPerTensor>, MakeFp8},
    {"fp8_per_channel", "fp8 e4m3 weights with per-channel scales",
     IsFp8With<Granularity::kPerChannel>, MakeFp8},
    {"fp8_block_<n>_<k>", "fp8 e4m3 weights with 2-D block scales", IsFp8With<Granularity::kBlock>,
     MakeFp8},
};

std::unique_ptr<WeightSpec> SpecForKey(const SpecKey& key) {
  if (key.family == SpecFamily::kBf16) return MakeBf16Spec();
  return MakeFp8Spec(key, ActivationQuant{});
}

}  // namespace

Result<std::unique_ptr<WeightSpec>> Materialize(const QuantScheme& scheme,
                                                const DeviceCaps& device) {
  for (const Candidate& candidate : kCandidates) {
    if (candidate.matches(scheme, device)) return candidate.make(scheme, device);
  }
  std::vector<std::string> known;
  for (const Candidate& candidate : kCandidates) {
    known.push_back(fmt::format("{} ({})", candidate.spec, candidate.accepts));
  }
  return Unsupported(
      fmt::format("{} on {}: no physical spec stores {} weights with {} scales yet; specs: {}",
                  scheme.CanonicalName(), device.name, QDTypeName(scheme.weight.dtype),
                  GranularityName(scheme.weight.granularity), Join(known, "; ")));
}

Result<std::string> SpecIdFor(const QuantScheme& scheme, const DeviceCaps& device) {
  QP_ASSIGN_OR_RETURN(std::unique_ptr<WeightSpec> spec, Materialize(scheme, device));
  return spec->spec_id();
}

Result<ActivationQuant> ActivationQuantFor(const QuantScheme& scheme) {
  if (!scheme.input) return ActivationQuant{};
  const TensorQuant& in = *scheme.input;
  const std::string name = scheme.CanonicalName();
  if (in.dtype != QDType::kFP8E4M3) {
    return Unsupported(fmt::format("{}: {} activations have no kernel mode (fp8 e4m3 only)", name,
                                   QDTypeName(in.dtype)));
  }
  if (!in.symmetric || in.dynamic == Dynamic::kLocal) {
    return Unsupported(fmt::format("{}: {} fp8 activations have no kernel mode", name,
                                   !in.symmetric ? "asymmetric" : "locally dynamic"));
  }
  const bool dynamic = in.dynamic == Dynamic::kDynamic;
  switch (in.granularity) {
    case Granularity::kPerTensor:
      return ActivationQuant{dynamic ? ActMode::kDynamicPerTensor : ActMode::kStaticPerTensor, 0};
    case Granularity::kPerToken:
    case Granularity::kPerChannel:
      if (dynamic) return ActivationQuant{ActMode::kDynamicPerToken, 0};
      break;
    case Granularity::kGroup:
      if (dynamic && in.group_size && *in.group_size > 0) {
        return ActivationQuant{ActMode::kDynamicGroup, *in.group_size};
      }
      break;
    case Granularity::kBlock:
      // A 1 × k block of X is a group of k columns of one row.
      if (dynamic && in.block_shape && (*in.block_shape)[0] == 1 && (*in.block_shape)[1] > 0) {
        return ActivationQuant{ActMode::kDynamicGroup, (*in.block_shape)[1]};
      }
      break;
    default:
      break;
  }
  return Unsupported(fmt::format("{}: {} fp8 activations with {} scales have no kernel mode", name,
                                 dynamic ? "dynamic" : "static", GranularityName(in.granularity)));
}

Result<int64_t> StorageBytes(std::string_view spec_id, const AllocationRequest& request) {
  QP_ASSIGN_OR_RETURN(SpecKey key, ParseSpecId(spec_id));
  const std::unique_ptr<WeightSpec> spec = SpecForKey(key);
  if (request.experts <= 0) return spec->StorageBytes(request);
  const auto [intermediate, hidden] = request.shape;
  if (request.tp_size < 1 || intermediate % request.tp_size != 0) {
    return InvalidInput(
        fmt::format("{}: MoE intermediate size {} is not divisible by "
                    "tensor-parallel size {}",
                    request.layer, intermediate, request.tp_size));
  }
  const int64_t slice = intermediate / request.tp_size;
  AllocationRequest projection;
  projection.layer = request.layer;
  projection.params_dtype = request.params_dtype;
  projection.device = request.device;
  int64_t per_expert = 0;
  for (std::array<int64_t, 2> shape :
       {std::array<int64_t, 2>{slice, hidden}, std::array<int64_t, 2>{slice, hidden},
        std::array<int64_t, 2>{hidden, slice}}) {
    projection.shape = shape;
    QP_ASSIGN_OR_RETURN(int64_t bytes, spec->StorageBytes(projection));
    per_expert += bytes;
  }
  return per_expert * request.experts;
}

AllocationRequest RequestForSite(const LayerSite& site, QDType params_dtype,
                                 const DeviceCaps& device) {
  AllocationRequest request;
  request.layer = site.path;
  if (site.shape) request.shape = *site.shape;
  if (site.kind != SiteKind::kMoe) {
    for (const Leg& leg : site.legs) {
      request.leg_rows.push_back(leg.rows);
      request.leg_names.push_back(leg.name);
    }
  }
  request.params_dtype = params_dtype;
  request.device = device;
  request.experts = site.kind == SiteKind::kMoe ? site.experts : 0;
  request.bias = site.bias;
  return request;
}

std::vector<std::string> LegPrefixes(const LayerSite& site) {
  if (site.legs.empty() || site.kind == SiteKind::kMoe) return {site.path};
  std::vector<std::string> prefixes;
  for (size_t leg = 0; leg < site.legs.size(); ++leg) prefixes.push_back(site.LegPath(leg));
  return prefixes;
}

}  // namespace quantpath
