"""An Ascend NPU platform stand-in for recording SGLang's ModelSlim path on a CPU machine.

ModelSlim is NPU-only in SGLang 0.5.23: the loader (`model_loader/loader.py`,
`_get_quantization_config`) adds its NPU sections to the model's packed_modules_mapping and skips
the GPU capability check only when `_is_npu` is set, and the ModelSlim methods and schemes import
the NPU kernel packages (`torch_npu`, `sgl_kernel_npu`). This module makes the already imported
loader believe it runs on an NPU, stubs those packages and `torch.ops.npu`, and runs the engine's own
`_get_quantization_config` for a stand-in model class that carries the case's
packed_modules_mapping, so every step from folder to config object is the engine's.

It also records the module patches ModelSlimConfig applies (the RMSNorm bias patch that
`norm.bias` keys trigger), so that a case can say the engine changed the norm layers.
"""

from __future__ import annotations

import copy
import types

from harness import _install_stub_finder

# The NPU kernel packages, and deep_gemm, a CUDA kernel package that the DeepSeek-V4 model module
# (whose key remapping ModelSlimConfig calls) imports in its body.
STUB_PACKAGES = {"torch_npu", "sgl_kernel_npu", "deep_gemm"}


class _NpuOps:
    """torch.ops.npu: method constructors keep references to NPU ops; none is ever called here."""

    def __getattr__(self, name):
        def op(*args, **kwargs):
            raise RuntimeError(f"torch.ops.npu.{name} is a stand-in and cannot run")

        return op


class NpuStandin:
    def __init__(self):
        import torch

        _install_stub_finder(STUB_PACKAGES, set())
        torch.ops.npu = _NpuOps()
        import sglang.srt.layers.quantization.modelslim.modelslim as ms
        import sglang.srt.model_loader.loader as loader

        self.loader = loader
        self.patches: list[str] = []
        orig_patch = ms.apply_module_patch

        def apply_module_patch(target, attr, wrappers, *a, **k):
            self.patches.append(f"{target}.{attr}")
            return orig_patch(target, attr, wrappers, *a, **k)

        ms.apply_module_patch = apply_module_patch

    def quant_config(self, model_config, load_config, case):
        """The engine's _get_quantization_config on an NPU, for the case's model mapping."""
        import torch

        loader = self.loader
        self.patches = []
        model_cls = type("OracleNpuModel", (), {
            "packed_modules_mapping": copy.deepcopy(case.get("packed_modules_mapping") or {}),
        })
        model_config.dtype = torch.bfloat16
        model_config.is_draft_quantization_explicit = False
        saved = (loader._is_npu, loader.get_model_architecture)
        loader._is_npu = True
        loader.get_model_architecture = lambda mc: (model_cls, "LlamaForCausalLM")
        try:
            return loader._get_quantization_config(model_config, load_config)
        finally:
            loader._is_npu, loader.get_model_architecture = saved

    @staticmethod
    def describe(method, layer) -> str | None:
        name = type(method).__name__
        if name == "ModelSlimLinearMethod":
            return f"{name}[{type(layer.scheme).__name__}]"
        if name == "ModelSlimFusedMoEMethod":
            return f"{name}[W13={type(layer.w13_scheme).__name__} W2={type(layer.w2_scheme).__name__}]"
        return None

    def note(self) -> str:
        if not self.patches:
            return ""
        return "[ModelSlimConfig patched " + ", ".join(sorted(set(self.patches))) + "]"
