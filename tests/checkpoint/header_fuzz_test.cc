// Fuzz-style test of the safetensors header parser: thousands of seeded mutations of a valid file
// (byte flips, truncation, header-length edits, JSON edits), each of which must be parsed without
// crashing or reading out of bounds (run it under ASan/UBSan), and, when Python's safetensors is
// installed, must get the reference implementation's verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>

#include "quantpath/checkpoint.h"
#include "st_test_util.h"

namespace quantpath {
namespace {

constexpr int kMutations = 3000;
constexpr uint64_t kBaseSeed = 0x5afe7e45;

// Small, so that mutations often hit structure: several dtypes (sub-byte included), metadata, an
// empty tensor.
std::string SeedFile() {
  return st_test::FileFor({{"model.layers.0.mlp.up_proj.weight",
                            "F8_E4M3",
                            {2, 4},
                            "\x38\xC0\x7E"
                            "\x01\x02\x03"
                            "\x7F\x80"},
                           {"scale", "F32", {1}, std::string("\x00\x00\x80\x3F", 4)},
                           {"empty", "BF16", {0, 3}, ""},
                           {"packed", "F4", {2, 2}, "\x72\xA9"},
                           {"mx", "F8_E8M0", {2}, "\x7F\x80"},
                           {"bias", "F16", {3}, std::string("\x00\x3C\x00\xC0\x00\x7C", 6)}},
                          R"({"format": "pt"})");
}

uint64_t ReadLength(const std::string& f) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(f[static_cast<size_t>(i)]);
  return n;
}

void WriteLength(std::string* f, uint64_t n) {
  for (int i = 0; i < 8; ++i)
    (*f)[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
}

// Returns the file after 1-3 edits of its header (the length prefix kept consistent, so the JSON
// gets parsed) and, one time in three, an edit of the framing itself.
std::string Mutate(const std::string& seed, uint64_t case_seed) {
  std::mt19937_64 rng(case_seed);
  auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  std::string f = seed;
  size_t header = ReadLength(f);
  // Replaces [pos, pos + len) of the header (pos relative to its start) and fixes the prefix.
  auto replace = [&](size_t pos, size_t len, const std::string& with) {
    f.replace(8 + pos, len, with);
    header = header - len + with.size();
    WriteLength(&f, header);
  };
  // Positions of header bytes satisfying `pred`.
  auto find_all = [&](auto pred) {
    std::vector<size_t> at;
    for (size_t i = 0; i < header; ++i) {
      if (pred(f[8 + i], i)) at.push_back(i);
    }
    return at;
  };
  const char* numbers[] = {"0",
                           "1",
                           "-1",
                           "3",
                           "8",
                           "4294967296",
                           "9223372036854775807",
                           "9223372036854775808",
                           "18446744073709551615",
                           "18446744073709551616",
                           "1e3",
                           "2.0",
                           "1.5",
                           "-0",
                           "00",
                           "4611686018427387904"};
  const char* dtypes[] = {"F32", "U8", "F4",   "F6_E2M3", "F8_E4M3FNUZ", "C64",
                          "F7",  "",   "bf16", "F16 ",    "BOOL"};
  const char* tokens[] = {",",
                          "{",
                          "}",
                          "[",
                          "]",
                          "\"",
                          ":",
                          "null",
                          " ",
                          "\"__metadata__\": {}",
                          "\"x\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [0, 0]},"};
  const char interesting[] = {'{', '}', '[', ']',  '"',    ',',    ':', '0',
                              '9', '-', ' ', '\\', '\xFF', '\x00', 'e', '.'};

  for (size_t edits = 1 + pick(3); edits > 0 && header > 0; --edits) {
    switch (pick(8)) {
      case 0:  // flip one bit
        f[8 + pick(header)] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // overwrite one byte with a JSON-significant one
        f[8 + pick(header)] = interesting[pick(sizeof(interesting))];
        break;
      case 2: {  // replace a number
        auto digits = find_all([&](char c, size_t i) {
          return std::isdigit(static_cast<unsigned char>(c)) &&
                 (i == 0 || !std::isdigit(static_cast<unsigned char>(f[8 + i - 1])));
        });
        if (digits.empty()) break;
        size_t start = digits[pick(digits.size())], end = start;
        while (end < header && std::isdigit(static_cast<unsigned char>(f[8 + end]))) ++end;
        replace(start, end - start, numbers[pick(std::size(numbers))]);
        break;
      }
      case 3: {  // replace a dtype value
        std::string key = "\"dtype\": \"";
        std::vector<size_t> at;
        for (size_t p = f.find(key, 8); p != std::string::npos && p < 8 + header;
             p = f.find(key, p + 1)) {
          at.push_back(p - 8 + key.size());
        }
        if (at.empty()) break;
        size_t start = at[pick(at.size())];
        size_t end = f.find('"', 8 + start);
        if (end == std::string::npos || end >= 8 + header) break;
        replace(start, end - 8 - start, dtypes[pick(std::size(dtypes))]);
        break;
      }
      case 4: {  // delete a span
        size_t start = pick(header);
        replace(start, std::min(header - start, 1 + pick(16)), "");
        break;
      }
      case 5: {  // duplicate a span
        size_t start = pick(header);
        std::string span = f.substr(8 + start, std::min(header - start, 1 + pick(48)));
        replace(start, 0, span);
        break;
      }
      case 6:  // insert a token
        replace(pick(header + 1), 0, tokens[pick(std::size(tokens))]);
        break;
      case 7: {  // swap the two numbers of one data_offsets pair, or shift both
        std::string key = "\"data_offsets\": [";
        size_t p = f.find(key, 8 + pick(header));
        if (p == std::string::npos || p >= 8 + header) break;
        size_t a = p + key.size(), comma = f.find(", ", a), close = f.find(']', a);
        if (comma == std::string::npos || close == std::string::npos || comma > close ||
            close >= 8 + header) {
          break;
        }
        std::string first = f.substr(a, comma - a), second = f.substr(comma + 2, close - comma - 2);
        if (pick(2) == 0) {
          replace(a - 8, close - a, second + ", " + first);
        } else {
          // Same length, another place: gaps, overlaps, offsets past the data.
          uint64_t delta = 1 + pick(4);
          auto shift = [delta](const std::string& n) {
            return std::to_string(std::strtoull(n.c_str(), nullptr, 10) + delta);
          };
          replace(a - 8, close - a, shift(first) + ", " + shift(second));
        }
        break;
      }
    }
  }
  if (pick(3) == 0) {
    switch (pick(4)) {
      case 0:  // truncate
        f.resize(pick(f.size() + 1));
        break;
      case 1: {  // edit the header length
        const uint64_t lengths[] = {
            0,           1,           header - 1,   header + 1,   header + 7,
            100'000'000, 100'000'001, ~uint64_t{0}, f.size() - 8, rng()};
        if (f.size() >= 8) WriteLength(&f, lengths[pick(std::size(lengths))]);
        break;
      }
      case 2:  // append data
        f += std::string(1 + pick(8), '\x5A');
        break;
      case 3:  // drop data
        if (f.size() > 8 + header)
          f.resize(f.size() - 1 - pick(std::min<size_t>(f.size() - 8 - header, 8)));
        break;
    }
  }
  return f;
}

// Reads every byte a successful parse promises, from a buffer of exactly the file's size, so that
// ASan reports any read past it.
void CheckAccepted(const std::vector<TensorInfo>& tensors, uint64_t data_start,
                   const std::vector<std::byte>& file) {
  uint64_t expected = 0;
  for (const TensorInfo& t : tensors) {
    ASSERT_EQ(t.begin, expected);
    ASSERT_GE(t.end, t.begin);
    ASSERT_LE(data_start + t.end, file.size());
    expected = t.end;
    TensorView view{&t, "fuzz", {file.data() + data_start + t.begin, t.end - t.begin}};
    (void)TensorToFloat(view);
    (void)CopyTensor<uint8_t>(view);
  }
  ASSERT_EQ(data_start + expected, file.size());
}

std::vector<std::string> AllMutations() {
  std::string seed = SeedFile();
  std::vector<std::string> cases;
  for (int i = 0; i < kMutations; ++i)
    cases.push_back(Mutate(seed, kBaseSeed + static_cast<uint64_t>(i)));
  return cases;
}

TEST(SafetensorsHeaderFuzz, SeededMutationsNeverCrash) {
  ASSERT_TRUE(st_test::ParseBytes(SeedFile()).ok());
  st_test::TempFolder dir("fuzz");
  std::vector<std::string> cases = AllMutations();
  int accepted = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("mutation " + std::to_string(i) + ", seed " + std::to_string(kBaseSeed + i));
    const std::string& bytes = cases[i];
    std::vector<std::byte> file(bytes.size());
    std::transform(bytes.begin(), bytes.end(), file.begin(),
                   [](char c) { return static_cast<std::byte>(c); });
    uint64_t data_start = 0;
    auto r = ParseSafetensorsHeader(file, file.size(), "fuzz.safetensors", &data_start);
    if (r.ok()) {
      ++accepted;
      CheckAccepted(*r, data_start, file);
    } else {
      EXPECT_FALSE(r.status().message().empty());
    }
    // Every eighth case also goes through the memory-mapped reader.
    if (i % 8 == 0) {
      std::filesystem::path path = dir.path() / "case.safetensors";
      st_test::WriteFile(path, bytes);
      auto opened = SafetensorsFile::Open(path);
      ASSERT_EQ(opened.ok(), r.ok());
      if (opened.ok()) {
        for (const TensorInfo& t : (*opened)->tensors()) (void)TensorToFloat((*opened)->View(t));
      }
    }
  }
  // The mutations exercise both outcomes.
  RecordProperty("accepted", accepted);
  EXPECT_GT(accepted, kMutations / 50);
  EXPECT_LT(accepted, kMutations / 2);
}

constexpr const char* kVerdictScript = R"(import struct
import sys
import safetensors
data = open(sys.argv[1], "rb").read()
pos = 0
verdicts = []
while pos < len(data):
    (n,) = struct.unpack_from("<Q", data, pos)
    case = data[pos + 8 : pos + 8 + n]
    pos += 8 + n
    try:
        safetensors.deserialize(case)
        verdicts.append("1")
    except BaseException:  # a Rust panic surfaces as a BaseException
        verdicts.append("0")
print("".join(verdicts))
)";

