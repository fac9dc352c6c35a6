// The output folder's writer (write_folder.h).
#include "src/export/write_folder.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fmt/format.h"
#include "quantpath/threads.h"
#include "src/export/engine_notes.h"
#include "src/export/model_files.h"
#include "src/export/output_folder.h"
#include "src/export/shards.h"

namespace quantpath::export_internal {
namespace {

namespace fs = std::filesystem;

// While alive, a batch's threads may open teams of their own: a layer's quantizer splits its rows
// over threads, so the largest layer of a batch keeps every core busy once the others are done.
class NestedTeams {
 public:
  NestedTeams() {
#ifdef _OPENMP
    saved_ = omp_get_max_active_levels();
    omp_set_max_active_levels(2);
#endif
  }
  ~NestedTeams() {
#ifdef _OPENMP
    omp_set_max_active_levels(saved_);
#endif
  }
  NestedTeams(const NestedTeams&) = delete;
  NestedTeams& operator=(const NestedTeams&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

// A produced unit's tensors against what it described: an error here is a bug of the unit, named
// with its layer rather than left to corrupt a shard.
Status CheckProduced(const ExportUnit& unit, const std::vector<OutputBytes>& bytes) {
  if (bytes.size() != unit.outputs.size()) {
    return InternalError(fmt::format("{}: {} tensors produced, {} described", unit.layer,
                                     bytes.size(), unit.outputs.size()));
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i].view.size() != TensorByteLength(unit.outputs[i])) {
      return InternalError(fmt::format("{}: tensor {}: {} bytes produced, its header needs {}",
                                       unit.layer, unit.outputs[i].name, bytes[i].view.size(),
                                       TensorByteLength(unit.outputs[i]).value_or(0)));
    }
  }
  return {};
}

std::vector<std::string> FilesOf(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code error;
  for (const fs::directory_entry& e : fs::directory_iterator(folder, error)) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

void Describe(const FormatRow& row, const QuantScheme& scheme, SourceLayout layout,
              const std::vector<std::string>& ignore, FolderContent* content) {
  content->quantization_config = row.config(scheme, layout, ignore);
  if (row.description_files) {
    content->description_files = row.description_files(content->quantization_config);
  }
}

Result<ExportReport> WriteModelFolder(const std::string& out_dir, FolderContent content,
                                      const ExportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  QP_ASSIGN_OR_RETURN(std::unique_ptr<OutputFolder> folder,
                      OutputFolder::Create(content.in_dir, out_dir, options.force));
  ExportReport report = std::move(content.report);
  std::vector<TensorHeader> headers;
  ExportProgress progress;
  for (const ExportUnit& unit : content.units) {
    report.tensors_in += static_cast<int64_t>(unit.inputs.size());
    report.bytes_in += unit.bytes_in;
    for (const TensorHeader& t : unit.outputs) {
      const std::optional<uint64_t> length = TensorByteLength(t);
      if (!length) return InvalidInput(fmt::format("{}: tensor {}: bad shape", unit.layer, t.name));
      headers.push_back(t);
      progress.bytes_total += static_cast<int64_t>(*length);
    }
  }
  progress.tensors_total = static_cast<int64_t>(headers.size());
  ShardWriter shards(folder->temp(), PlanShards(headers, options.max_shard_bytes));

  // A batch of units per round: each produced on its own thread, then written in order, so at
  // most `threads` layers are held at once. The tensors copied as stored between them ride along
  // (they are views of the input), so every thread gets a layer.
  const int threads = options.threads > 0 ? options.threads : DefaultThreads();
  std::vector<Result<std::vector<OutputBytes>>> produced;
  const NestedTeams nested;
  for (size_t first = 0, n = 0; first < content.units.size(); first += n) {
    int layers = 0;
    for (n = 0; first + n < content.units.size(); ++n) {
      const bool layer = !content.units[first + n].layer.empty();
      if (layer && layers == std::max(1, threads)) break;
      layers += layer ? 1 : 0;
    }
    produced.assign(n, InternalError("not produced"));
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t i = 0; i < n; ++i) produced[i] = content.units[first + i].produce();
    for (size_t i = 0; i < n; ++i) {
      const ExportUnit& unit = content.units[first + i];
      if (!produced[i].ok()) return produced[i].status();
      QP_RETURN_IF_ERROR(CheckProduced(unit, *produced[i]));
      for (const OutputBytes& bytes : *produced[i]) {
        QP_RETURN_IF_ERROR(shards.Write(bytes.view));
        ++progress.tensors_done;
        progress.bytes_done += static_cast<int64_t>(bytes.view.size());
        if (options.progress) options.progress(progress);
      }
      produced[i] = InternalError("written");  // free the layer's bytes
    }
  }
  report.tensors_out = progress.tensors_total;
  QP_ASSIGN_OR_RETURN(report.bytes_out, shards.Finish());
  const fs::path in = content.in_dir;
  QP_RETURN_IF_ERROR(WriteConfig(in, folder->temp(), content.quantization_config));
  for (const auto& [name, json] : content.description_files) {
    QP_RETURN_IF_ERROR(WriteFileAtomically(folder->temp() / name, ToJson(json, 4) + "\n"));
  }
  QP_RETURN_IF_ERROR(CopyOtherFiles(in, folder->temp(), &report.notes));
  report.files = FilesOf(folder->temp());
  for (const std::string& file : report.files) {
    if (file.ends_with(".safetensors") || file == "model.safetensors.index.json") continue;
    std::error_code error;
    report.bytes_out += static_cast<int64_t>(fs::file_size(folder->temp() / file, error));
  }
  QP_RETURN_IF_ERROR(folder->Commit());
  report.out_dir = folder->out().string();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.gb_per_s = report.seconds > 0 ? static_cast<double>(report.bytes_in + report.bytes_out) /
                                             report.seconds / 1e9
                                       : 0;
  AddEngineNotes(report.out_dir, &report.notes);
  return report;
}

}  // namespace quantpath::export_internal
