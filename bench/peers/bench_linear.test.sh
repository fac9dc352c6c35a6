#!/usr/bin/env bash
# bench_linear prints the benchmark table with the peers filled in: one row per (quantpath row,
# peer), every row with exactly the documented keys, the peer fields set and the ratio equal to
# quantpath's GFLOP/s over the peer's, each peer's figure the same beside every spec; int8
# activations add oneDNN's int8 matmul. A oneDNN peer with no kernel for this CPU (its bf16 matmul
# needs AVX-512) has no rows and its reason on stderr: never on a CPU with AVX-512, never OpenBLAS.
# Usage: bench_linear.test.sh PATH_TO_BENCH_LINEAR
set -euo pipefail
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out="$("$1" --spec bf16 --spec int8_channel:int8-token --m 1 --m 64 --n 64 --k 128 --threads 1 \
  --warm --json 2>"$err")"
python3 - "$out" "$(cat "$err")" <<'PY'
import json, re, sys
doc = json.loads(sys.argv[1])
lines = sys.argv[2].splitlines()
# First what each peer library is; then only the peers without rows.
config = [l for l in lines if l.startswith("bench_linear: peer ")]
assert len(config) == 2 and "OpenBLAS " in config[1] and "oneDNN " in config[0], config
said = "\n".join(l for l in lines if l not in config)
missing = re.findall(r"^bench_linear: no (\S+) rows: oneDNN .*\(none for this CPU\)$", said, re.M)
assert len(missing) == len(said.splitlines()), said
flags = open("/proc/cpuinfo").read().split("\nflags", 1)[1].split("\n", 1)[0].split()
assert not missing or "avx512f" not in flags, missing
assert set(missing) <= {"onednn-bf16", "onednn-int8"}, missing
keys = ["spec", "m", "n", "k", "experts", "top_k", "threads", "cold", "kernel", "seconds",
        "weight_gbps", "bandwidth_gbps", "pct_bandwidth", "gflops", "peak_gflops", "pct_peak",
        "best_peak_gflops", "roofline_gflops", "pct_roofline",
        "peer", "peer_gflops", "ratio_to_peer"]
rows = doc["rows"]
peers = [(r["spec"], r["m"], r["peer"]) for r in rows]
expected = [(s, m, p) for s, ps in (("bf16", ["onednn-bf16", "openblas-sgemm"]),
                                    ("int8_channel:int8-token",
                                     ["onednn-bf16", "onednn-int8", "openblas-sgemm"]))
            for m in (1, 64) for p in ps if p not in missing]
assert peers == expected, peers
# A peer is timed once per shape, M and threads: both specs' rows there show the same figure.
figures = {}
for r in rows:
    figures.setdefault((r["m"], r["peer"]), set()).add(r["peer_gflops"])
assert all(len(f) == 1 for f in figures.values()), figures
for r in rows:
    assert list(r) == keys, list(r)
    assert r["peer_gflops"] > 0
    assert abs(r["ratio_to_peer"] - r["gflops"] / r["peer_gflops"]) < 1e-9 * r["ratio_to_peer"]
print(f"bench_linear: {len(rows)} rows with peers" +
      (f" (none from {', '.join(missing)} on this CPU)" if missing else ""))
PY
