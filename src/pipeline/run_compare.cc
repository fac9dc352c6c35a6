// The seeded input of `run` and its error against the double-precision reference.
#include "src/pipeline/run_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "fmt/format.h"
#include "quantpath/numeric.h"

namespace quantpath::pipeline_internal {

std::vector<uint16_t> RandomInput(uint64_t seed, int64_t count) {
  std::mt19937_64 rng(seed);
  std::vector<uint16_t> x(static_cast<size_t>(count));
  for (uint16_t& v : x) {
    const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
    v = FloatToBf16(static_cast<float>(2.0 * u - 1.0));
  }
  return x;
}

std::vector<double> Bf16ToDouble(std::span<const uint16_t> x) {
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = Bf16ToFloat(x[i]);
  return xd;
}

Result<std::vector<double>> InputToDouble(const ConstMatrix& x, std::string_view layer) {
  std::vector<double> xd(static_cast<size_t>(x.rows * x.cols));
  const auto* bits = static_cast<const uint16_t*>(x.data);
  switch (x.dtype) {
    case QDType::kBF16:
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = Bf16ToFloat(bits[i]);
      return xd;
    case QDType::kFP16:
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = Fp16ToFloat(bits[i]);
      return xd;
    case QDType::kFP32:
      for (size_t i = 0; i < xd.size(); ++i) xd[i] = static_cast<const float*>(x.data)[i];
      return xd;
    default:
      return InvalidInput(fmt::format("{}: input dtype {}: expected bf16, fp16 or fp32", layer,
                                      QDTypeName(x.dtype)));
  }
}

std::string LegalTpSizes(const std::function<bool(int64_t)>& fits) {
  std::vector<std::string> legal;
  for (int64_t tp = 1; tp <= 64; ++tp) {
    if (fits(tp)) legal.push_back(std::to_string(tp));
  }
  return Join(legal, ", ");
}

Measure MeasureFor(const QuantScheme& scheme, const SpecKey& key, const ActivationQuant& act) {
  if (scheme.online) return {ActivationQuant{}, std::nan(""), true};
  return {act, ToleranceFor(key, act.mode), false};
}

void Measure::Apply(const LinearParams& params, LayerRun* run) const {
  run->tol = tol;
  run->quantized_at_load = quantized_at_load;
  if (params.quantization_error) {
    run->weight_error = std::max(run->weight_error.value_or(0.0), *params.quantization_error);
  }
}

double ErrorStats::rel() const {
  return max_ref > 0 ? max_abs / max_ref : std::numeric_limits<double>::quiet_NaN();
}

void ErrorStats::Fill(LayerRun* run) const {
  run->max_abs = max_abs;
  run->mean_abs = mean_abs();
  run->rel = rel();
  run->zero_reference = max_ref == 0;
}

void ErrorStats::Add(std::span<const float> y, int64_t y_stride, const ReferenceLayer& ref,
                     const ActivationQuant& act, std::span<const double> x, int64_t m) {
  const std::vector<double> y_ref = ReferenceForward(ref, act, x, m);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ref.rows; ++j) {
      const double expected = y_ref[i * ref.rows + j];
      const double diff = std::fabs(y[i * y_stride + j] - expected);
      // A NaN stays (std::max keeps its first argument), so the run cannot pass.
      max_abs = std::isnan(diff) ? diff : std::max(max_abs, diff);
      sum_abs += diff;
      max_ref = std::max(max_ref, std::fabs(expected));
    }
  }
  count += m * ref.rows;
}

}  // namespace quantpath::pipeline_internal
