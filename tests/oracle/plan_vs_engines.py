#!/usr/bin/env python3
"""`plan --engine` against the engines' own model construction, prefix by prefix.

Each file under tests/data/oracle/releases/<engine>-<version>/models/ (and platforms/<platform>/models/,
planned with --platform) records one model folder
built by that release's real vLLM / SGLang model class (tests/data/oracle/releases/README.md): every call the engine made to
`get_quant_method`, with the prefix it passed and the method it got. This check rebuilds the
folder (base + overrides), runs `quantpath plan --engine <engine>@<version> --json` with the
recording's launch inputs and compares:
  - the lists: every prefix the engine passed, as often as it passed it, and no other;
  - the decisions: quantized / unquantized / error per call, in the engine's order for each prefix.
For attention, "quantized" means the engine attached a KV-cache method (plan: kv_cache.engine_method).
Layers the engine builds without asking the quantization config make no call: plan rows marked
`quant_config: false` (and every row of a model built without a config) must instead be modules
the engine built, unquantized.
A recording whose model failed before any layer was built expects `plan` to report a model-level
error instead. A recording marked `"planned": false` is of an architecture quantpath has no builder
for (vLLM's Transformers-backend classes): `match` holds its layers (cases-models.json), this check
only counts it. Exit 0 when everything agrees, 1 with one line per difference otherwise.

    plan_vs_engines.py QUANTPATH_CLI REPO_ROOT [--only SUBSTRING] [--verbose]
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path



def release_dialect(rec: dict) -> str:
    """"vllm 0.34.0" → "vllm@0.34.0", the dialect of the release that made the recording."""
    engine, version = rec["engine_version"].split(" ")
    return f"{engine}@{version}"


def build_folder(repo: Path, rec: dict, into: Path) -> None:
    base = repo / rec["base"]
    if not base.is_dir():
        raise SystemExit(f"{rec['id']}: base folder {rec['base']} is missing")
    shutil.copytree(base, into)
    for name, content in (rec.get("overrides") or {}).items():
        target = into / name
        if content is None:
            target.unlink(missing_ok=True)
        else:
            target.write_text(json.dumps(content, indent=1))


def plan_rows(cli: str, folder: Path, rec: dict) -> tuple[int, dict]:
    inputs = rec.get("inputs") or {}
    cmd = [cli, "plan", str(folder), "--engine", release_dialect(rec), "--json"]
    if inputs.get("tp_size", 1) != 1:
        cmd += ["--tp", str(inputs["tp_size"])]
    if inputs.get("dtype", "auto") != "auto":
        cmd += ["--dtype", inputs["dtype"]]
    if inputs.get("speculative"):
        cmd.append("--speculative")
    if inputs.get("quantization"):
        cmd += ["--quantization", inputs["quantization"]]
    if inputs.get("platform", "cuda") != "cuda":
        cmd += ["--platform", inputs["platform"]]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        return proc.returncode, {"stderr": proc.stderr.strip()}
    return proc.returncode, json.loads(proc.stdout)


def plan_decision(row: dict) -> str:
    if row["kind"] == "attention" and row["decision"] != "error":
        kv = row.get("kv_cache") or {}
        return "quantized" if kv.get("engine_method") or row["decision"] == "quantized" else "unquantized"
    return row["decision"]


def compare(cli: str, repo: Path, path: Path) -> list[str]:
    rec = json.loads(path.read_text())
    where = f"{path.relative_to(repo)} ({rec['id']})"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        build_folder(repo, rec, folder)
        code, plan = plan_rows(cli, folder, rec)
    if "stderr" in plan:
        if rec.get("error"):
            return []  # the engine failed on the folder too
        return [f"{where}: plan failed (exit {code}): {plan['stderr']}"]
    if rec.get("error"):
        errors = [l for l in plan["layers"] if l["decision"] == "error"]
        if code == 1 and (errors or plan.get("model_errors")):
            return []
        return [f"{where}: the engine failed before building layers ({rec['error']}), "
                f"plan exits {code} without an error"]

    # Layers the engine builds without asking the quantization config (no config at all, or a
    # module built with quant_config=None such as vLLM's MoE router) make no call; the plan marks
    # them `quant_config: false`, and they must be modules the engine built, unquantized.
    built = {m["name"] for m in rec["modules"] if m.get("model") != "draft"}
    built_draft = {m["name"] for m in rec["modules"] if m.get("model") == "draft"}
    want: dict[str, list[str]] = collections.defaultdict(list)
    for call in rec["quant_calls"]:
        want[call["prefix"]].append(call["decision"])
    got: dict[str, list[str]] = collections.defaultdict(list)
    out = []
    without_config = not rec["quant_calls"]
    for row in plan["layers"]:
        if without_config or row.get("quant_config") is False:
            if row["path"] not in built and row["path"] not in built_draft:
                out.append(f"{where}: plan only: {row['path']!r} (built without a quantization "
                           f"config, but the engine built no such module)")
            elif row["decision"] != "unquantized":
                out.append(f"{where}: {row['path']!r}: built without a quantization config, "
                           f"plan says {row['decision']}")
            continue
        got[row["path"]].append(plan_decision(row))

    for prefix in want.keys() - got.keys():
        out.append(f"{where}: engine only: {prefix!r} x{len(want[prefix])} ({want[prefix][0]})")
    for prefix in got.keys() - want.keys():
        out.append(f"{where}: plan only: {prefix!r} x{len(got[prefix])} ({got[prefix][0]})")
    for prefix in want.keys() & got.keys():
        w, g = want[prefix], got[prefix]
        if len(w) != len(g):
            out.append(f"{where}: {prefix!r}: the engine built it {len(w)} times, plan lists {len(g)}")
        elif w != g:
            out.append(f"{where}: {prefix!r}: engine {w}, plan {g}")
    return sorted(out)


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
        args.remove(only)
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    cli, repo = args[0], Path(args[1]).resolve()
    releases = repo / "tests" / "data" / "oracle" / "releases"
    files = sorted(releases.glob("*/models/*.json")) + sorted(releases.glob("*/platforms/*/models/*.json"))
    if only:
        files = [f for f in files if only in f.name]
    if not files:
        print("no recordings found", file=sys.stderr)
        return 2
    problems = []
    unplanned = [f for f in files if json.loads(f.read_text()).get("planned") is False]
    files = [f for f in files if f not in unplanned]
    for f in files:
        found = compare(cli, repo, f)
        problems += found
        if "--verbose" in sys.argv:
            print(f"{f.name}: {'ok' if not found else f'{len(found)} differences'}")
    for p in problems:
        print(p)
    print(f"{len(files)} recordings, {len(problems)} differences "
          f"({len(unplanned)} more held by match only: no quantpath architecture)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
