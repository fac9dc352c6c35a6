// Canonical scheme names: w<weight bits>a<activation bits>-<dtype>-<granularity>[-extras].
#include <functional>

#include "fmt/format.h"
#include "quantpath/ir.h"

namespace quantpath {
namespace {

// Formats whose granularity is part of the format itself (NVFP4 is always 16-wide E4M3 scales).
bool GranularityImplied(QDType t) {
  return t == QDType::kNVFP4 || t == QDType::kMXFP4 || t == QDType::kMXFP8 || t == QDType::kNF4 ||
         t == QDType::kFP4;
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

void HashCombine(size_t* seed, size_t v) {
  *seed ^= v + 0x9e3779b97f4a7c15ULL + (*seed << 6) + (*seed >> 2);
}

size_t HashTensor(const TensorQuant& t) {
  size_t h = 0;
  HashCombine(&h, static_cast<size_t>(t.dtype));
  HashCombine(&h, static_cast<size_t>(t.granularity));
  HashCombine(&h, static_cast<size_t>(t.group_size.value_or(-7)));
  if (t.block_shape) {
    HashCombine(&h, static_cast<size_t>((*t.block_shape)[0]));
    HashCombine(&h, static_cast<size_t>((*t.block_shape)[1]));
  }
  HashCombine(&h, t.symmetric);
  HashCombine(&h, static_cast<size_t>(t.dynamic));
  HashCombine(&h, t.micro_scaled);
  HashCombine(&h, static_cast<size_t>(t.load.layout));
  HashCombine(&h, static_cast<size_t>(t.load.zero_point));
  HashCombine(&h, t.load.act_order);
  HashCombine(&h, t.load.double_quant);
  return h;
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
  if (online) name += "-online";
  return name;
}

size_t Hash(const QuantScheme& s) {
  size_t h = HashTensor(s.weight);
  if (s.input) HashCombine(&h, HashTensor(*s.input));
  if (s.output) HashCombine(&h, HashTensor(*s.output));
  HashCombine(&h, s.online);
  return h;
}

}  // namespace quantpath
