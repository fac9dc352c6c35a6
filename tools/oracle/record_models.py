#!/usr/bin/env python3
"""Record the engines building their real model classes, on the meta device, from model folders.

For each release named with --release (extracted release wheels, see tools/oracle/README.md) every
recording of model_table.py copies a corpus folder (plus its overrides) into a temp model folder,
runs the engine's own config path (HF config, method detection with the optional
`--quantization`, the engine's `get_quant_config`), builds the engine's model class with a
one-rank gloo group and `load_format="dummy"` on the meta device, and records every
`get_quant_method` call (prefix, layer class, decision) and every module of the built model.

    python3 tools/oracle/record_models.py --python /tmp/oracle-venv/bin/python \
        --release vllm==0.34.0 --release sglang==0.5.23 \
        --vllm-src /tmp/oracle-src/vllm --vllm-extra /tmp/oracle-extra-vllm \
        --sglang-src /tmp/oracle-src/sglang --sglang-extra /tmp/oracle-extra-sglang

Writes tests/data/oracle/models/<engine>/<id>.json and
tests/data/oracle/cases-models/<engine>-models.json.  `--only SUBSTRING` records the matching ids
(files of other recordings are kept); `--engine vllm|sglang` one engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CORPUS = REPO / "tests" / "data" / "corpus"
MARK = "@@MODEL@@"
SHAPE_KEYS = ("shape", "legs", "heads", "experts")  # a call's logical layer shape

sys.path.insert(0, str(HERE))
from model_table import DEFAULT_INPUTS, recordings  # noqa: E402
from oracle_platforms import PLATFORMS, worker_env  # noqa: E402
from releases import RELEASES_DIR, add_release_arguments, engine_version, holds, release_dir, releases_of  # noqa: E402


# ---------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------
def make_folder(rec: dict) -> str:
    folder = tempfile.mkdtemp(prefix="oracle-model-")
    src = REPO / rec["base"]
    for p in src.iterdir():
        if p.is_file():
            shutil.copy(p, os.path.join(folder, p.name))
    for name, content in (rec.get("overrides") or {}).items():
        path = os.path.join(folder, name)
        if content is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "w") as f:
                json.dump(content, f, indent=2)
    return folder


def _scrub(obj, folder):
    if isinstance(obj, str):
        return obj.replace(folder, "<model_dir>")
    if isinstance(obj, list):
        return [_scrub(x, folder) for x in obj]
    if isinstance(obj, dict):
        return {k: _scrub(v, folder) for k, v in obj.items()}
    return obj


def worker_main(engine: str):
    import logging
    import warnings

    recs = json.load(sys.stdin)
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    if engine == "vllm":
        from model_vllm import VllmModelHarness as H
    else:
        from model_sglang import SglangModelHarness as H
    h = H()
    for rec in recs:
        folder = make_folder(rec)
        t0 = time.time()
        try:
            out, cfg_dict = h.record(folder, rec["inputs"])
        except Exception as e:  # noqa: BLE001 - a failure after layers were built
            import traceback

            from harness import _exc_text

            out = {"model_class": None, "resolved_quantization": None, "dtype": None,
                   "error": _exc_text(e), "quant_calls": [], "modules": [],
                   "_traceback": traceback.format_exc()[-4000:]}
            cfg_dict = None
        out["_config"] = cfg_dict
        out["_seconds"] = round(time.time() - t0, 1)
        out = _scrub(out, folder)
        shutil.rmtree(folder, ignore_errors=True)
        sys.stdout.write(MARK + json.dumps({"id": rec["id"], "result": out}) + "\n")
        sys.stdout.flush()


# ---------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------
def run_worker(args, engine: str, recs: list[dict]) -> dict:
    src = args.vllm_src if engine == "vllm" else args.sglang_src
    extra = args.vllm_extra if engine == "vllm" else args.sglang_extra
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(HERE), src, extra] if p)
    env.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    env["HF_HUB_OFFLINE"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONHASHSEED"] = "0"  # engine texts that print a set list it in one order
    env.update(worker_env(engine, args.platform))
    results: dict[str, dict] = {}
    todo = list(recs)
    while todo:
        p = subprocess.Popen([args.python, str(Path(__file__).resolve()), "--worker", engine],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        errf = tempfile.TemporaryFile(mode="w+")
        import threading

        def pump():
            for line in p.stderr:
                errf.write(line)
                if os.environ.get("ORACLE_DEBUG"):
                    sys.stderr.write(line)

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        p.stdin.write(json.dumps(todo))
        p.stdin.close()
        for line in p.stdout:
            if line.startswith(MARK):
                r = json.loads(line[len(MARK):])
                results[r["id"]] = r["result"]
                res = r["result"]
                print(f"{r['id']}: {len(res.get('quant_calls', []))} calls, "
                      f"{len(res.get('modules', []))} modules, {res['_seconds']}s"
                      + (f", error {res['error'][:120]}" if res.get("error") else ""), flush=True)
        p.wait()
        t.join()
        todo = [r for r in todo if r["id"] not in results]
        if todo:
            errf.seek(0)
            tail = errf.read()[-3000:]
            sys.stderr.write(tail)
            dead = todo.pop(0)
            print(f"{dead['id']}: worker died (rc={p.returncode})", flush=True)
            results[dead["id"]] = {"model_class": None, "resolved_quantization": None, "dtype": None,
                                   "error": f"worker died (rc={p.returncode})", "quant_calls": [],
                                   "modules": [], "_died": tail}
    return results


def platform_dir(engine: str, version: str, platform: str) -> Path:
    """A release's folder, or its folder for `platform` off cuda."""
    folder = release_dir(engine, version)
    return folder if platform == "cuda" else folder / "platforms" / platform


