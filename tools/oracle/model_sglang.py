"""SGLang 0.5.23: build the engine's real model class on the meta device from a model folder.

Path: `ServerArgs(model_path=folder, load_format="dummy", ...)` published as the scheduler
process publishes it, a one-rank gloo group (`init_distributed_environment`,
`initialize_model_parallel`, `initialize_dp_attention`), `ModelConfig.from_server_args` (HF config,
`_verify_quantization` with the optional `--quantization`), then what `DummyModelLoader.load_model`
does: `loader._get_quantization_config` (-> `weight_utils.get_quant_config`, the model's
`packed_modules_mapping`, the dtype / capability checks and the HF->SGLang name mapper) and
`loader._initialize_model` under `set_default_torch_dtype(model_config.dtype)` and
`torch.device("meta")`.  With speculative NextN the draft is built from
`ModelConfig.from_server_args(..., is_draft_model=True)` the same way.
"""

from __future__ import annotations

import contextlib
import enum
import sys
import types

from harness import ConstructorNotRun, _exc_text
from model_common import CallRecorder, debug_traceback, engine_exception, import_all, install_cuda_object_standins, meta_device_mode
from record_cases import ALLOWED_BY_ENGINE, SglangHarness

_PORT = 29633
GPU_MEMORY_MIB = 81559  # what nvidia-smi reports for an H100 80GB


def _dual_gemm_standin():
    """sglang.kernels.ops.gemm.cutedsl_dual_gemm imports the CuTe DSL (`cutlass`, not installed).
    The Llama MLP asks it only whether its SM100 dual GEMM applies (`can_use_dual_gemm`), which on
    capability 9.0 is False; the stand-in answers that and carries the mode enum's members."""
    name = "sglang.kernels.ops.gemm.cutedsl_dual_gemm"
    m = types.ModuleType(name)
    m.MAX_DUAL_GEMM_DECODE_TOKENS = 16
    m.DualGemmQuantMode = enum.IntEnum("DualGemmQuantMode", {
        "STATIC_PER_TENSOR": 0, "STATIC_PER_TOKEN": 1, "DYNAMIC_PER_TENSOR": 2,
        "DYNAMIC_PER_TOKEN": 3, "UNQUANT": 4})
    m.can_use_dual_gemm = lambda *a, **k: False
    sys.modules[name] = m


