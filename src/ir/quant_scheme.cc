// Canonical scheme names: w<weight bits>a<activation bits>-<dtype>-<granularity>[-extras].
#include "fmt/format.h"
#include "quantpath/ir.h"

namespace quantpath {
namespace {

// Formats whose granularity is part of the format itself (NVFP4 is always 16-wide E4M3 scales).
bool GranularityImplied(QDType t) {
  return t == QDType::kNVFP4 || t == QDType::kMXFP4 || t == QDType::kMXFP8 || t == QDType::kNF4 ||
         t == QDType::kFP4 || t == QDType::kLUTB;
}

std::string GranularityPart(const TensorQuant& w) {
  switch (w.granularity) {
    case Granularity::kPerTensor:
      return "tensor";
    case Granularity::kPerChannel:
      return "channel";
    case Granularity::kGroup:
      return w.group_size ? fmt::format("g{}", *w.group_size) : std::string("group");
    case Granularity::kBlock:
      return w.block_shape ? fmt::format("block{}x{}", (*w.block_shape)[0], (*w.block_shape)[1])
                           : std::string("block");
    case Granularity::kPerToken:
      return "token";
    case Granularity::kTensorGroup:
      return w.group_size ? fmt::format("tg{}", *w.group_size) : std::string("tensor_group");
    case Granularity::kAttnHead:
      return "head";
  }
  return "?";
}

}  // namespace

std::string QuantScheme::CanonicalName() const {
  const QDTypeInfo& w = Info(weight.dtype);
  int a_bits = input ? Info(input->dtype).bits : 16;
  std::string name = fmt::format("w{}a{}-{}", w.bits, a_bits, w.name_short);
  if (!GranularityImplied(weight.dtype)) {
    name += '-';
    name += GranularityPart(weight);
  }
  if (!weight.symmetric) name += "-asym";
  if (input && !GranularityImplied(weight.dtype)) {
    if (input->dtype != weight.dtype) {
      name += fmt::format("-a{}", Info(input->dtype).name_short);
    }
    if (input->dynamic == Dynamic::kDynamic) name += "-dyn";
    if (input->dynamic == Dynamic::kStatic) name += "-static";
    if (!input->symmetric) name += "-aasym";
  }
  if (input_hadamard != 0) name += fmt::format("-had{}", input_hadamard);
  if (online) name += "-online";
  return name;
}

}  // namespace quantpath