def model_file(rec: dict, res: dict, version: str, platform: str) -> dict:
    inputs = dict(rec["inputs"]) if platform == "cuda" else {**rec["inputs"], "platform": platform}
    out = {"id": rec["id"], "engine": rec["engine"], "engine_version": engine_version(rec["engine"], version),
           "base": rec["base"], "overrides": rec.get("overrides") or {}, "inputs": inputs,
           "model_class": res.get("model_class"), "resolved_quantization": res.get("resolved_quantization"),
           "dtype": res.get("dtype"), "error": res.get("error")}
    if res.get("draft_model_class"):
        out["draft_model_class"] = res["draft_model_class"]
    if rec.get("planned") is False:
        out["planned"] = False  # no quantpath architecture: match holds the layers, plan does not
    out["quantization_config"] = res.get("_config")
    out["packed_modules_mapping"] = res.get("_pmm") or {}
    out["quant_calls"] = res.get("quant_calls", [])
    out["modules"] = res.get("modules", [])
    note = rec.get("note", "")
    if res.get("ctor_not_run"):
        note += (" " if note else "") + "[method constructors not run on CPU: " + \
            ", ".join(sorted(res["ctor_not_run"])) + "]"
    out["note"] = note
    return out


def dump_model(m: dict) -> str:
    """JSON of a model file: one top-level key per line, one call / module per line."""
    parts = []
    for k, v in m.items():
        if k in ("quant_calls", "modules") and v:
            rows = ",\n".join("  " + json.dumps(x, ensure_ascii=False) for x in v)
            parts.append(f" {json.dumps(k)}: [\n{rows}\n ]")
        else:
            parts.append(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def config_source(rec: dict, cfg: dict | None) -> str | None:
    """The file of the model folder that holds the config dict the engine read, when it is not
    config.json's quantization_config / compression_config."""
    if cfg is None:
        return None
    files = {}
    for p in (REPO / rec["base"]).iterdir():
        if p.suffix == ".json":
            files[p.name] = json.loads(p.read_text())
    for n, c in (rec.get("overrides") or {}).items():
        if c is None:
            files.pop(n, None)
        else:
            files[n] = c
    main = files.get("config.json", {})
    for key in ("quantization_config", "compression_config"):
        if main.get(key) == cfg:
            return None
    for n, c in sorted(files.items()):
        if n != "config.json" and (c == cfg or (isinstance(c, dict) and c.get("quantization") == cfg.get("quantization")
                                                and "quantization" in cfg)):
            return n
    return None


def case_of(rec: dict, res: dict, version: str, platform: str) -> dict | None:
    if res.get("error") or not res.get("quant_calls"):
        return None
    calls = res["quant_calls"]
    cfg = res.get("quantization_config")
    layers, expected = [], []
    for c in calls:
        layer = {"prefix": c["prefix"], "kind": c["kind"], "module_class": c["layer_class"]}
        layer.update({k: c[k] for k in SHAPE_KEYS if k in c})
        layers.append(layer)
        expected.append({"prefix": c["prefix"], "decision": c["decision"], "detail": c["detail"]})
    xi = {}
    inp = rec["inputs"]
    if inp.get("tp_size", 1) != 1:
        xi["tp_size"] = inp["tp_size"]
    if inp.get("dtype", "auto") != "auto":
        xi["dtype"] = inp["dtype"]
    if inp.get("quantization"):
        xi["user_quantization"] = inp["quantization"]
    if inp.get("speculative"):
        xi["speculative"] = True
    if platform != "cuda":
        xi["platform"] = platform
    src = config_source(rec, cfg)
    if src:
        xi["config_source"] = src
    mc = res.get("model_class") or ""
    # vLLM 0.34 moved some model packages (vllm.models.qwen3_5.nvidia.model).
    pkgs = ("vllm.model_executor.models.", "vllm.models.") if rec["engine"] == "vllm" else ("sglang.srt.models.",)
    for pkg in pkgs:
        if mc.startswith(pkg):
            xi["model_class"] = mc[len(pkg):]
            break
    folder = platform_dir(rec["engine"], version, platform)
    xi["recording"] = str((folder / "models" / f"{rec['id']}.json").relative_to(RELEASES_DIR.parent))
    case = {"id": rec["id"], "engine": rec["engine"],
            "engine_commit": f"{engine_version(rec['engine'], version)} (model build: {mc or '?'})",
            "format": res.get("resolved_quantization") or "unquantized",
            "config": cfg if cfg is not None else {},
            "packed_modules_mapping": res.get("packed_modules_mapping") or {},
            "layers": layers, "expected": expected,
            "resolved_quantization": res.get("resolved_quantization"),
            "extra_inputs": xi,
            "note": rec.get("note", "") + ("" if cfg is not None else
                                           " [no quantization config: the engine built the model unquantized]")}
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=["vllm", "sglang"])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--vllm-src")
    ap.add_argument("--vllm-extra")
    ap.add_argument("--sglang-src")
    ap.add_argument("--sglang-extra")
    ap.add_argument("--only")
    ap.add_argument("--engine", choices=["vllm", "sglang"])
    ap.add_argument("--platform", choices=PLATFORMS, default="cuda",
                    help="the platform the engine runs on (oracle_platforms.py); off cuda only the "
                         "recordings named with --only, written to releases/<release>/platforms/<platform>/")
    ap.add_argument("--list", action="store_true", help="print the recording ids and exit")
    ap.add_argument("--table", action="store_true",
                    help="print the markdown table of the recorded model files (for releases/README.md)")
    add_release_arguments(ap)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)
    recs = recordings(CORPUS)
    if args.list:
        for r in recs:
            print(r["id"], json.dumps({k: v for k, v in r["inputs"].items() if DEFAULT_INPUTS.get(k) != v}))
        return
    releases = releases_of(args)
    recs = [r for r in recs if r["engine"] in releases and holds(r, r["engine"], releases[r["engine"]])]
    if args.table:
        return print_table(recs, releases)
    if args.engine:
        recs = [r for r in recs if r["engine"] == args.engine]
    if args.only:
        recs = [r for r in recs if any(o == r["id"] for o in args.only.split(","))
                or (args.platform == "cuda" and args.only in r["id"])]
    elif args.platform != "cuda":
        raise SystemExit("--platform: name the recordings with --only ID[,ID…]")
    for engine in ("vllm", "sglang"):
        erecs = [r for r in recs if r["engine"] == engine]
        if not erecs:
            continue
        results = run_worker(args, engine, erecs)
        version = releases[engine]
        d = platform_dir(engine, version, args.platform) / "models"
        d.mkdir(parents=True, exist_ok=True)
        for r in erecs:
            res = results[r["id"]]
            if res.get("_traceback"):
                sys.stderr.write(f"--- {r['id']}\n{res['_traceback']}\n")
            (d / f"{r['id']}.json").write_text(dump_model(model_file(r, res, version, args.platform)))
        write_cases(engine, version, args.platform)


