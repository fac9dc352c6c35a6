#!/usr/bin/env bash
# bench_linear prints the benchmark table with the peers filled in: one row per (quantpath row,
# peer), every row with exactly the documented keys, the peer fields set and the ratio equal to
# quantpath's GFLOP/s over the peer's; int8 activations add oneDNN's int8 matmul.
# Usage: bench_linear.test.sh PATH_TO_BENCH_LINEAR
set -euo pipefail
out="$("$1" --spec bf16 --spec int8_channel:int8-token --m 1 --m 64 --n 64 --k 128 --threads 1 \
  --warm --json)"
python3 - "$out" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
keys = ["spec", "m", "n", "k", "experts", "top_k", "threads", "cold", "kernel", "seconds",
        "weight_gbps", "bandwidth_gbps", "pct_bandwidth", "gflops", "peak_gflops", "pct_peak",
        "peer", "peer_gflops", "ratio_to_peer"]
rows = doc["rows"]
peers = [(r["spec"], r["m"], r["peer"]) for r in rows]
expected = [(s, m, p) for s, ps in (("bf16", ["onednn-bf16", "openblas-sgemm"]),
                                    ("int8_channel:int8-token",
                                     ["onednn-bf16", "onednn-int8", "openblas-sgemm"]))
            for m in (1, 64) for p in ps]
assert peers == expected, peers
for r in rows:
    assert list(r) == keys, list(r)
    assert r["peer_gflops"] > 0
    assert abs(r["ratio_to_peer"] - r["gflops"] / r["peer_gflops"]) < 1e-9 * r["ratio_to_peer"]
print(f"bench_linear: {len(rows)} rows with peers")
PY