class SglangModelHarness(SglangHarness):
    def __init__(self):
        super().__init__()
        import torch

        # Device facts beyond record_cases.py's stand-in: device memory (server-args resolution
        # sizes pools from it), group coordinators on the CPU (their bookkeeping tensors would
        # otherwise go to cuda:0), side streams / events.
        def capacity(*a, **k):
            return GPU_MEMORY_MIB

        for n, mod in list(sys.modules.items()):
            if n.startswith("sglang") and hasattr(mod, "get_device_memory_capacity"):
                mod.get_device_memory_capacity = capacity
        import sglang.srt.distributed.parallel_state as ps

        ps._group_coordinator_device = lambda local_rank: torch.device("cpu")
        install_cuda_object_standins()
        _dual_gemm_standin()
        import_all("sglang.srt.layers.quantization")
        from sglang.srt.layers.quantization.base_config import (
            QuantizationConfig, QuantizeMethodBase)
        from sglang.srt.model_loader import loader, weight_utils

        self.rec = CallRecorder(self._classify, self._substitute,
                                lambda n: n in ALLOWED_BY_ENGINE["sglang"], self._kind, self._moe_shape,
                                self._before_call)
        self.rec.wrap_configs(QuantizationConfig)
        self.rec.wrap_methods(QuantizeMethodBase)
        self.rec.wrap_get_quant_config([weight_utils, loader])
        self._dist = False
        self.case = {"config": {}}
        # The process groups are built once, for a small unquantized Llama folder.
        import shutil

        from harness import _write_folder

        boot = _write_folder({"config.json": {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
            "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8,
            "num_hidden_layers": 1, "vocab_size": 1024, "torch_dtype": "bfloat16"}})
        self._init_dist(self._publish(boot, {}, 1))
        shutil.rmtree(boot, ignore_errors=True)

    # -- recording hooks -------------------------------------------------
    def _before_call(self):
        self._last_target = None

    def _classify(self, method, layer):
        return self.classify(method, layer, self.case, None)

    def _kind(self, layer):
        from sglang.srt.layers.linear import LinearBase
        from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE
        from sglang.srt.layers.radix_attention import RadixAttention
        from sglang.srt.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding

        if isinstance(layer, LinearBase):
            return "linear"
        if isinstance(layer, ParallelLMHead):
            return "lm_head"
        if isinstance(layer, VocabParallelEmbedding):
            return "embedding"
        if isinstance(layer, FusedMoE):
            return "moe"
        if isinstance(layer, RadixAttention):
            return "attention"
        return "other"

    @staticmethod
    def _moe_shape(layer):
        # FusedMoE keeps only the per-rank intermediate size (intermediate_size // moe_tp_size);
        # num_experts counts the fused shared-expert slots.
        return (layer.num_experts, layer.intermediate_size_per_partition * layer.moe_tp_size,
                layer.hidden_size_unpadded)

    def _substitute(self, layer):
        from sglang.srt.layers.linear import LinearBase
        from sglang.srt.layers.moe.fused_moe_triton.layer import FusedMoE
        from sglang.srt.layers.quantization.unquant import (
            UnquantizedEmbeddingMethod, UnquantizedFusedMoEMethod, UnquantizedLinearMethod)
        from sglang.srt.layers.vocab_parallel_embedding import VocabParallelEmbedding

        if isinstance(layer, LinearBase):
            return UnquantizedLinearMethod()
        if isinstance(layer, VocabParallelEmbedding):
            return UnquantizedEmbeddingMethod()
        if isinstance(layer, FusedMoE):
            return UnquantizedFusedMoEMethod(getattr(layer, "use_triton_kernels", False),
                                             getattr(layer, "use_flashinfer_trtllm_moe", False),
                                             getattr(layer, "use_deep_gemm", False))
        return None

    # -- server args and groups ------------------------------------------
    def _publish(self, folder, inputs, tp):
        from sglang.srt.runtime_context import SpawnRanks, publish
        from sglang.srt.server_args import ServerArgs

        kw = dict(model_path=folder, load_format="dummy", skip_tokenizer_init=True, device="cuda",
                  tp_size=tp, dtype=inputs.get("dtype", "auto"), trust_remote_code=False)
        if inputs.get("quantization"):
            kw["quantization"] = inputs["quantization"]
        if inputs.get("speculative"):
            kw.update(speculative_algorithm="NEXTN", speculative_num_steps=1, speculative_eagle_topk=1,
                      speculative_num_draft_tokens=2)
        sa = ServerArgs(**kw)
        publish(sa, role="scheduler", ranks=SpawnRanks(world_rank=0))
        return sa

    def _init_dist(self, sa):
        if self._dist:
            return
        from sglang.srt.distributed.parallel_state import (
            init_distributed_environment, initialize_model_parallel)
        from sglang.srt.layers.dp_attention import initialize_dp_attention

        init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                     distributed_init_method=f"tcp://127.0.0.1:{_PORT}")
        initialize_model_parallel()
        initialize_dp_attention(server_args=sa)
        self._dist = True

    @contextlib.contextmanager
    def _tp(self, n):
        """Rank 0 of an N-way tensor-parallel group.  The process groups live in the parallel
        context's permanent values (`get_parallel()._stamp`); for N > 1 the TP, attention-TP,
        MoE-TP and shared-experts-TP groups are replaced by copies that answer world size N,
        rank 0 (layers read their shard sizes from the group they retain), and the server args
        published inside say tp_size N (publish checks that the groups' widths match)."""
        import copy

        from sglang.srt.runtime_context import get_parallel

        stamp = get_parallel()._stamp
        names = ("tp_group", "attn_tp_group", "moe_tp_group", "shared_experts_tp_group")
        saved = {k: stamp[k] for k in names if k in stamp}
        if n > 1:
            for k, g in saved.items():
                g2 = copy.copy(g)
                g2.world_size, g2.rank_in_group = n, 0
                g2.ranks = list(range(n))
                stamp[k] = g2
        try:
            yield
        finally:
            stamp.update(saved)

    # -- one recording -----------------------------------------------------
    def record(self, folder, inputs):
        import torch
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.model_loader import loader as L

        rec = self.rec
        rec.reset()
        tp = inputs.get("tp_size", 1)
        out = {"model_class": None, "resolved_quantization": None, "dtype": None, "error": None}
        with self._tp(tp):
            try:
                sa = self._publish(folder, inputs, tp)
                mc = ModelConfig.from_server_args(sa)
                out["resolved_quantization"] = mc.quantization
                out["dtype"] = str(mc.dtype).replace("torch.", "")
                lc = LoadConfig(load_format="dummy")
                qc = L._get_quantization_config(mc, lc)
            except ConstructorNotRun as e:
                out["error"] = f"{type(e.exc).__name__}: {e.exc}"
                return out, rec.config_dict
            except Exception as e:  # noqa: BLE001 - raised before any layer was built
                debug_traceback()
                out["error"] = _exc_text(engine_exception(e))
                return out, rec.config_dict
            if isinstance(rec.config_dict, dict):
                # get_quant_config writes the model's packed_modules_mapping and the HF config
                # object into the checkpoint's dict before from_config; the recorded dict is the
                # checkpoint's.
                rec.config_dict.pop("hf_config", None)
                rec.config_dict.pop("packed_modules_mapping", None)
            self.case = {"config": rec.config_dict or {}}
            draft = None
            with L.set_default_torch_dtype(mc.dtype), torch.device("meta"), meta_device_mode():
                model = L._initialize_model(mc, lc, qc)
            out["model_class"] = f"{type(model).__module__}.{type(model).__qualname__}"
            if inputs.get("speculative"):
                from sglang.srt.runtime_context import get_spec

                dmc = ModelConfig.from_server_args(
                    sa, model_path=get_spec().speculative_draft_model_path or folder, is_draft_model=True)
                dqc = L._get_quantization_config(dmc, lc)
                with L.set_default_torch_dtype(dmc.dtype), torch.device("meta"), meta_device_mode():
                    draft = L._initialize_model(dmc, lc, dqc)
                out["draft_model_class"] = f"{type(draft).__module__}.{type(draft).__qualname__}"
        calls, modules = rec.finish(model, [("draft", draft)] if draft is not None else [])
        out["quant_calls"] = calls
        out["modules"] = modules
        pmm = getattr(model, "packed_modules_mapping", None) or {}
        out["_pmm"] = {k: list(v) for k, v in dict(pmm).items() if isinstance(v, (list, tuple))}
        if rec.ctor_not_run:
            out["ctor_not_run"] = sorted(rec.ctor_not_run)
        return out, rec.config_dict