def print_table(recs: list[dict], releases: dict[str, str]):
    print("| id | base | edit / inputs | model class | resolved | dtype | calls (q / u / error) | modules |")
    print("|---|---|---|---|---|---|---|---|")
    for r in recs:
        p = release_dir(r["engine"], releases[r["engine"]]) / "models" / f"{r['id']}.json"
        if not p.exists():
            continue
        m = json.loads(p.read_text())
        inp = ", ".join(f"{k}={v}" for k, v in r["inputs"].items() if DEFAULT_INPUTS.get(k) != v)
        ov = ", ".join(f"{n}{' removed' if c is None else ''}" for n, c in (r.get("overrides") or {}).items())
        edit = "; ".join(x for x in [("overrides " + ov) if ov else "", inp] if x) or "as published"
        calls = m["quant_calls"]
        cnt = {d: sum(1 for c in calls if c["decision"] == d) for d in ("quantized", "unquantized", "error")}
        mc = (m["model_class"] or "").rsplit(".", 1)[-1]
        if m.get("draft_model_class"):
            mc += " + " + m["draft_model_class"].rsplit(".", 1)[-1]
        res = f"error: {m['error'][:90]}" if m["error"] else f"{cnt['quantized']} / {cnt['unquantized']} / {cnt['error']}"
        print(f"| {r['id']} | {r['base'].split('/')[-1]} | {edit} | {mc or '-'} | "
              f"{m['resolved_quantization'] or '-'} | {m['dtype'] or '-'} | {res.replace('|', '/')} | {len(m['modules'])} |")


def write_cases(engine: str, version: str, platform: str):
    """Derives the case file of one release (on one platform) from every model file of that release
    there (so that recording a subset keeps the other cases)."""
    by_id = {r["id"]: r for r in recordings(CORPUS)}
    cases = []
    folder = platform_dir(engine, version, platform)
    for p in sorted((folder / "models").glob("*.json")):
        m = json.loads(p.read_text())
        res = dict(m)
        rec = by_id.get(m["id"])
        if rec is None:
            continue
        c = case_of(rec, res, version, platform)
        if c:
            cases.append(c)
    out = folder / "cases-models.json"
    out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    n = sum(len(c["expected"]) for c in cases)
    print(f"{out.relative_to(REPO)}: {len(cases)} cases, {n} layer decisions")


if __name__ == "__main__":
    main()
