// The importers quantpath knows, in detection order. Each importer file defines one factory.
#pragma once

#include <vector>

#include "quantpath/importers.h"

namespace quantpath {

const Importer* Fp8Importer();
const Importer* CompressedTensorsImporter();
const Importer* ModelOptImporter();
const Importer* ModelSlimImporter();
const Importer* AutoRoundImporter();
const Importer* GptqImporter();
const Importer* AwqImporter();
const Importer* BitsAndBytesImporter();
const Importer* Mxfp4Importer();
const Importer* W8a8Int8Importer();
const Importer* W8a8Fp8Importer();
const Importer* W4afp8Importer();
const Importer* DeepseekV4Fp8Importer();
const Importer* QuarkImporter();
const Importer* FbgemmFp8Importer();
const Importer* HqqImporter();
const Importer* TorchaoImporter();
const Importer* GgufImporter();
const Importer* MlxImporter();
const Importer* FpQuantImporter();
const Importer* HummingImporter();
// vLLM's online shorthands (fp8_per_block, mxfp8, …), one importer each; never detected.
std::vector<const Importer*> VllmOnlineImporters();
// The MLX description (config.json `quantization` or `quantization_config` with bits and
// group_size and no quant_method), or nullptr.
const Json* LocateMlx(const ConfigSources& sources);

inline std::vector<const Importer*> MakeImporterList() {
  std::vector<const Importer*> importers = {
      Fp8Importer(),
      // AutoRound before GPTQ and AWQ: its exports may say quant_method "awq" / "gptq" and are
      // told apart by AutoRound's own keys (provider, autoround_version).
      AutoRoundImporter(),
      // GPTQ and AWQ also accept standalone files without quant_method (quantize_config.json,
      // AutoAWQ's quant_config.json); each refuses the other's keys, so their order is free.
      GptqImporter(),
      AwqImporter(),
      BitsAndBytesImporter(),
      Mxfp4Importer(),
      // SGLang's own methods, each keyed on its quant_method.
      W8a8Int8Importer(),
      W8a8Fp8Importer(),
      // vLLM 0.34's w4afp8 and deepseek_v4_fp8, each keyed on its quant_method.
      W4afp8Importer(),
      DeepseekV4Fp8Importer(),
      // Recognised and rejected until supported, each keyed on its quant_method.
      QuarkImporter(),
      FbgemmFp8Importer(),
      HqqImporter(),
      TorchaoImporter(),
      GgufImporter(),
      FpQuantImporter(),
      HummingImporter(),
      // compressed-tensors: quant_method "compressed-tensors", or a bare library dict with
      // config_groups (checked after the formats that key on their own quant_method).
      CompressedTensorsImporter(),
      // ModelOpt: quant_method "modelopt*" embedded, else hf_quant_config.json when config.json
      // embeds no other format's description.
      ModelOptImporter(),
      // ModelSlim: quant_model_description.json (SGLang detects it without --quantization).
      ModelSlimImporter(),
      // MLX has no quant_method: it is recognised from field shapes alone ({group_size, bits}
      // under quantization / quantization_config), so it is tried last.
      MlxImporter(),
  };
  // Only --quantization names them: they describe no checkpoint.
  for (const Importer* online : VllmOnlineImporters()) importers.push_back(online);
  return importers;
}

}  // namespace quantpath
