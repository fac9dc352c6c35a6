// `quantpath bench`: the JSON shape of docs/json/bench.md (the machine, then one row per spec,
// shape, M and thread count with exactly the documented keys), decode and prefill figures where
// each applies, the text table, and a bad spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "cli_test_util.h"
#include "fmt/format.h"

namespace quantpath {
namespace {

using testing::ParseOrDie;
using testing::RunCli;

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.members()) keys.push_back(key);
  return keys;
}

// The rows `bench ARGS --json` prints (none, the output a failure, where it exits non-zero).
std::vector<Json> BenchRows(const std::string& args) {
  auto run = RunCli("bench " + args + " --json");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  if (run.exit_code != 0) return {};
  return ParseOrDie(run.out).Find("rows")->items();
}

// Weight bytes a call of `row` read.
double BytesPerCall(const Json& row) {
  return row.Find("weight_gbps")->number_value() * 1e9 * row.Find("seconds")->number_value();
}

TEST(BenchCli, JsonRowsHaveTheDocumentedKeys) {
  auto run = RunCli("bench --spec bf16 --m 1 --m 64 --n 40 --k 72 --threads 1 --warm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Json j = ParseOrDie(run.out);
  EXPECT_EQ(Keys(j), (std::vector<std::string>{"machine", "rows"}));
  const Json& machine = *j.Find("machine");
  EXPECT_GT(machine.Find("read_gbps_one")->number_value(), 0);
  EXPECT_GT(machine.Find("llc_bytes")->int_value(), 0);
  // The dispatcher's unit table row for this CPU, checked against the peaks just measured.
  EXPECT_FALSE(machine.Find("unit_table")->string_value().empty());
  EXPECT_FALSE(machine.Find("unit_table_overridden")->bool_value());
  EXPECT_TRUE(machine.Find("unit_table_disagrees")->is_array());
  const std::vector<Json>& rows = j.Find("rows")->items();
  ASSERT_EQ(rows.size(), 2u);
  for (const Json& row : rows) {
    EXPECT_EQ(Keys(row), (std::vector<std::string>{"spec",
                                                   "m",
                                                   "n",
                                                   "k",
                                                   "experts",
                                                   "top_k",
                                                   "threads",
                                                   "cold",
                                                   "kernel",
                                                   "seconds",
                                                   "weight_gbps",
                                                   "bandwidth_gbps",
                                                   "pct_bandwidth",
                                                   "gflops",
                                                   "peak_gflops",
                                                   "pct_peak",
                                                   "best_peak_gflops",
                                                   "roofline_gflops",
                                                   "pct_roofline",
                                                   "peer",
                                                   "peer_gflops",
                                                   "ratio_to_peer"}));
    EXPECT_EQ(row.Find("spec")->string_value(), "bf16");
    EXPECT_EQ(row.Find("n")->int_value(), 40);
    EXPECT_EQ(row.Find("k")->int_value(), 72);
    EXPECT_FALSE(row.Find("cold")->bool_value());
    EXPECT_FALSE(row.Find("kernel")->string_value().empty());
    EXPECT_GT(row.Find("seconds")->number_value(), 0);
    // 40 × 72 bf16 weights are 5760 bytes a call.
    EXPECT_NEAR(row.Find("weight_gbps")->number_value() * 1e9 * row.Find("seconds")->number_value(),
                5760, 1);
    EXPECT_TRUE(row.Find("experts")->is_null());
    EXPECT_TRUE(row.Find("peer")->is_null());
    // The roofline: the bandwidth times the work per weight byte, or the best unit's peak.
    const double per_byte =
        row.Find("gflops")->number_value() / row.Find("weight_gbps")->number_value();
    double roofline = row.Find("bandwidth_gbps")->number_value() * per_byte;
    if (!row.Find("best_peak_gflops")->is_null()) {
      EXPECT_GE(row.Find("best_peak_gflops")->number_value(),
                row.Find("peak_gflops")->number_value());
      roofline = std::min(roofline, row.Find("best_peak_gflops")->number_value());
    }
    EXPECT_NEAR(row.Find("roofline_gflops")->number_value(), roofline, 1e-9 * roofline);
    EXPECT_NEAR(row.Find("pct_roofline")->number_value(),
                100 * row.Find("gflops")->number_value() / roofline, 1e-6);
  }
  EXPECT_EQ(rows[0].Find("m")->int_value(), 1);
  EXPECT_FALSE(rows[0].Find("pct_bandwidth")->is_null());  // decode: a share of the bandwidth
  EXPECT_TRUE(rows[0].Find("pct_peak")->is_null());
  EXPECT_TRUE(rows[1].Find("pct_bandwidth")->is_null());  // prefill: a share of the peak
}

TEST(BenchCli, TextTableAndABadSpec) {
  auto run = RunCli("bench --spec bf16 --m 2 --n 16 --k 16 --threads 1 --warm");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.rfind("machine: last-level cache ", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("\nbf16 "), std::string::npos) << run.out;
  auto bad = RunCli("bench --spec no_such_spec --m 1 --n 16 --k 16 --warm");
  EXPECT_EQ(bad.exit_code, 2);
  // With --json the error is also an object on stdout, as every command's.
  auto bad_json = RunCli("bench --spec no_such_spec --m 1 --n 16 --k 16 --warm --json");
  EXPECT_EQ(bad_json.exit_code, 2);
  const Json error = ParseOrDie(bad_json.out);
  ASSERT_NE(error.Find("error"), nullptr) << bad_json.out;
  EXPECT_NE(error.Find("error")->Find("message")->string_value().find("no_such_spec"),
            std::string::npos)
      << bad_json.out;
  auto half = RunCli("bench --spec bf16 --n 16");
  EXPECT_EQ(half.exit_code, 2);
  auto no_threads = RunCli("bench --spec bf16 --m 1 --n 16 --k 16 --threads 0", true);
  EXPECT_EQ(no_threads.exit_code, 2);
  EXPECT_NE(no_threads.out.find("--threads 0: expected at least 1"), std::string::npos)
      << no_threads.out;
  auto no_rows = RunCli("bench --spec bf16 --m 0 --n 16 --k 16 --warm", true);
  EXPECT_EQ(no_rows.exit_code, 2);
  EXPECT_NE(no_rows.out.find("M = 0"), std::string::npos) << no_rows.out;
}

// A spec with its activations' form: W8A8 rows reach an int8 kernel, whose peak is the int8 dot
// product's where the CPU has one; an unknown form is refused by name before anything is measured.
TEST(BenchCli, ActivationForms) {
  auto run = RunCli(
      "bench --spec int8_channel:int8-token --m 64 --n 32 --k 128 --threads 1 --warm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Json j = ParseOrDie(run.out);
  const std::vector<Json>& rows = j.Find("rows")->items();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].Find("spec")->string_value(), "int8_channel:int8-token");
  const std::string kernel = rows[0].Find("kernel")->string_value();
  EXPECT_EQ(kernel.rfind("GemmW8A8Int8", 0), 0u) << kernel;
  const Json& machine = *j.Find("machine");
  if (kernel.ends_with("_Avx512Vnni")) {
    EXPECT_EQ(rows[0].Find("peak_gflops")->number_value(),
              machine.Find("int8_dot_gops_one")->number_value());
  }
  if (kernel == "GemmW8A8Int8_Avx2") {
    EXPECT_EQ(rows[0].Find("peak_gflops")->number_value(),
              machine.Find("int16_dot_gops_one")->number_value());
  }
  // An override of the dispatcher's unit table that names no unit is refused by name, before
  // anything is measured.
  setenv("QUANTPATH_DOT_UNITS", "bf16-pairs=16", 1);
  auto bad_units = RunCli("bench --spec bf16 --m 1 --n 16 --k 16 --warm", true);
  unsetenv("QUANTPATH_DOT_UNITS");
  EXPECT_EQ(bad_units.exit_code, 2);
  EXPECT_NE(bad_units.out.find("QUANTPATH_DOT_UNITS: 'bf16-pairs=16'"), std::string::npos)
      << bad_units.out;
  EXPECT_EQ(bad_units.out.find("machine:"), std::string::npos) << bad_units.out;
  auto bad = RunCli("bench --spec int8_channel:int9-token --m 1 --n 16 --k 16 --warm", true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("unknown activation 'int9-token'"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.out.find("machine:"), std::string::npos) << bad.out;
}

// MoE rows (--moe, experts of H = --n, I = --k): the documented keys with experts and top_k, the
// bytes of the experts a call reads (top-8 of 64 at M = 1: 8 experts' w13 [2I, H] and w2 [H, I],
// as dense rows of those shapes read them), 2 · M · top_k · 3 · I · H FLOP a call, and no MoE rows
// where --n and --k name a dense shape.
TEST(BenchCli, MoeRows) {
  const std::vector<Json> rows =
      BenchRows("--moe --spec int4_group_128 --n 256 --k 128 --m 1 --m 64 --threads 1 --warm");
  ASSERT_EQ(rows.size(), 2u);
  for (const Json& row : rows) {
    EXPECT_EQ(Keys(row).size(), 22u);
    EXPECT_EQ(row.Find("spec")->string_value(), "int4_group_128");
    EXPECT_EQ(row.Find("n")->int_value(), 256);
    EXPECT_EQ(row.Find("k")->int_value(), 128);
    EXPECT_EQ(row.Find("experts")->int_value(), 64);
    EXPECT_EQ(row.Find("top_k")->int_value(), 8);
    EXPECT_FALSE(row.Find("cold")->bool_value());
    EXPECT_FALSE(row.Find("kernel")->string_value().empty());
    EXPECT_TRUE(row.Find("peer")->is_null());
    const double flops = 2.0 * static_cast<double>(row.Find("m")->int_value()) * 8 * 3 * 128 * 256;
    EXPECT_NEAR(row.Find("gflops")->number_value() * 1e9 * row.Find("seconds")->number_value(),
                flops, 1e-6 * flops);
  }
  double expert = 0;
  for (const char* shape : {"--n 256 --k 256", "--n 256 --k 128"}) {
    const std::vector<Json> dense =
        BenchRows(fmt::format("--no-moe --spec int4_group_128 --m 1 {} --threads 1 --warm", shape));
    ASSERT_EQ(dense.size(), 1u);
    expert += BytesPerCall(dense[0]);
  }
  EXPECT_NEAR(BytesPerCall(rows[0]), 8 * expert, 1e-6 * expert);
  EXPECT_FALSE(rows[0].Find("pct_bandwidth")->is_null());
  EXPECT_TRUE(rows[0].Find("pct_peak")->is_null());
  EXPECT_TRUE(rows[1].Find("pct_bandwidth")->is_null());

  auto both = RunCli("bench --moe --no-moe --spec int4_group_128 --m 1", true);
  EXPECT_EQ(both.exit_code, 2) << both.out;
  const std::vector<Json> dense = BenchRows("--spec int4_group_128 --m 1 --n 64 --k 128 --warm");
  ASSERT_FALSE(dense.empty());
  for (const Json& row : dense) EXPECT_TRUE(row.Find("experts")->is_null());
}

}  // namespace
}  // namespace quantpath
