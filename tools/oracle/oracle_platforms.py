"""The platform an engine runs on, as the recorders stand it in on a CPU-only machine.

`cuda` is a device of compute capability 9.0 (record_cases.py STANDIN_*); the others answer the
queries each engine makes before and while it imports its quantization package, so that the
registries those imports build (SGLang's QUANTIZATION_METHODS, vLLM's kernel lists) are the ones of
that platform. Nothing here runs a kernel.

- `cpu`: SGLang with SGLANG_USE_CPU_ENGINE=1 on an x86 host without AMX; vLLM's CpuPlatform.
- `cpu-amx`: the same with AMX tiles and SGLang's AMX kernel package present
  (`cpu_has_amx_support()`); for vLLM, AMX tiles without AMX-FP8.
- `npu`: an Ascend Atlas A2 / A3 NPU (`torch.npu` available; the NPU kernel packages stubbed,
  npu_standin.py).
- `mps`: Apple silicon (`torch.mps.is_available()`), SGLang's PyTorch path: SGLANG_USE_MLX unset,
  so an MLX folder resolves to mlx_q4 / mlx_q8 and fails in MlxQuantizationConfig (with it set,
  mlx-lm serves the folder, which no recorder here can run).
"""

from __future__ import annotations

import json
import os
import sys

PLATFORMS = ("cuda", "cpu", "cpu-amx", "npu", "mps")
# The formats whose cases each engine is recorded with on each platform (None: every format). The
# list is what quantpath reproduces there (src/importers/engine_methods.cc).
ENGINE_PLATFORMS = {
    "vllm": {"cuda": None, "cpu": None, "cpu-amx": None},
    "sglang": {"cuda": None, "cpu": None, "cpu-amx": None, "mps": None,
               "npu": ("modelslim", "gptq", "awq", "fp8", "modelopt", "bitsandbytes", "w8a8_int8", "w8a8_fp8",
                       "loader")},
}
# Errors whose text comes from the recording host rather than the engine on the platform: a CUDA
# query answered by this machine's torch build, a kernel package's ops that the stand-ins do not
# register. Cases that meet one off cuda are left out (record_cases.py prints them).
HOST_ERRORS = ("Found no NVIDIA driver", "'_OpNamespace' 'sgl_kernel' object has no attribute")


def records(engine: str, platform: str, fmt: str) -> bool:
    formats = ENGINE_PLATFORMS[engine].get(platform, ())
    return formats is None or fmt in formats


def worker_env(engine: str, platform: str) -> dict[str, str]:
    """Environment variables the worker starts with on `platform`."""
    env = {"ORACLE_PLATFORM": platform}
    if engine == "sglang" and platform in ("cpu", "cpu-amx"):
        env["SGLANG_USE_CPU_ENGINE"] = "1"
    return env


def current() -> str:
    return os.environ.get("ORACLE_PLATFORM", "cuda")


class _CpuOps:
    """torch.ops.sgl_kernel as SGLang's CPU build registers it: its `*_cpu` ops, which model modules
    bind at import (apply_rotary_pos_emb_cpu, …), answer as stand-ins that raise if called; any
    other name is the real namespace's, so `hasattr` tests for CUDA ops stay false."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        if not name.endswith("_cpu"):
            return getattr(self._real, name)

        def op(*args, **kwargs):
            raise RuntimeError(f"torch.ops.sgl_kernel.{name} is a stand-in and cannot run")

        return op


def _amx(torch, present: bool):
    torch.cpu._is_amx_tile_supported = lambda: present


def setup_sglang(platform: str, cuda_standin) -> None:
    """Before SGLang's quantization package is imported."""
    import torch

    if platform == "cuda":
        cuda_standin(torch)
        return
    torch.cuda.is_available = lambda: False
    if platform in ("cpu", "cpu-amx"):
        _amx(torch, platform == "cpu-amx")
        torch.ops.sgl_kernel = _CpuOps(torch.ops.sgl_kernel)
        import sglang.srt.utils.common as common

        common.is_amx_tile_supported = platform == "cpu-amx"
        # SGLang's AMX kernels are the CPU build of sgl_kernel (convert_weight_packed).
        common._is_intel_amx_backend_available = lambda: platform == "cpu-amx"
    elif platform == "npu":
        from npu_standin import install_npu

        install_npu(torch)
        import sglang.srt.utils as utils
        import sglang.srt.utils.common as common

        # torch.compile's NPU backend comes from torchair's compiler; layers that compile on an NPU
        # are built with compilation disabled, so any backend name does.
        utils.get_compiler_backend = common.get_compiler_backend = lambda mode=None: "inductor"
        import sglang.srt.hardware_backend.npu.utils as npu_utils

        # An Atlas A2 / A3 device: not the arch35 (A5) generation, whose MXFP8 paths differ.
        npu_utils.is_npu_arch35 = lambda: False
    elif platform == "mps":
        torch.mps.is_available = lambda: True


def setup_vllm(platform: str, cuda_platform) -> None:
    """Before vLLM's quantization package is imported: the current platform object."""
    import torch
    import vllm.platforms as platforms

    if platform == "cuda":
        platforms._current_platform = cuda_platform()
        return
    from vllm.platforms.cpu import CpuPlatform

    torch.cpu._is_amx_tile_supported = lambda: platform == "cpu-amx"
    platforms._current_platform = CpuPlatform()


