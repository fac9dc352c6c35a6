// The steps OpenModel takes, shared with the commands that open one folder under several dialects
// (diff), so that every command reads the folder and imports its plan the same way.
#pragma once

#include <string>

#include "quantpath/pipeline.h"

namespace quantpath::pipeline_internal {

// A model folder's config files as `options` launches the engine, before any dialect reads them.
struct ModelFolder {
  std::string dir;  // ResolveModelDir of the name given
  ConfigSources sources;
};
// `listing`, where given, stands for the folder's checkpoint (ConfigSources::Load).
Result<ModelFolder> ReadModelFolder(const std::string& given, const OpenOptions& options,
                                    const CheckpointListing* listing = nullptr);

// The plan `options`' dialect imports from the folder: the importer with the dialect's name mapper,
// then --online, --int8-activations and the importer's refinement from the checkpoint's data.
Result<QuantPlan> ImportModelPlan(const ModelFolder& folder, const OpenOptions& options);

// OpenModel's steps after ReadModelFolder: the plan and the sites.
Result<Model> OpenModelFolder(ModelFolder folder, const OpenOptions& options);

}  // namespace quantpath::pipeline_internal
