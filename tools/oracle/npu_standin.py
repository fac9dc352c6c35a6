"""The Ascend NPU platform stand-in (`--platform npu`) for recording SGLang on a CPU machine.

On an NPU, SGLang registers its NPU methods (`gptq` as GPTQAscendConfig, `mxfp4` as W4A4, ModelSlim's
schemes), the loader (`model_loader/loader.py`, `_get_quantization_config`) adds its NPU sections
to the model's packed_modules_mapping and skips the GPU capability check, and the methods import the
NPU kernel packages (`torch_npu`, `sgl_kernel_npu`). `install_npu` makes `is_npu()` hold before
SGLang is imported and stubs those packages and `torch.ops.npu`; `NpuStandin` runs the engine's own
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
# (whose key remapping ModelSlimConfig calls) imports in its body; torchair, which SGLang imports on
# an NPU for its graph compiler; acl, the Ascend runtime.
STUB_PACKAGES = {"torch_npu", "sgl_kernel_npu", "torchair", "acl", "deep_gemm"}


class _NpuOps:
    """torch.ops.npu: method constructors keep references to NPU ops; none is ever called here."""

    def __getattr__(self, name):
        def op(*args, **kwargs):
            raise RuntimeError(f"torch.ops.npu.{name} is a stand-in and cannot run")

        return op


class _Namespace:
    """A namespace of NPU names (torch_npu.profiler.ProfilerActivity.NPU …) that module bodies
    list at import; calling one raises."""

    def __init__(self, path):
        self._path = path

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Namespace(f"{self._path}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._path} is a stand-in and cannot run")


class _NpuDevice(types.ModuleType):
    """torch.npu: available, one device; any other query answers a neutral value."""

    def __init__(self):
        super().__init__("torch.npu")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1


def install_npu(torch) -> None:
    """Before SGLang is imported: `is_npu()` holds and the NPU packages import as stand-ins."""
    _install_stub_finder(STUB_PACKAGES, set())
    torch.ops.npu = _NpuOps()
    torch.npu = _NpuDevice()
    import torch_npu

    # profile_utils lists torch_npu.profiler's names among the profilers at import.
    torch_npu.profiler = _Namespace("torch_npu.profiler")
    # Model modules call it at import to patch torch for the NPU; nothing here runs on one.
    torch_npu._apply_patches = lambda *a, **k: None


class NpuStandin:
    def __init__(self):
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
        attrs = {"packed_modules_mapping": copy.deepcopy(case.get("packed_modules_mapping") or {})}
        if case.get("model_class"):
            # The loader applies the model class's HF->SGLang name mapper, as on any platform.
            import importlib

            modname, clsname = case["model_class"].rsplit(".", 1)
            mcls = getattr(importlib.import_module("sglang.srt.models." + modname), clsname)
            attrs["hf_to_sglang_mapper"] = getattr(mcls, "hf_to_sglang_mapper", None)
        model_cls = type("OracleNpuModel", (), attrs)
        model_config.dtype = torch.bfloat16
        model_config.is_draft_quantization_explicit = False
        # What ModelConfig derives for a model without fp4 or NVFP4 routed experts.
        model_config.is_fp4_experts = False
        model_config.nvfp4_moe_meta = None
        saved = loader.get_model_architecture
        loader.get_model_architecture = lambda mc: (model_cls, "LlamaForCausalLM")
        try:
            return loader._get_quantization_config(model_config, load_config)
        finally:
            loader.get_model_architecture = saved

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