def vllm_cpu_ops() -> None:
    """vLLM's CPU ops as an x86 CPU build registers them (fp8_scaled_mm_cpu, the oneDNN handlers),
    on a CPU without AMX-FP8 (Sapphire / Granite Rapids have AMX-BF16 and AMX-INT8 only)."""
    import vllm._cpu_ops as cpu_ops

    for name in dir(cpu_ops):
        if name.startswith("_supports_"):
            setattr(cpu_ops, name, True)
    cpu_ops.cpu_has_amx_fp8 = lambda: False


# ---------------------------------------------------------------------------
# vLLM off cuda: the linear kernel each method picks (worker side)
# ---------------------------------------------------------------------------
_KERNELS: list[str] = []  # the kernel classes instantiated by the current create_weights
_KERNELS_WRAPPED = False


def vllm_linear_kernel(method, layer):
    """Off cuda, the kernel a linear method picks for the platform when it creates the layer's
    weights (vLLM chooses it in create_weights from the current platform's kernel lists)."""
    import torch
    from harness import _exc_text
    from vllm.model_executor.layers.linear import LinearBase

    if not isinstance(layer, LinearBase) or type(method).__name__.startswith("Unquantized"):
        return None
    if not _KERNELS_WRAPPED:
        _wrap_kernels()
        # Weight parameters ask the tensor-parallel group for their rank: a one-rank gloo group.
        from vllm.config import VllmConfig, set_current_vllm_config
        from vllm.distributed import ensure_model_parallel_initialized, init_distributed_environment

        with set_current_vllm_config(VllmConfig()):
            init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                         distributed_init_method="tcp://127.0.0.1:29641", backend="gloo")
            ensure_model_parallel_initialized(1, 1)
    _KERNELS.clear()
    try:
        method.create_weights(layer, input_size_per_partition=4096, output_partition_sizes=[4096],
                              input_size=4096, output_size=4096, params_dtype=torch.bfloat16,
                              weight_loader=lambda *a, **k: None)
    except Exception as e:  # noqa: BLE001 - the engine refusing the layer on the platform
        return f"error {_exc_text(e)}"
    return _KERNELS[0] if _KERNELS else "none"

def _wrap_kernels():
    global _KERNELS_WRAPPED
    _KERNELS_WRAPPED = True
    import importlib

    bases = []
    for mod, cls in [("vllm.model_executor.kernels.linear.base", "MMLinearKernel"),
                     ("vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel", "MPLinearKernel"),
                     ("vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel",
                      "ScaledMMLinearKernel"),
                     ("vllm.model_executor.kernels.linear.nvfp4.base", "NvFp4LinearKernel"),
                     ("vllm.model_executor.kernels.linear.mxfp4.base", "MxFp4LinearKernel"),
                     ("vllm.model_executor.kernels.linear.mxfp8.Mxfp8LinearKernel", "Mxfp8LinearKernel"),
                     ("vllm.model_executor.kernels.linear.mxfp6.base", "MxFp6LinearKernel")]:
        bases.append(getattr(importlib.import_module(mod), cls))
    importlib.import_module("vllm.model_executor.kernels.linear")

    # The first wrapped __init__ an instance runs names its class (subclasses that define no
    # __init__ run their base's).
    for b in bases:
        orig = b.__dict__.get("__init__")
        if orig is None or b.__dict__.get("_oracle_kernel_wrapped"):
            continue
        b._oracle_kernel_wrapped = True

        def __init__(self, *a, __orig=orig, **k):
            if not getattr(self, "_oracle_seen", False):
                object.__setattr__(self, "_oracle_seen", True)
                _KERNELS.append(type(self).__name__)
            __orig(self, *a, **k)

        b.__init__ = __init__


# ---------------------------------------------------------------------------
# Which cases a platform keeps (parent side)
# ---------------------------------------------------------------------------
def on_platform(case: dict, platform: str) -> bool:
    """A case naming `platforms` is recorded there only; any other is recorded on every platform."""
    return platform in case.get("platforms", PLATFORMS)


def kept_off_cuda(finished: list[dict], cases: list[dict], releases: dict[str, str]) -> list[dict]:
    """The cases a platform other than cuda keeps: those written for it (`platforms`), those whose
    decisions differ from the committed cuda recording, and the first case of each format, so that
    every method has a case on every platform."""
    from releases import release_dir

    explicit = {c["id"] for c in cases if "platforms" in c}
    cuda: dict[str, list] = {}
    for engine, version in releases.items():
        for path in sorted((release_dir(engine, version) / "cases").glob("*.json")):
            for c in json.loads(path.read_text()):
                cuda[c["id"]] = c["expected"]
    kept, formats = [], set()
    for c in finished:
        host = next((t for t in HOST_ERRORS for e in c["expected"] if t in e["detail"]), None)
        if host is not None:
            print(f"left out {c['id']}: an error from the recording host ({host})", file=sys.stderr)
            continue
        first = (c["engine"], c["format"]) not in formats
        formats.add((c["engine"], c["format"]))
        if c["id"] in explicit or first or cuda.get(c["id"]) != c["expected"]:
            kept.append(c)
    return kept
