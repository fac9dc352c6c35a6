// Linear: spec + parameters + dispatcher. Every format takes the same path: probe, select, apply.
#include "quantpath/linear.h"

#include "fmt/format.h"

namespace quantpath {

Linear::Linear(std::shared_ptr<const WeightSpec> spec, LinearParams params,
               std::shared_ptr<Dispatcher> dispatcher)
    : spec_(std::move(spec)), params_(std::move(params)), dispatcher_(std::move(dispatcher)) {}

Result<Linear> Linear::Create(std::shared_ptr<const WeightSpec> spec, LinearParams params,
                              std::shared_ptr<Dispatcher> dispatcher) {
  if (params.key != spec->key()) {
    return InvalidInput(fmt::format("{}: parameters of spec {} given to spec {}",
                                    params.request.layer, params.key.ToId(), spec->key().ToId()));
  }
  if (!params.processed) {
    return InvalidInput(
        fmt::format("{}: parameters were not loaded and processed", params.request.layer));
  }
  Linear linear(std::move(spec), std::move(params), std::move(dispatcher));
  // The decode and prefill kernels' prepacks now, not in the first Forward of each (a kernel's
  // Prepare makes its prepack once, so one kernel for both prepares once).
  for (const int64_t m : {int64_t{1}, int64_t{512}}) {
    if (Result<const LinearKernel*> kernel = linear.KernelFor(m, QDType::kBF16, QDType::kBF16);
        kernel.ok()) {
      (*kernel)->Prepare(linear.params_);
    }
  }
  return linear;
}

KernelProbe Linear::Probe(int64_t m, QDType in, QDType out) const {
  return KernelProbe{spec_->key(),
                     m,
                     params_.rows,
                     params_.cols,
                     in,
                     out,
                     params_.request.device,
                     spec_->activation(),
                     params_.tensor(Slot::kWeight).dtype()};
}

Result<const LinearKernel*> Linear::KernelFor(int64_t m, QDType in, QDType out) const {
  return dispatcher_->Select(Probe(m, in, out));
}

Status Linear::Forward(const ConstMatrix& x, const MutableMatrix& y) const {
  if (x.cols != params_.cols || y.cols != params_.rows || x.rows != y.rows || x.data == nullptr ||
      y.data == nullptr) {
    return InvalidInput(fmt::format(
        "{}: Forward of x [{}, {}] into y [{}, {}] does not fit W [{}, {}]", params_.request.layer,
        x.rows, x.cols, y.rows, y.cols, params_.rows, params_.cols));
  }
  Result<const LinearKernel*> kernel = KernelFor(x.rows, x.dtype, y.dtype);
  if (!kernel.ok()) return kernel.status().WithContext(params_.request.layer);
  (*kernel)->Apply(params_, spec_->activation(), x, y);
  return {};
}

Result<std::vector<float>> Linear::Forward(std::span<const float> x, int64_t m) const {
  if (m <= 0 || static_cast<int64_t>(x.size()) != m * params_.cols) {
    return InvalidInput(fmt::format("{}: x has {} values, not {} rows of {}", params_.request.layer,
                                    x.size(), m, params_.cols));
  }
  std::vector<float> y(static_cast<size_t>(m * params_.rows));
  QP_RETURN_IF_ERROR(Forward(ConstMatrix{QDType::kFP32, x.data(), m, params_.cols},
                             MutableMatrix{QDType::kFP32, y.data(), m, params_.rows}));
  return y;
}

Result<Linear> LoadLinear(std::shared_ptr<const WeightSpec> spec, const AllocationRequest& request,
                          const Checkpoint& checkpoint,
                          const std::vector<std::string>& leg_prefixes,
                          std::shared_ptr<Dispatcher> dispatcher) {
  QP_ASSIGN_OR_RETURN(LinearParams params, spec->Allocate(request));
  QP_RETURN_IF_ERROR(spec->Load(checkpoint, leg_prefixes, &params));
  QP_RETURN_IF_ERROR(spec->ProcessAfterLoading(&params));
  return Linear::Create(std::move(spec), std::move(params), std::move(dispatcher));
}

}  // namespace quantpath
