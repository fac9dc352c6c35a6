// Materialize: the registered families' candidates, in priority order; the first whose scheme and
// device predicates hold builds the key, and the family's row the spec; the registered activation
// kinds, the first that claims the scheme's input makes its ActivationQuant. Adding a spec or an
// activation kind means adding its file, never a branch here.
#include "quantpath/materialize.h"

#include "fmt/format.h"
#include "quantpath/activation_kinds.h"

namespace quantpath {
namespace {

// How an input no activation kind claims is scaled, for its error.
std::string ScalingText(const TensorQuant& in) {
  const std::string_view when = in.dynamic == Dynamic::kDynamic ? "dynamic"
                                : in.dynamic == Dynamic::kLocal ? "locally dynamic"
                                                                : "static";
  return fmt::format("{}{}", when, in.symmetric ? "" : " asymmetric");
}

// A scheme quantized at load needs a quantizer for its key (src/specs/online/).
Status CheckQuantizesAtLoad(const QuantScheme& scheme, const DeviceCaps& device,
                            const SpecKey& key) {
  QP_ASSIGN_OR_RETURN(ActivationQuant act, ActivationQuantFor(scheme));
  if (QuantizesAtLoad(key, act)) return {};
  std::vector<std::string> targets;
  for (const OnlineTarget& target : OnlineTargets()) {
    if (target.refusal.empty()) targets.push_back(target.scheme.CanonicalName());
  }
  return Unsupported(fmt::format(
      "{} on {}: quantizing high-precision weights into {} at load is not implemented (this "
      "build quantizes at load to {})",
      scheme.CanonicalName(), device.name, key.ToId(), Join(targets, ", ")));
}

}  // namespace

Result<SpecKey> KeyFor(const QuantScheme& scheme, const DeviceCaps& device) {
  // A spec that ignored the rotation would compute a different product.
  if (scheme.input_hadamard != 0) {
    return Unsupported(fmt::format(
        "{} on {}: no physical spec rotates the input by a block Hadamard (width {}) yet",
        scheme.CanonicalName(), device.name, scheme.input_hadamard));
  }
  QP_ASSIGN_OR_RETURN(std::span<const RegisteredCandidate> candidates, RegisteredCandidates());
  std::vector<std::string> elsewhere;
  for (const RegisteredCandidate& c : candidates) {
    if (!c.candidate.scheme(scheme)) continue;
    if (!c.candidate.device(device)) {
      elsewhere.push_back(fmt::format("{} on {}", c.row->grammar(), c.candidate.devices));
      continue;
    }
    QP_ASSIGN_OR_RETURN(SpecKey key, c.candidate.key(scheme));
    if (scheme.online) QP_RETURN_IF_ERROR(CheckQuantizesAtLoad(scheme, device, key));
    return key;
  }
  if (!elsewhere.empty()) {
    return Unsupported(fmt::format("{} on {}: its specs need another device ({})",
                                   scheme.CanonicalName(), device.name, Join(elsewhere, "; ")));
  }
  std::vector<std::string> known;
  for (const RegisteredCandidate& c : candidates) {
    known.push_back(fmt::format("{} ({})", c.row->grammar(), c.candidate.accepts));
  }
  return Unsupported(
      fmt::format("{} on {}: no physical spec stores {} weights with {} scales yet; specs: {}",
                  scheme.CanonicalName(), device.name, QDTypeName(scheme.weight.dtype),
                  GranularityName(scheme.weight.granularity), Join(known, "; ")));
}

Result<std::shared_ptr<const WeightSpec>> Materialize(const QuantScheme& scheme,
                                                      const DeviceCaps& device) {
  QP_ASSIGN_OR_RETURN(SpecKey key, KeyFor(scheme, device));
  QP_ASSIGN_OR_RETURN(ActivationQuant act, ActivationQuantFor(scheme));
  Result<std::unique_ptr<WeightSpec>> spec =
      scheme.online ? MakeSpecQuantizingAtLoad(key, act, scheme.weight.load)
                    : MakeSpec(key, act, scheme.weight.load);
  if (!spec.ok()) return spec.status().WithContext(scheme.CanonicalName());
  return std::shared_ptr<const WeightSpec>(std::move(*spec));
}

Result<ActivationQuant> ActivationQuantFor(const QuantScheme& scheme) {
  if (!scheme.input) return ActivationQuant{};
  const TensorQuant& in = *scheme.input;
  if (const ActivationKindRow* kind = ActivationKindClaiming(in)) return kind->Quant(in);
  return Unsupported(fmt::format("{}: {} {} activations with {} scales have no kernel mode",
                                 scheme.CanonicalName(), ScalingText(in), QDTypeName(in.dtype),
                                 GranularityName(in.granularity)));
}

namespace {

// `bytes_of` of the request, or, for an moe request, of each expert's projections
// (ExpertProjectionRequests) as LoadExperts allocates them, times the experts.
template <typename BytesOf>
Result<int64_t> SiteBytes(const AllocationRequest& request, BytesOf bytes_of) {
  if (request.experts <= 0) return bytes_of(request);
  QP_ASSIGN_OR_RETURN(const std::vector<AllocationRequest> projections,
                      ExpertProjectionRequests(request));
  int64_t per_expert = 0;
  for (const AllocationRequest& projection : projections) {
    QP_ASSIGN_OR_RETURN(const int64_t bytes, bytes_of(projection));
    per_expert += bytes;
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(per_expert, request.experts, &total)) {
    return InvalidInput(fmt::format("{}: {} experts of {} bytes do not fit in 64 bits",
                                    request.layer, request.experts, per_expert));
  }
  return total;
}

}  // namespace

Result<int64_t> StorageBytes(const SpecKey& key, const AllocationRequest& request,
                             const ActivationQuant& act, const LoadFacts& facts) {
  // A family whose loader is not in this build still has a layout, and so a size.
  const Result<std::unique_ptr<WeightSpec>> spec = MakeSpec(key, act, facts);
  if (!spec.ok() && spec.status().code() != ErrorCode::kUnsupported) return spec.status();
  return SiteBytes(request, [&](const AllocationRequest& r) {
    return spec.ok() ? (*spec)->StorageBytes(r) : LayoutStorageBytes(key, r);
  });
}

Result<int64_t> StorageBytes(const WeightSpec& spec, const AllocationRequest& request) {
  return SiteBytes(request, [&](const AllocationRequest& r) { return spec.StorageBytes(r); });
}

AllocationRequest RequestForSite(const LayerSite& site, QDType params_dtype,
                                 const DeviceCaps& device) {
  AllocationRequest request;
  request.layer = site.path;
  if (site.shape) request.shape = *site.shape;
  // An moe site's legs are one expert's: their names only (ExpertProjectionRequests builds the
  // shapes).
  for (const Leg& leg : site.legs) {
    if (site.kind != SiteKind::kMoe) request.leg_rows.push_back(leg.rows);
    request.leg_names.push_back(leg.name);
  }
  request.params_dtype = params_dtype;
  request.device = device;
  request.experts = site.kind == SiteKind::kMoe ? site.experts : 0;
  if (site.kind == SiteKind::kMoe && site.stacked_experts) {
    request.stacked = StackedExpert{.experts = site.experts};
  }
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
