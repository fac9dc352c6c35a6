"""vLLM 0.33.0: build the engine's real model class on the meta device from a model folder.

Path: `EngineArgs(model=folder, load_format="dummy", ...).create_engine_config()` (HF config,
`ModelConfig._verify_quantization` with the optional `--quantization`, then
`VllmConfig._get_quantization_config` -> `weight_utils.get_quant_config`), a one-rank gloo group,
then `model_loader.utils.initialize_model` (what the loader's `create_model` calls) under
`set_default_torch_dtype(model_config.dtype)` and `torch.device("meta")`.  With speculative MTP the
draft is built as the proposer builds it: `initialize_model` with the speculative config's
`draft_model_config` on the proposer's draft VllmConfig.
"""

from __future__ import annotations

import contextlib
import sys

from harness import ConstructorNotRun, _exc_text
from model_common import CallRecorder, debug_traceback, engine_exception, import_all, install_cuda_object_standins, install_op_namespaces
from record_cases import ALLOWED_BY_ENGINE, VllmHarness

_PORT = [29611]


def _router_gemm_standin():
    """0.34's GateLinear on capability 9.0 registers a JIT warm-up of its SM90 router GEMM, whose
    module imports the CuTe DSL (`cutlass`, not installed). Registering a warm-up only records the
    shapes to compile later; the stand-in kernel object accepts and drops them."""
    import types

    name = "vllm.model_executor.layers.fused_moe.router.bf16x3_router_gemm_sm90"
    m = types.ModuleType(name)
    m._SM90_BF16X3_ROUTER_GEMM_KERNEL = types.SimpleNamespace(register_warmup=lambda **k: None)
    sys.modules[name] = m


