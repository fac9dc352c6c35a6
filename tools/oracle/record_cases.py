#!/usr/bin/env python3
"""Record engine decision cases by executing vLLM's and SGLang's own code.

Every `expected` entry written by this script comes from calling the engines'
configuration and layer-matching code (config-level method resolution,
`get_quant_config`, `from_config`, the model's name mapper, `get_quant_method`)
on the case's config and layers.  Nothing in `expected` is written by hand:
the case table below holds inputs only.

The engines are not vendored.  Point the script at extracted release wheels
(see tools/oracle/README.md) and at a Python environment that has torch; the
parent process starts one worker per engine with that engine on `sys.path`.

    python3 tools/oracle/record_cases.py \
        --python /tmp/oracle-venv/bin/python \
        --release vllm==0.34.0 --release sglang==0.5.23 \
        --vllm-src /tmp/oracle-src/vllm --vllm-extra /tmp/oracle-extra-vllm \
        --sglang-src /tmp/oracle-src/sglang --sglang-extra /tmp/oracle-extra-sglang

Options: `--only ID_SUBSTRING` to record a subset (printed, files untouched),
`--compare-old` to replay tests/data/oracle/cases/*.json through the given
releases and print where the decisions changed.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import traceback
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OLD_DIR = REPO / "tests" / "data" / "oracle" / "cases"

sys.path.insert(0, str(HERE))
from oracle_platforms import PLATFORMS, current, kept_off_cuda, on_platform, records, setup_sglang  # noqa: E402
from oracle_platforms import setup_vllm, vllm_cpu_ops, vllm_linear_kernel, worker_env  # noqa: E402
from releases import add_release_arguments, engine_version, holds, release_dir, releases_of  # noqa: E402

# ---------------------------------------------------------------------------
# Platform stand-in.
# Decisions are recorded as on a CUDA device of compute capability 9.0 (H100 /
# H200 class).  Only the facts the engines query are provided (device present,
# capability 9.0, name); no kernel ever runs.
# ---------------------------------------------------------------------------
STANDIN_CAPABILITY = (9, 0)
STANDIN_DEVICE_NAME = "NVIDIA H100 80GB HBM3"

# Method classes whose constructors cannot run on a CPU-only machine.  When
# get_quant_method builds one of these and its constructor raises, the worker
# records the class that was chosen (the decision has already been taken at
# that point) instead of the exception.  Any other constructor failure is
# recorded as an error so that nothing is accepted silently.  The reasons are
# the exceptions observed while recording; see README.md.
ALLOWED_CONSTRUCTOR_FAILURES: dict[str, str] = {}  # filled per engine below

# ---------------------------------------------------------------------------
# Case inputs and the worker-side base live beside this file.
# ---------------------------------------------------------------------------
sys.path.insert(0, str(HERE))
from case_layers import LLAMA_PMM, attn, dense_block, lin, lm_head, moe  # noqa: E402
from harness import ConstructorNotRun, Harness, _exc_text, _install_stub_finder  # noqa: E402,F401
from harness import _stub_module, _write_folder  # noqa: E402,F401
from oracle_case_table import build_cases  # noqa: E402



# ---------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------
class VllmHarness(Harness):
    engine = "vllm"

    def __init__(self):
        import torch

        # Compiled extensions that are imported by module bodies only.
        _stub_module("vllm._C_stable_libtorch")
        fa = _stub_module("vllm.vllm_flash_attn")
        fa.FA2_AVAILABLE = False
        fa.FA3_AVAILABLE = False

        import vllm.platforms as platforms
        from vllm.platforms.cuda import CudaPlatformBase
        from vllm.platforms.interface import DeviceCapability

        class CudaStandIn(CudaPlatformBase):
            @classmethod
            def get_device_capability(cls, device_id=0):
                return DeviceCapability(*STANDIN_CAPABILITY)

            @classmethod
            def get_device_name(cls, device_id=0):
                return STANDIN_DEVICE_NAME

            @classmethod
            def get_device_total_memory(cls, device_id=0):
                return 80 << 30

            @classmethod
            def is_fully_connected(cls, physical_device_ids):
                return True

            @classmethod
            def log_warnings(cls):
                pass

        setup_vllm(current(), CudaStandIn)

        # Capability queries answered by the CUDA extension (cutlass_scaled_mm_supports_fp8 /
        # _block_fp8 / _fp4 at import time; cutlass_group_gemm_supported when 0.34's W4A8 MoE
        # method picks its experts kernel): capability 9.0 supports all of them.
        import vllm._custom_ops as ops

        if current() == "cuda":
            for n in dir(ops):
                if ("supports" in n or n.endswith("_supported")) and callable(getattr(ops, n)):
                    setattr(ops, n, lambda *a, **k: True)
        else:
            vllm_cpu_ops()

        import importlib

        for mod in [
            "vllm.model_executor.layers.quantization",
            "vllm.model_executor.layers.quantization.auto_awq",
            "vllm.model_executor.layers.quantization.auto_gptq",
            "vllm.model_executor.layers.quantization.fp8",
            "vllm.model_executor.layers.quantization.modelopt",
            "vllm.model_executor.layers.quantization.moe_wna16",
            "vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors",
            "vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors_moe.compressed_tensors_moe",
            "vllm.model_executor.model_loader.weight_utils",
        ]:
            importlib.import_module(mod)
        from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase

        self.method_base = QuantizeMethodBase
        self.wrap_constructors()
        self.torch = torch
        self._classes = {}
        self._instrument()

    # -- instrumentation for `detail` ------------------------------------
    def _instrument(self):
        import vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors as ct
        import vllm.model_executor.layers.quantization.modelopt as mo

        harness = self
        orig_fmt = ct.find_matched_target if hasattr(ct, "find_matched_target") else None
        if orig_fmt is not None:
            def find_matched_target(layer_name, module, targets, fused_mapping=None, *a, **k):
                r = orig_fmt(layer_name, module, targets, fused_mapping, *a, **k)
                harness._last_target = r
                return r

            ct.find_matched_target = find_matched_target
        orig_blm = mo.build_linear_method

        def build_linear_method(config, algo, prefix):
            harness._last_algo = algo
            return orig_blm(config, algo, prefix)

        mo.build_linear_method = build_linear_method

    # -- layers ---------------------------------------------------------
    def layer_class(self, module_class: str, kind: str):
        key = (module_class, kind)
        if key in self._classes:
            return self._classes[key]
        import torch

        if kind == "linear":
            import vllm.model_executor.layers.linear as L

            base = getattr(L, module_class)
        elif kind == "lm_head":
            from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead as base
        elif kind == "moe":
            from vllm.model_executor.layers.fused_moe import RoutedExperts as base
        elif kind == "attention" and module_class == "MLAAttention":
            # MLAAttention does not derive from Attention: the isinstance tests differ.
            from vllm.model_executor.layers.attention import MLAAttention as base
        elif kind == "attention":
            from vllm.model_executor.layers.attention import Attention as base
        else:
            raise ValueError(kind)

        harness = self

        def __init__(self, prefix):
            torch.nn.Module.__init__(self)
            self.prefix = prefix
            self.layer_name = prefix
            self.params_dtype = torch.bfloat16
            self.input_size = self.input_size_per_partition = 4096
            self.output_size = self.output_size_per_partition = 4096
            self.output_partition_sizes = [4096]
            self.ckpt_gate_proj_name = "gate_proj"
            self.ckpt_up_proj_name = "up_proj"
            self.ckpt_down_proj_name = "down_proj"
            self.moe_config = harness.moe_config()
            self.hidden_size = 4096
            self.intermediate_size_per_partition = 1024
            self.num_experts = self.global_num_experts = self.local_num_experts = 8

        cls = type(module_class, (base,), {"__init__": __init__, "__module__": "oracle_standin"})
        self._classes[key] = cls
        return cls

    def moe_config(self):
        """A real FusedMoEConfig for a small unsharded MoE (8 experts, top-2,
        hidden 4096, intermediate 1024, SiLU, bf16, TP=EP=DP=1)."""
        import torch
        from vllm.model_executor.layers.fused_moe.activation import MoEActivation
        from vllm.model_executor.layers.fused_moe.config import (
            FusedMoEConfig, FusedMoEParallelConfig, RoutingMethodType)

        par = FusedMoEParallelConfig(tp_size=1, pcp_size=1, dp_size=1, ep_size=1, tp_rank=0, pcp_rank=0,
                                     dp_rank=0, ep_rank=0, sp_size=1, use_ep=False,
                                     all2all_backend="allgather_reducescatter", enable_eplb=False)
        return FusedMoEConfig(num_experts=8, experts_per_token=2, hidden_dim=4096, intermediate_size=1024,
                              num_local_experts=8, num_logical_experts=8, activation=MoEActivation.from_str("silu"),
                              device="cuda", routing_method=RoutingMethodType.Renormalize,
                              moe_parallel_config=par, in_dtype=torch.bfloat16)

    # -- config-level resolution -----------------------------------------
    def resolve_method(self, hf_quant_cfg, user_quant, hf_config):
        from vllm.config.model import ModelConfig

        mc = object.__new__(ModelConfig)
        for k, v in {
            "quantization": user_quant,
            "model_arch_config": types.SimpleNamespace(quantization_config=hf_quant_cfg),
            "hf_config": hf_config,
            "allow_deprecated_quantization": False,
        }.items():
            object.__setattr__(mc, k, v)
        ModelConfig._verify_quantization(mc)
        return mc.quantization

    def build_config(self, case):
        """Runs the engine's loader path: config.json parsing (which also picks
        up a standalone hf_quant_config.json), method resolution, then
        get_quant_config on the model folder, then the model's mapper and
        packed_modules_mapping.  Returns (config, resolved_name)."""
        from vllm.model_executor.model_loader import weight_utils as wu
        from vllm.transformers_utils.config import get_config
        from vllm.transformers_utils.model_arch_config_convertor import ModelArchConfigConvertorBase

        xi = case.get("extra_inputs", {})
        files = copy.deepcopy(dict(xi.get("files", {})))
        source = case.get("config_source", "config.json")
        config_json = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": 32,
                       "num_key_value_heads": 8, "hidden_size": 4096}
        config_json.update(copy.deepcopy(xi.get("config_json", {})))  # model fields a config reads
        if source == "config.json":
            config_json["quantization_config"] = copy.deepcopy(case["config"])
        else:
            files.setdefault(source, case["config"])
        files["config.json"] = config_json
        folder = self.folder = _write_folder(files)
        hf_config = get_config(folder, trust_remote_code=False)
        # Configs that read the model config at get_quant_method time (DeepseekV4FP8Config's
        # expert_dtype, moe_quant_algo) see this case's, as inside the engine.
        from vllm.config import get_current_vllm_config

        get_current_vllm_config().model_config.hf_config = hf_config
        get_current_vllm_config().model_config.hf_text_config = hf_config
        conv = object.__new__(ModelArchConfigConvertorBase)
        conv.hf_config = hf_config
        conv.hf_text_config = hf_config
        quant_cfg = conv.get_quantization_config()
        resolved = self.resolved = self.resolve_method(quant_cfg, xi.get("user_quantization"), hf_config)
        model_config = types.SimpleNamespace(
            quantization=resolved,
            quantization_config=None,
            hf_config=hf_config,
            model_arch_config=types.SimpleNamespace(
                total_num_attention_heads=32, total_num_kv_heads=8, quantization_config=quant_cfg),
            hf_overrides={},
            model=folder,
            revision=None,
        )
        load_config = types.SimpleNamespace(download_dir=None)
        try:
            cfg = wu.get_quant_config(model_config, load_config)
        except ConstructorNotRun as e:
            raise e.exc
        self._apply_model(cfg, case)
        return cfg, resolved

    def _apply_model(self, cfg, case):
        from vllm.model_executor.models.interfaces import SupportsQuant

        mapper = None
        model = case.get("model_class")
        if model:
            import importlib

            modname, clsname = model.rsplit(".", 1)
            mcls = getattr(importlib.import_module("vllm.model_executor.models." + modname), clsname)
            mapper = getattr(mcls, "hf_to_vllm_mapper", None)
        holder = types.SimpleNamespace(
            quant_config=cfg, hf_to_vllm_mapper=mapper,
            packed_modules_mapping=copy.deepcopy(case.get("packed_modules_mapping") or {}),
        )
        SupportsQuant._maybe_apply_model_mapping(holder)

    def get_method(self, cfg, layer, prefix):
        from vllm.model_executor.layers.quantization.base_config import resolve_quant_method

        self._last_target = None
        self._last_algo = None
        m = resolve_quant_method(cfg, layer, prefix)
        if current() != "cuda" and m is not None:
            layer._oracle_kernel = vllm_linear_kernel(m, layer)
        return m

    def classify(self, method, layer, case, cfg):
        kernel = getattr(layer, "_oracle_kernel", None)
        if kernel is not None and kernel.startswith("error "):
            # No kernel on the platform implements the layer: building it fails.
            return "error", kernel[len("error "):]
        return super().classify(method, layer, case, cfg)

    def describe(self, method, layer, case, cfg):
        detail = self._describe(method, layer, case, cfg)
        kernel = getattr(layer, "_oracle_kernel", None)
        if kernel is None:
            return detail
        return detail[:-1] + f" kernel={kernel}]" if detail.endswith("]") else f"{detail}[kernel={kernel}]"

    def _describe(self, method, layer, case, cfg):
        name = type(method).__name__
        if name.startswith("CompressedTensors") and getattr(self, "_last_target", None):
            return f"{name}[target={self._last_target} group={_ct_group(case['config'], self._last_target, cfg)}]"
        if name == "ModelOptLinearMethod" and getattr(self, "_last_algo", None):
            return f"{name}[algo={self._last_algo}]"
        if name.startswith("AutoGPTQ") and hasattr(method, "quant_config"):
            q = method.quant_config
            return (f"{name}[bits={q.weight_bits} group_size={q.group_size} "
                    f"desc_act={q.desc_act} sym={q.is_sym}]")
        return name


def _ct_group(config, target, cfg=None):
    groups = config.get("config_groups", {}) if isinstance(config, dict) else {}
    found = None
    for gname, g in groups.items():
        if target in (g.get("targets") or []):
            found = gname  # later duplicates overwrite the scheme (target_scheme_map)
    if found is None and target in ("FusedMoE", "RoutedExperts"):
        for gname, g in groups.items():
            if "Linear" in (g.get("targets") or []):
                found = gname
        if found is not None:
            return f"{found} via Linear"
    if found is None and cfg is not None:
        # target renamed by the model's name mapper: search the mapped map
        return "mapped"
    return found


# ---------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------
def _sglang_cuda_standin(torch):
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda device=None: STANDIN_CAPABILITY
    torch.cuda.get_device_name = lambda device=None: STANDIN_DEVICE_NAME
    torch.cuda.device_count = lambda: 1


class SglangHarness(Harness):
    engine = "sglang"

    def __init__(self):
        import torch

        setup_sglang(current(), _sglang_cuda_standin)
        # sgl_kernel is the CUDA kernel package; its Python modules are only
        # imported by module bodies here.  sgl_kernel.scalar_type is left out
        # so that SGLang uses its own pure-Python fallback for scalar types.
        _install_stub_finder({"sgl_kernel"}, {"sgl_kernel.scalar_type"})
        import importlib

        for mod in [
            "sglang.srt.layers.quantization",
            "sglang.srt.layers.quantization.fp8",
            "sglang.srt.layers.quantization.gptq",
            "sglang.srt.layers.quantization.awq",
            "sglang.srt.layers.quantization.bitsandbytes",
            "sglang.srt.layers.quantization.w8a8_int8",
            "sglang.srt.layers.quantization.w8a8_fp8",
            "sglang.srt.layers.quantization.modelopt_quant",
            "sglang.srt.layers.quantization.compressed_tensors.compressed_tensors",
            "sglang.srt.layers.quantization.moe_wna16",
            "sglang.srt.model_loader.weight_utils",
            "sglang.srt.configs.model_config",
        ]:
            importlib.import_module(mod)
        from sglang.srt.layers.quantization.base_config import QuantizeMethodBase

        self.method_base = QuantizeMethodBase
        self.wrap_constructors()
        self._classes = {}
        self._instrument()

    def _instrument(self):
        import sglang.srt.layers.quantization.compressed_tensors.compressed_tensors as ct

        harness = self
        orig = ct.find_matched_target

        def find_matched_target(layer_name, module, targets, fused_mapping=None, *a, **k):
            r = orig(layer_name, module, targets, fused_mapping, *a, **k)
            harness._last_target = r
            return r

        ct.find_matched_target = find_matched_target

    def layer_class(self, module_class: str, kind: str):
        key = (module_class, kind)
        if key in self._classes:
            return self._classes[key]
        import torch

        if kind == "linear":
            import sglang.srt.layers.linear as L

            base = getattr(L, module_class)
        elif kind == "lm_head":
            from sglang.srt.layers.vocab_parallel_embedding import ParallelLMHead as base
        elif kind == "moe":
            from sglang.srt.layers.moe.fused_moe_triton import FusedMoE as base
        elif kind == "attention":
            from sglang.srt.layers.radix_attention import RadixAttention as base
        else:
            raise ValueError(kind)

        def __init__(self, prefix):
            torch.nn.Module.__init__(self)
            self.prefix = prefix
            self.params_dtype = torch.bfloat16
            self.input_size = self.input_size_per_partition = 4096
            self.output_size = self.output_size_per_partition = 4096
            self.output_partition_sizes = [4096]
            self.use_triton_kernels = False
            self.use_flashinfer_trtllm_moe = False
            self.hidden_size = 4096
            self.intermediate_size_per_partition = 1024
            self.num_experts = self.num_local_experts = 8
            self.top_k = 2
            self.moe_runner_config = types.SimpleNamespace(
                num_experts=8, num_local_experts=8, hidden_size=4096, intermediate_size_per_partition=1024,
                top_k=2, activation="silu", is_gated=True, apply_router_weight_on_input=False,
                inplace=True, no_combine=False, routed_scaling_factor=None, params_dtype=torch.bfloat16,
            )

        cls = type(module_class, (base,), {"__init__": __init__, "__module__": "oracle_standin"})
        self._classes[key] = cls
        return cls

    def resolve_method(self, hf_config, folder, user_quant):
        from sglang.srt.configs.model_config import ModelConfig

        mc = ModelConfig.__new__(ModelConfig)
        mc.quantization = user_quant
        mc.hf_config = hf_config
        mc.model_path = folder
        mc.revision = None
        mc.is_draft_model = False
        mc.is_draft_quantization_explicit = False
        ModelConfig._verify_quantization(mc)
        return mc.quantization

    def build_config(self, case):
        from sglang.srt.model_loader import weight_utils as wu

        xi = case.get("extra_inputs", {})
        files = dict(xi.get("files", {}))
        embedded = case["config"] if case.get("config_source", "config.json") == "config.json" else None
        if "config_source" in case and case["config_source"] != "config.json":
            files.setdefault(case["config_source"], case["config"])
        files["config.json"] = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                                **({"quantization_config": embedded} if embedded is not None else {})}
        folder = self.folder = _write_folder(files)
        from transformers import AutoConfig

        hf_config = AutoConfig.from_pretrained(folder)
        resolved = self.resolved = self.resolve_method(hf_config, folder, xi.get("user_quantization"))
        model_config = types.SimpleNamespace(
            quantization=resolved, hf_config=AutoConfig.from_pretrained(folder),
            model_path=folder, revision=None, is_draft_model=False,
        )
        load_config = types.SimpleNamespace(download_dir=None, model_loader_extra_config={})
        pmm = copy.deepcopy(case.get("packed_modules_mapping") or {})
        if current() == "npu":
            # The loader's whole NPU path, mapper included (npu_standin.py).
            return self.npu().quant_config(model_config, load_config, case), resolved
        try:
            cfg = wu.get_quant_config(model_config, load_config, pmm)
        except ConstructorNotRun as e:
            raise e.exc
        model = case.get("model_class")
        if model:
            import importlib

            modname, clsname = model.rsplit(".", 1)
            mcls = getattr(importlib.import_module("sglang.srt.models." + modname), clsname)
            mapper = getattr(mcls, "hf_to_sglang_mapper", None)
            # sglang/srt/model_loader/loader.py: _get_quantization_config
            if mapper is not None and cfg is not None:
                cfg.apply_weight_name_mapper(mapper)
        return cfg, resolved

    def get_method(self, cfg, layer, prefix):
        self._last_target = None
        return cfg.get_quant_method(layer, prefix=prefix)

    def npu(self):
        if getattr(self, "_npu", None) is None:
            from npu_standin import NpuStandin

            self._npu = NpuStandin()
        return self._npu

    def describe(self, method, layer, case, cfg):
        detail = self._describe(method, layer, case, cfg)
        scheme = getattr(layer, "scheme", None)
        if current() == "cuda" or scheme is None or "[" + type(scheme).__name__ in detail:
            return detail
        # Off cuda the scheme is the kernel path the platform chose (GPTQIntelAMXLinearScheme, …).
        scheme_name = type(scheme).__name__
        return detail[:-1] + f" scheme={scheme_name}]" if detail.endswith("]") else f"{detail}[scheme={scheme_name}]"

    def _describe(self, method, layer, case, cfg):
        name = type(method).__name__
        if current() == "npu" and (npu := self.npu().describe(method, layer)):
            return npu
        if name.startswith("CompressedTensors") and getattr(self, "_last_target", None):
            return f"{name}[target={self._last_target} group={_ct_group(case['config'], self._last_target, cfg)}]"
        if name.startswith("GPTQ") and hasattr(method, "quant_config"):
            q = method.quant_config
            sym = getattr(q, "is_sym", None)
            s = f"bits={q.weight_bits} group_size={q.group_size} desc_act={q.desc_act}"
            if sym is not None:
                s += f" sym={sym}"
            return f"{name}[{s}]"
        return name


def run_case(h: Harness, case: dict) -> dict:
    out = _run_case(h, case)
    folder = getattr(h, "folder", None)
    if folder:
        for e in out["expected"]:
            e["detail"] = e["detail"].replace(folder, "<model_dir>")
        if "config_error" in out:
            out["config_error"] = out["config_error"].replace(folder, "<model_dir>")
    h.folder = None
    return out


def _run_case(h: Harness, case: dict) -> dict:
    out = {"id": case["id"], "expected": [], "ctor_not_run": []}
    h.resolved = None
    try:
        cfg, resolved = h.build_config(case)
        out["resolved_quantization"] = resolved
        out["config_class"] = type(cfg).__name__
    except Exception as e:  # noqa: BLE001 - the engine's error is the recorded decision
        where = "from_config"
        tb = traceback.extract_tb(e.__traceback__)
        fnames = [f.name for f in tb]
        if "_verify_quantization" in fnames:
            where = "resolve_quantization"
        elif "from_config" not in fnames and "get_quant_config" in fnames:
            where = "get_quant_config"
        detail = f"{where} {_exc_text(e)}"
        if os.environ.get("ORACLE_TRACE"):
            traceback.print_exc()
        out["config_error"] = detail
        if h.resolved is not None:
            out["resolved_quantization"] = h.resolved
        for layer in case["layers"]:
            out["expected"].append({"prefix": layer["prefix"], "decision": "error", "detail": detail})
        return out
    for layer in case["layers"]:
        cls = h.layer_class(layer["module_class"], layer["kind"])
        mod = cls(layer["prefix"])
        try:
            method = h.get_method(cfg, mod, layer["prefix"])
            decision, detail = h.classify(method, mod, case, cfg)
        except ConstructorNotRun as e:
            allowed = ALLOWED_CONSTRUCTOR_FAILURES.get(e.cls_name)
            refusal = any(e.cls_name == c and text in _exc_text(e.exc)
                          for c, text in ENGINE_REFUSALS.get(case["engine"], {}))
            if refusal:
                decision, detail = "error", _exc_text(e.exc)
            elif allowed is None:
                decision, detail = "error", f"constructor {e.cls_name} failed: {_exc_text(e.exc)}"
                out.setdefault("unreviewed_ctor_failures", []).append(detail)
            else:
                decision = "unquantized" if e.cls_name.startswith("Unquantized") else "quantized"
                detail = e.cls_name
                if decision == "quantized" and e.cls_name.startswith("CompressedTensors") \
                        and getattr(h, "_last_target", None):
                    detail = (f"{e.cls_name}[target={h._last_target} group="
                              f"{_ct_group(case['config'], h._last_target, cfg)}]")
                out["ctor_not_run"].append(f"{e.cls_name} ({type(e.exc).__name__})")
        except Exception as e:  # noqa: BLE001
            decision, detail = "error", _exc_text(e)
            if os.environ.get("ORACLE_TRACE"):
                traceback.print_exc()
        out["expected"].append({"prefix": layer["prefix"], "decision": decision, "detail": detail})
    if current() == "npu":
        out["npu_patches"] = h.npu().note()
    return out


def worker_main(engine: str):
    cases = json.load(sys.stdin)
    import logging

    logging.disable(logging.WARNING)
    import warnings

    warnings.filterwarnings("ignore")
    h = VllmHarness() if engine == "vllm" else SglangHarness()
    ALLOWED_CONSTRUCTOR_FAILURES.update(ALLOWED_BY_ENGINE[engine])
    results = []
    import contextlib

    ctx = contextlib.nullcontext()
    if engine == "vllm":
        # Layers are always built inside a current VllmConfig in the engine;
        # the default one (no model) is enough for the quantization code.
        import torch
        from vllm.config import VllmConfig, set_current_vllm_config

        vc = VllmConfig()
        # Method and scheme constructors read the activation dtype from the
        # current model config; the stand-in carries only that (bf16).
        object.__setattr__(vc, "model_config", types.SimpleNamespace(
            dtype=torch.bfloat16, quantization_config=None, hf_text_config=types.SimpleNamespace(model_type="llama")))
        ctx = set_current_vllm_config(vc)
    with ctx:
        for case in cases:
            results.append(run_case(h, case))
    sys.stdout.write("\n@@ORACLE@@" + json.dumps(results) + "\n")


ALLOWED_BY_ENGINE: dict[str, dict[str, str]] = {
    "vllm": {},
    "sglang": {
        "BitsAndBytesLinearMethod": "constructor imports the bitsandbytes CUDA package (ImportError when absent)",
        "BitsAndBytesMoEMethod": "constructor imports the bitsandbytes CUDA package (ImportError when absent)",
    },
}

# Constructor failures that are the engine refusing the configuration on any device (its own
# validation, not a missing CUDA dependency): recorded as that layer's error, as the engine raises
# it from get_quant_method.
ENGINE_REFUSALS: dict[str, set[tuple[str, str]]] = {
    "vllm": {("CompressedTensorsW4A8Fp8MoEMethod", "Only group size 128 supported for W4A8 MoE"),
             # capability 9.0 is the recordings' device
             ("Nvfp4OnlineMoEMethod", "requires a Blackwell (SM100) GPU"),
             # off cuda: no MoE kernel for the scheme on the platform, Marlin's CPU types
             ("ModelOptNvFp4FusedMoE", "No NvFp4 MoE backend supports"),
             ("CompressedTensorsWNA16MoEMethod", "No WNA16 MoE backend supports"),
             ("AutoAWQMoEMethod", "No WNA16 MoE backend supports"),
             ("Mxfp4MoEMethod", "No MXFP4 MoE backend supports"),
             ("Int8OnlineMoEMethod", "No Int8 MoE backend supports"),
             ("Mxfp4OnlineLinearMethod", "Failed to find a kernel that can implement the MXFP4 linear"),
             ("CompressedTensorsW4A8Fp8MoEMethod", "No W4A8 MoE backend supports"),
             ("AutoGPTQLinearMethod", "Marlin does not support weight_bits")},
    # off cuda: no NVFP4 MoE backend on the platform
    "sglang": {("ModelOptNvFp4FusedMoEMethod", "Current platform does not support NVFP4 quantization")},
}

# ---------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------


def run_worker(args, engine: str, cases: list[dict]) -> list[dict]:
    src = args.vllm_src if engine == "vllm" else args.sglang_src
    extra = args.vllm_extra if engine == "vllm" else args.sglang_extra
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(HERE), src, extra] if p)
    env.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    env["HF_HUB_OFFLINE"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONHASHSEED"] = "0"  # engine texts that print a set list it in one order
    env.update(worker_env(engine, args.platform))
    p = subprocess.run([args.python, str(Path(__file__).resolve()), "--worker", engine],
                       input=json.dumps(cases), capture_output=True, text=True, env=env)
    marker = "\n@@ORACLE@@"
    if os.environ.get("ORACLE_TRACE"):
        sys.stderr.write(p.stderr)
    if marker not in p.stdout:
        sys.stderr.write(p.stderr[-6000:])
        raise SystemExit(f"{engine} worker failed (rc={p.returncode})")
    return json.loads(p.stdout.split(marker, 1)[1])


def finish(case: dict, res: dict, version: str, platform: str) -> dict:
    engine = case["engine"]
    out = {
        "id": case["id"],
        "engine": engine,
        "engine_commit": f"{engine_version(engine, version)} ({' + '.join(case['code'])})",
        "format": case["format"],
        "config": case["config"],
        "packed_modules_mapping": case.get("packed_modules_mapping") or {},
        "layers": case["layers"],
        "expected": res["expected"],
    }
    if "resolved_quantization" in res:
        out["resolved_quantization"] = res["resolved_quantization"]
    xi = dict(case.get("extra_inputs") or {})
    if case.get("config_source", "config.json") != "config.json":
        xi["config_source"] = case["config_source"]
    if case.get("model_class"):
        xi["model_class"] = case["model_class"]
    if platform != "cuda":
        xi["platform"] = platform
    if xi:
        out["extra_inputs"] = xi
    note = case.get("note", "")
    if res.get("npu_patches"):
        note += (" " if note else "") + res["npu_patches"]
    if res.get("ctor_not_run"):
        seen = sorted(set(res["ctor_not_run"]))
        note += (" " if note else "") + "[method constructors not run on CPU: " + ", ".join(seen) + "]"
    out["note"] = note
    return out


def old_case_inputs(path: Path) -> list[dict]:
    cases = []
    for c in json.loads(path.read_text()):
        c2 = {k: c[k] for k in ("id", "engine", "format", "config", "layers")}
        c2["engine"] = c["engine"].split("@")[0]  # "vllm@helpers": replayed through the release
        c2["packed_modules_mapping"] = c.get("packed_modules_mapping") or {}
        c2["code"] = ["replay"]
        layers = []
        for l in c["layers"]:
            l2 = dict(l)
            if c2["engine"] == "vllm" and l2["kind"] == "moe":
                l2["module_class"] = "RoutedExperts"
            layers.append(l2)
        c2["layers"] = layers
        cfg = c["config"]
        if c["format"] == "modelopt" and "quantization" in cfg:
            c2["config_source"] = "hf_quant_config.json"
            c2["extra_inputs"] = {"user_quantization": "modelopt"} if c2["engine"] == "vllm" else {}
        if c["format"] == "modelslim":
            c2["config_source"] = "quant_model_description.json"
        c2["_old_expected"] = c["expected"]
        cases.append(c2)
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", choices=["vllm", "sglang"])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--vllm-src")
    ap.add_argument("--vllm-extra")
    ap.add_argument("--sglang-src")
    ap.add_argument("--sglang-extra")
    ap.add_argument("--only")
    ap.add_argument("--compare-old", action="store_true")
    ap.add_argument("--platform", choices=PLATFORMS, default="cuda",
                    help="the platform the engines run on (oracle_platforms.py); cases recorded off cuda go to "
                         "releases/<engine>-<version>/platforms/<platform>/")
    add_release_arguments(ap)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)
    releases = releases_of(args)

    if args.compare_old:
        for path in sorted(OLD_DIR.glob("*.json")):
            cases = old_case_inputs(path)
            engine = cases[0]["engine"]
            if engine not in releases:
                continue
            results = run_worker(args, engine, cases)
            for c, r in zip(cases, results):
                for old, new in zip(c["_old_expected"], r["expected"]):
                    if (old["decision"], old["detail"]) != (new["decision"], new["detail"]):
                        print(json.dumps({"file": path.name, "id": c["id"], "prefix": old["prefix"],
                                          "old": [old["decision"], old["detail"]],
                                          "new": [new["decision"], new["detail"]]}))
        return

    cases = build_cases(lin=lin, lm_head=lm_head, moe=moe, attn=attn, dense_block=dense_block,
                        LLAMA_PMM=LLAMA_PMM)
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    if args.only:
        cases = [c for c in cases if args.only in c["id"]]
    cases = [c for c in cases if c["engine"] in releases and holds(c, c["engine"], releases[c["engine"]])
             and records(c["engine"], args.platform, c["format"]) and on_platform(c, args.platform)]
    by_engine: dict[str, list] = {}
    for c in cases:
        by_engine.setdefault(c["engine"], []).append(c)
    finished = []
    problems = []
    for engine, ecases in by_engine.items():
        results = run_worker(args, engine, ecases)
        for c, r in zip(ecases, results):
            finished.append(finish(c, r, releases[engine], args.platform))
            if r.get("unreviewed_ctor_failures"):
                problems.append((c["id"], r["unreviewed_ctor_failures"]))
    if args.only:
        print(json.dumps(finished, indent=1))
        for p in problems:
            print("UNREVIEWED", p, file=sys.stderr)
        return
    if problems:
        for p in problems:
            print("UNREVIEWED constructor failure:", p, file=sys.stderr)
        raise SystemExit("review the constructor failures above before writing cases")
    files: dict[Path, list] = {}
    if args.platform != "cuda":
        finished = kept_off_cuda(finished, cases, releases)
    for c in finished:
        out_dir = release_dir(c["engine"], releases[c["engine"]])
        out_dir = out_dir / "cases" if args.platform == "cuda" else out_dir / "platforms" / args.platform
        files.setdefault(out_dir / f"{c['engine']}-{c['format']}.json", []).append(c)
    for path, cs in sorted(files.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cs, indent=1, ensure_ascii=False) + "\n")
        n = sum(len(c["expected"]) for c in cs)
        print(f"{path.relative_to(REPO)}: {len(cs)} cases, {n} layer decisions")


if __name__ == "__main__":
    main()