TEST(SafetensorsHeaderFuzz, MutationsGetTheReferenceImplementationsVerdict) {
  if (!st_test::PythonHas("safetensors"))
    GTEST_SKIP() << "python3 with safetensors is not available";
  st_test::TempFolder dir("fuzz_reference");
  std::vector<std::string> cases = AllMutations();
  std::string blob;
  for (const std::string& c : cases) {
    std::string length(8, '\0');
    WriteLength(&length, c.size());
    blob += length + c;
  }
  st_test::WriteFile(dir.path() / "cases.bin", blob);
  st_test::WriteFile(dir.path() / "verdicts.py", kVerdictScript);
  std::string verdicts =
      st_test::RunPython(dir.path() / "verdicts.py", (dir.path() / "cases.bin").string());
  ASSERT_GE(verdicts.size(), cases.size());
  int disagreements = 0, stricter = 0;
  RecordProperty("reference_accepted",
                 static_cast<int>(std::count(verdicts.begin(), verdicts.end(), '1')));
  for (size_t i = 0; i < cases.size(); ++i) {
    auto r = st_test::ParseBytes(cases[i]);
    bool reference_accepts = verdicts[i] == '1';
    if (r.ok() == reference_accepts) continue;
    // Deliberately stricter (DESIGN.md): a header must begin with '{', names must be unique; and a
    // dimension of 2^63 or more does not fit TensorInfo's int64 shape (the reference accepts one
    // only next to a zero dimension).
    const std::string& message = r.status().message();
    if (!r.ok() && (message.find("must begin with '{'") != std::string::npos ||
                    message.find("duplicate key") != std::string::npos ||
                    message.find("(below 2^63)") != std::string::npos)) {
      ++stricter;
      continue;
    }
    ++disagreements;
    ADD_FAILURE() << "mutation " << i << " (seed " << kBaseSeed + i << "): reference "
                  << (reference_accepts ? "accepts" : "refuses") << ", quantpath "
                  << (r.ok() ? "accepts" : "refuses: " + message)
                  << "\nheader: " << cases[i].substr(8, 400);
    if (disagreements >= 10) break;
  }
  RecordProperty("stricter_than_reference", stricter);
}

}  // namespace
}  // namespace quantpath
