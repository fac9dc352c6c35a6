// What `match` prints: the decisions as JSON, or the comparison with the recorded ones.
#include "fmt/format.h"
#include "quantpath/report.h"

namespace quantpath {

Json CaseResultsToJson(const std::vector<CaseResult>& results) {
  Json out = Json::Array();
  for (const CaseResult& r : results) {
    Json decisions = Json::Array();
    for (const CaseDecision& got : r.decisions) {
      decisions.mutable_items().push_back(Json::Object({{"prefix", Json::String(got.prefix)},
                                                        {"decision", Json::String(got.decision)},
                                                        {"detail", Json::String(got.detail)}}));
    }
    out.mutable_items().push_back(
        Json::Object({{"id", Json::String(r.id)}, {"decisions", std::move(decisions)}}));
  }
  return out;
}

std::string VerifyCases(const std::vector<CaseResult>& results, std::string_view file, int* passed,
                        int* failed) {
  std::string out;
  for (const CaseResult& r : results) {
    for (size_t i = 0; i < r.decisions.size(); ++i) {
      const CaseDecision& got = r.decisions[i];
      if (i >= r.expected.size()) {
        out += fmt::format("{} {} {}: no expected decision recorded\n", file, r.id, got.prefix);
        ++*failed;
        continue;
      }
      const CaseDecision& want = r.expected[i];
      if (want.decision != got.decision) {
        ++*failed;
        out += fmt::format("MISMATCH {} {} [{}] {}: expected {} ({}), got {} ({})\n", file, r.id, i,
                           got.prefix, want.decision, want.detail, got.decision, got.detail);
        continue;
      }
      ++*passed;
      if (want.detail != got.detail) {
        out += fmt::format("note {} {} [{}] {}: detail expected \"{}\", got \"{}\"\n", file, r.id,
                           i, got.prefix, want.detail, got.detail);
      }
    }
  }
  return out;
}

}  // namespace quantpath
