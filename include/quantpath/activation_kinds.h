// quantpath activation kinds: the ways X is quantized before a layer's product, one
// self-registering row per kind, as spec families are (specs.h).
//
// Goals: a kind's row says everything the library needs about one way of quantizing X — which
// scheme inputs it runs (a predicate on the input TensorQuant), the ActivationQuant its kernels
// see, its name in messages, X rounded in fp32 as the reference kernels take it, X rounded in
// double as the fp64 reference takes it, and the static inputs it reads from a checkpoint — so
// that adding a kind is one file under src/specs/activations/. Materialize, the reference kernels
// and the fp64 reference loop over the rows and name no kind. Non-goals: which specs accept a
// kind (each family's Make), the codes fast kernels make of X (int8_activations.h, …).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"
#include "quantpath/checkpoint.h"
#include "quantpath/ir.h"
#include "quantpath/specs.h"

namespace quantpath {

// Where a kind rounds X to e4m3 with one fp32 scale per run of `group` columns of a row (group =
// k: one per row): one scale for all of X, given (the static input scale) or measured over X
// (dynamic per tensor), or each run's own.
struct E4m3Runs {
  int64_t group = 0;
  std::optional<float> fixed_scale{};
  bool whole_x = false;
};

class ActivationKindRow {
 public:
  virtual ~ActivationKindRow() = default;
  // The kind's name ("nvfp4_per_token_global"); its ActivationKind is the name's hash.
  virtual std::string_view name() const = 0;
  // Rows are asked by descending priority, then by name: a kind that claims some of another's
  // inputs (int8 per token among all per-token inputs) has the higher priority.
  virtual int priority() const = 0;

  // Whether the kind quantizes the scheme input `in`.
  virtual bool Claims(const TensorQuant& in) const = 0;
  // The ActivationQuant of an input the kind claims; its own id in `kind` where mode, dtype,
  // group and symmetry do not name it.
  virtual ActivationQuant Quant(const TensorQuant& in) const = 0;
  // Whether `act`, which carries no kind id, is this kind's: true for the ActivationQuant values
  // a kind named by those fields makes. A kind that carries its id answers false (the default):
  // FindActivationKind finds it by the id.
  virtual bool Describes(const ActivationQuant& act) const;
  // ActivationQuant::ToString: by default "<dtype> <mode>[ asym]" (ActivationFieldsText).
  virtual std::string Text(const ActivationQuant& act) const;

  // X [m, k] (fp32, multiplied by the input prescale where the layer has one) rounded in place as
  // the reference kernels take it, values q × scale; static inputs from `params`' input slots.
  virtual void RoundFloats(std::vector<float>* x, int64_t m, int64_t k, const ActivationQuant& act,
                           const LinearParams& params) const = 0;
  // How the kind cuts X into e4m3 runs, for kernels that multiply e4m3 values and scales apart
  // (reference::PrepareFp8Codes); nullopt (the default) where it does not round X that way.
  virtual std::optional<E4m3Runs> RunsOf(const ActivationQuant& act, int64_t k,
                                         const LinearParams& params) const;
  // X [m, k] rounded and dequantized in double, as QuantizeActivationsReference documents.
  virtual std::vector<double> RoundReference(std::span<const double> x, int64_t m, int64_t k,
                                             const ActivationQuant& act,
                                             std::optional<double> static_scale,
                                             std::optional<double> static_zero_point) const = 0;

  // The slots of the static inputs the kind reads from a checkpoint (input scale, zero point,
  // NVFP4's input divisor), for the families that store them; none by default.
  virtual std::vector<Slot> StaticSlots(const ActivationQuant& act) const;
  // The fp64 reference's static inputs of a layer of `scheme` (each leg's under `leg_prefixes`),
  // combined over the legs as the engines do, into `layer`'s input_scale and input_zero_point.
  // Errors name the layer and the tensor. Nothing by default.
  virtual Status ReadReferenceInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                     std::string_view layer_name,
                                     const std::vector<std::string>& leg_prefixes,
                                     ReferenceLayer* layer) const;
  // The same for one MoE expert projection whose engines share its inputs over the experts
  // (`input_peers`: the projection's prefix in every expert), over what ReadReferenceInputs read
  // for the projection alone; by default the projection keeps its own.
  virtual Status ShareExpertInputs(const Checkpoint& checkpoint, const QuantScheme& scheme,
                                   std::string_view layer_name,
                                   const std::vector<std::string>& input_peers,
                                   ReferenceLayer* layer) const;
};

// Registers a kind's row from its own file, before main():
//   const ActivationKindRegistrar kRegister(std::make_unique<Nvfp4PerTokenGlobal>());
// A second row with the same name or hash is kept out and reported by
// RegisteredActivationKinds().
struct ActivationKindRegistrar {
  explicit ActivationKindRegistrar(std::unique_ptr<ActivationKindRow> row);
};
// The registered rows by descending priority, then name; an error when two rows collided at
// registration.
Result<std::vector<const ActivationKindRow*>> RegisteredActivationKinds();
// The first row (in that order) that claims `in`, or nullptr.
const ActivationKindRow* ActivationKindClaiming(const TensorQuant& in);
// The row of `act`: the one whose id act.kind holds, else the first that Describes it; nullptr
// for an id no row has.
const ActivationKindRow* FindActivationKind(const ActivationQuant& act);
// FindActivationKind for an `act` some row made (ActivationQuantFor) or that names no kind id:
// every ActMode has a kind in this library, so only an id whose row is not linked in is missing,
// and that aborts.
const ActivationKindRow& ActivationKindOf(const ActivationQuant& act);

// "<dtype> <mode>[ asym]": "fp8 dynamic per-token", "int8 static per-tensor asym", "fp8 dynamic
// group 128"; "none" for kNone.
std::string ActivationFieldsText(const ActivationQuant& act);
// The fields a kind named by them fills from `in` for `mode`: the input's dtype and symmetry, and
// for kDynamicGroup the columns of X one scale covers (XGroupOf).
ActivationQuant ActivationFields(const TensorQuant& in, ActMode mode);
// The columns of one row of X that one scale covers, for inputs scaled per row and group (group or
// tensor-group granularity with a positive group_size, or a 1 × k block); nullopt otherwise.
std::optional<int64_t> XGroupOf(const TensorQuant& in);

}  // namespace quantpath
