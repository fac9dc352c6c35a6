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

import os

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
