// The `check` report (docs/json/check.md): what CheckFolder found, as JSON and as text.
#include "fmt/format.h"
#include "quantpath/report.h"
#include "src/report/json_fields.h"

namespace quantpath {
namespace {

std::string SizeList(const std::vector<int64_t>& sizes) {
  std::string text;
  for (int64_t size : sizes) text += fmt::format("{}{}", text.empty() ? "" : ", ", size);
  return text.empty() ? "none" : text;
}

// Decimal gigabytes per second of the values pass.
double ReadRate(const CheckReport& report) {
  return static_cast<double>(report.bytes_read) / report.read_seconds / 1e9;
}

}  // namespace

Json CheckToJson(const CheckReport& report, std::string_view model, std::string_view engine) {
  std::vector<Json> findings;
  for (const Finding& f : report.findings) {
    findings.push_back(Json::Object({{"severity", Json::String(f.error ? "error" : "warning")},
                                     {"kind", Json::String(std::string(f.KindName()))},
                                     {"file", NonEmptyOrNull(f.file)},
                                     {"tensor", NonEmptyOrNull(f.tensor)},
                                     {"layer", NonEmptyOrNull(f.layer)},
                                     {"expected", NonEmptyOrNull(f.expected)},
                                     {"found", NonEmptyOrNull(f.found)},
                                     {"message", Json::String(f.message)}}));
  }
  std::vector<Json> not_checked;
  for (const std::string& file : report.not_checked) not_checked.push_back(Json::String(file));
  std::vector<Json> loadable_tp;
  for (int64_t size : report.loadable_tp) loadable_tp.push_back(Json::Int(size));
  std::vector<Json> config_warnings;
  for (const UnmatchedEntry& e : report.unmatched) {
    std::vector<Json> dialects, suggestions;
    for (const std::string& d : e.dialects) dialects.push_back(Json::String(d));
    for (const std::string& s : e.suggestions) suggestions.push_back(Json::String(s));
    config_warnings.push_back(Json::Object({{"kind", Json::String("unmatched-entry")},
                                            {"entry", Json::String(e.entry)},
                                            {"file", Json::String(e.where.file)},
                                            {"pointer", Json::String(e.where.pointer)},
                                            {"dialects", Json::Array(std::move(dialects))},
                                            {"suggestions", Json::Array(std::move(suggestions))}}));
  }
  const bool timed = report.reads != CheckReads::kHeaders && report.read_seconds > 0;
  return Json::Object({{"model", Json::String(std::string(model))},
                       {"engine", Json::String(std::string(engine))},
                       {"reads", Json::String(std::string(CheckReadsName(report.reads)))},
                       {"bytes_read", Json::Int(static_cast<int64_t>(report.bytes_read))},
                       {"read_seconds", Json::Double(report.read_seconds)},
                       {"gb_per_s", timed ? Json::Double(ReadRate(report)) : Json::Null()},
                       {"tensors", Json::Int(report.tensors)},
                       {"errors", Json::Int(report.errors)},
                       {"warnings", Json::Int(report.warnings)},
                       {"not_checked", Json::Array(std::move(not_checked))},
                       {"layers_not_checked", NonEmptyOrNull(report.layers_not_checked)},
                       {"loadable_tp", Json::Array(std::move(loadable_tp))},
                       {"findings", Json::Array(std::move(findings))},
                       {"config_warnings", Json::Array(std::move(config_warnings))}});
}

std::string CheckToText(const CheckReport& report) {
  std::string out;
  for (const Finding& f : report.findings) {
    out += fmt::format("{} {}: {}\n", f.error ? "error" : "warning", f.KindName(), f.message);
  }
  for (const UnmatchedEntry& e : report.unmatched) {
    out += fmt::format("warning unmatched-entry: {}\n", UnmatchedEntryText(e));
  }
  if (!report.layers_not_checked.empty()) {
    out += fmt::format("layers not checked: {}\n", report.layers_not_checked);
  }
  for (const std::string& file : report.not_checked) {
    out += fmt::format(
        "not checked: {} (no readable header: its tensors are known by name "
        "only)\n",
        file);
  }
  out += fmt::format("splits at --tp: {} (of 1 to 16)\n", SizeList(report.loadable_tp));
  if (report.reads == CheckReads::kHeaders) {
    out += "read: the index and the headers\n";
  } else {
    out += fmt::format(
        "read: the headers and {} tensor bytes ({}) in {:.2f} s{}\n", report.bytes_read,
        report.reads == CheckReads::kValues ? "every value beside the codes" : "every byte",
        report.read_seconds,
        report.read_seconds > 0 ? fmt::format(", {:.2f} GB/s", ReadRate(report)) : "");
  }
  out +=
      fmt::format("checked {} tensors: {} error{}, {} warning{}\n", report.tensors, report.errors,
                  report.errors == 1 ? "" : "s", report.warnings, report.warnings == 1 ? "" : "s");
  return out;
}

}  // namespace quantpath