class VllmModelHarness(VllmHarness):
    def __init__(self):
        super().__init__()
        # Custom-op namespaces of the compiled extensions: layer constructors store references to
        # ops such as torch.ops._C.silu_and_mul; nothing calls them on the meta device.
        install_op_namespaces(["_C", "_moe_C", "_C_cache_ops", "_C_custom_ar", "_rocm_C"])
        # Device facts a layer constructor queries beyond record_cases.py's platform stand-in:
        # the SM count (Triton MLA: 132, an H100 SXM), the device count and the current device, answered with the
        # meta device so that tensors created with an explicit device stay on meta.
        import torch
        import vllm.platforms as platforms

        plat = type(platforms._current_platform)
        plat.num_compute_units = classmethod(lambda cls, device_id=0: 132)
        plat.current_device = classmethod(lambda cls: torch.device("meta"))
        # A node of 8 such devices, so that ParallelConfig accepts tensor_parallel_size up to 8.
        plat.device_count = classmethod(lambda cls: 8)
        install_cuda_object_standins()
        _router_gemm_standin()
        import_all("vllm.model_executor.layers.quantization")
        from vllm.model_executor.layers.quantization.base_config import (
            QuantizationConfig, QuantizeMethodBase)
        from vllm.model_executor.model_loader import weight_utils

        self.rec = CallRecorder(self._classify, self._substitute,
                                lambda n: n in ALLOWED_BY_ENGINE["vllm"], self._kind, self._moe_shape,
                                self._before_call)
        self.rec.wrap_configs(QuantizationConfig)
        self.rec.wrap_methods(QuantizeMethodBase)
        self.rec.wrap_get_quant_config([weight_utils])
        self._dist = False
        self.case = {"config": {}}

    # -- recording hooks -------------------------------------------------
    def _before_call(self):
        self._last_target = None
        self._last_algo = None

    def _classify(self, method, layer):
        return self.classify(method, layer, self.case, None)

    def _kind(self, layer):
        from vllm.model_executor.layers.attention.attention import Attention
        from vllm.model_executor.layers.attention.mla_attention import MLAAttention
        from vllm.model_executor.layers.fused_moe import RoutedExperts
        from vllm.model_executor.layers.linear import LinearBase
        from vllm.model_executor.layers.vocab_parallel_embedding import (
            ParallelLMHead, VocabParallelEmbedding)

        if isinstance(layer, LinearBase):
            return "linear"
        if isinstance(layer, ParallelLMHead):
            return "lm_head"
        if isinstance(layer, VocabParallelEmbedding):
            return "embedding"
        if isinstance(layer, RoutedExperts):
            return "moe"
        if isinstance(layer, (Attention, MLAAttention)):
            return "attention"
        return "other"

    @staticmethod
    def _moe_shape(layer):
        # RoutedExperts' own hidden_size is rounded up by the method; the config keeps both.
        mc = layer.moe_config
        return layer.global_num_experts, mc.intermediate_size, mc.hidden_dim_unpadded

    def _substitute(self, layer):
        from vllm.model_executor.layers.fused_moe import RoutedExperts
        from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
            UnquantizedFusedMoEMethod)
        from vllm.model_executor.layers.linear import LinearBase, UnquantizedLinearMethod
        from vllm.model_executor.layers.vocab_parallel_embedding import (
            UnquantizedEmbeddingMethod, VocabParallelEmbedding)

        if isinstance(layer, LinearBase):
            return UnquantizedLinearMethod()
        if isinstance(layer, VocabParallelEmbedding):
            return UnquantizedEmbeddingMethod()
        if isinstance(layer, RoutedExperts):
            return UnquantizedFusedMoEMethod(layer.moe_config)
        return None

    # -- distributed -------------------------------------------------------
    def _init_dist(self, vc):
        if self._dist:
            return
        from vllm.config import set_current_vllm_config
        from vllm.distributed import ensure_model_parallel_initialized, init_distributed_environment

        from vllm.config import VllmConfig

        # A VllmConfig without a model config creates every group, the expert-parallel one too.
        with set_current_vllm_config(VllmConfig()):
            init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                         distributed_init_method=f"tcp://127.0.0.1:{_PORT[0]}",
                                         backend="gloo")
            ensure_model_parallel_initialized(1, 1)
        self._dist = True

    @contextlib.contextmanager
    def _tp(self, n):
        """Rank 0 of an N-way tensor-parallel group: the TP group coordinator answers world size N,
        rank 0, so every TP getter (get_tensor_model_parallel_world_size / _rank and the group's
        attributes) gives what rank 0 of N sees."""
        from vllm.distributed import parallel_state as ps

        g = ps.get_tp_group()
        saved = (g.world_size, g.rank_in_group)
        if n > 1:
            g.world_size, g.rank_in_group = n, 0
        try:
            yield
        finally:
            g.world_size, g.rank_in_group = saved

    # -- one recording -----------------------------------------------------
    def record(self, folder, inputs):
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.engine.arg_utils import EngineArgs
        from vllm.model_executor.model_loader.utils import initialize_model
        from vllm.utils.torch_utils import set_default_torch_dtype

        rec = self.rec
        rec.reset()
        out = {"model_class": None, "resolved_quantization": None, "dtype": None, "error": None}
        kw = dict(model=folder, load_format="dummy", skip_tokenizer_init=True, enforce_eager=True,
                  dtype=inputs.get("dtype", "auto"), tensor_parallel_size=inputs.get("tp_size", 1),
                  trust_remote_code=False)
        if inputs.get("quantization"):
            kw["quantization"] = inputs["quantization"]
        if inputs.get("speculative"):
            kw["speculative_config"] = {"method": "mtp", "num_speculative_tokens": 1}
        try:
            vc = EngineArgs(**kw).create_engine_config()
        except ConstructorNotRun as e:
            out["error"] = f"{type(e.exc).__name__}: {e.exc}"
            return out, rec.config_dict
        except Exception as e:  # noqa: BLE001 - raised before any layer was built
            debug_traceback()
            out["error"] = _exc_text(engine_exception(e))
            return out, rec.config_dict
        mc = vc.model_config
        out["resolved_quantization"] = mc.quantization
        out["dtype"] = str(mc.dtype).replace("torch.", "")
        self.case = {"config": rec.config_dict or {}}
        # The loader's target device (device_config.device) is the meta device.
        vc.device_config.device = torch.device("meta")
        self._init_dist(vc)
        model = draft = None
        with self._tp(inputs.get("tp_size", 1)):
            with set_current_vllm_config(vc), set_default_torch_dtype(mc.dtype), torch.device("meta"):
                model = initialize_model(vllm_config=vc, model_config=mc)
            out["model_class"] = f"{type(model).__module__}.{type(model).__qualname__}"
            if inputs.get("speculative"):
                draft_vc, dmc = self._draft_config(vc)
                with set_current_vllm_config(draft_vc), set_default_torch_dtype(dmc.dtype), \
                        torch.device("meta"):
                    draft = initialize_model(vllm_config=draft_vc, model_config=dmc)
                out["draft_model_class"] = f"{type(draft).__module__}.{type(draft).__qualname__}"
        calls, modules = rec.finish(model, [("draft", draft)] if draft is not None else [])
        out["quant_calls"] = calls
        pmm = getattr(model, "packed_modules_mapping", None) or {}
        out["_pmm"] = {k: list(v) for k, v in dict(pmm).items() if isinstance(v, (list, tuple))}
        if rec.ctor_not_run:
            out["ctor_not_run"] = sorted(rec.ctor_not_run)
        out["modules"] = modules
        return out, rec.config_dict

    def _draft_config(self, vc):
        import types

        spec = vc.speculative_config
        if hasattr(spec, "apply_draft_overrides"):
            # 0.34: v1/worker/gpu/spec_decode/eagle/utils.py load_eagle_model (the MTP speculator's
            # draft loader) builds the draft under the target config with the overrides applied.
            return spec.apply_draft_overrides(vc), spec.draft_model_config
        from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

        holder = types.SimpleNamespace(speculative_config=vc.speculative_config, vllm_config=vc)
        draft_vc = SpecDecodeBaseProposer._create_draft_vllm_config(holder)
        return draft_vc, vc.speculative_config.draft_model_config
