"""Worker-side recording of the quantization calls an engine makes while it builds a real model.

`CallRecorder` wraps `get_quant_method` of every quantization config class and `create_weights` of
every quantization method class of one engine.  Every outermost `get_quant_method` call becomes one
entry (prefix as passed, the layer object's class, the decision).  When `get_quant_method` or the
returned method's `create_weights` raises, the error is that call's decision and the engine's
unquantized method for that kind of layer takes its place, so that construction goes on and one
model yields every layer's decision.
"""

from __future__ import annotations

import sys

from harness import ConstructorNotRun, _exc_text


def json_safe(obj):
    """A JSON copy of a config dict; objects the engine put into it (an HF config) become
    "<ClassName>"."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return f"<{type(obj).__name__}>"


class OpNamespaceStandIn:
    """Stands in for a `torch.ops.<namespace>` whose compiled library is absent: attributes the real
    namespace has are returned as they are, any other is a function that raises if called (model
    constructors only store these references)."""

    # Ops a module body tests with hasattr before registering Python code for them (vLLM 0.34's
    # hip_gdn_chunk.py registers a fake kernel for a ROCm op): a CUDA build has none of them.
    ABSENT = {("_rocm_C", "rdna35_gdn_chunked")}

    def __init__(self, name: str, real):
        self._name = name
        self._real = real

    def __getattr__(self, attr):
        if attr.startswith("__") or (self._name, attr) in self.ABSENT:
            raise AttributeError(attr)
        try:
            return getattr(self._real, attr)
        except (AttributeError, RuntimeError):
            pass
        name = self._name

        def _missing(*a, **k):
            raise RuntimeError(f"torch.ops.{name}.{attr}: compiled op not available")

        _missing.__name__ = attr
        return _missing


def install_op_namespaces(names):
    import torch

    for n in names:
        real = getattr(torch.ops, n)
        setattr(torch.ops, n, OpNamespaceStandIn(n, real))


def install_cuda_object_standins():
    """`torch.cuda.Stream` / `Event` stand-ins: layer constructors create side streams and events
    (shared-expert overlap, MoE runners) but only use them in forward passes."""
    import torch

    class StreamStandIn:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return lambda *a, **k: None

    torch.cuda.Stream = StreamStandIn
    torch.cuda.Event = type("EventStandIn", (StreamStandIn,), {})


def meta_device_mode():
    """A torch function mode under which every tensor is created on the meta device, also when
    the engine names a device explicitly (`device=get_device()` -> "cuda", `.cuda()`, `.to("cuda")`):
    the plain `torch.device("meta")` context only fills in a missing device."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._device import _device_constructors

    ctors = _device_constructors()
    meta = torch.device("meta")

    class MetaEverywhere(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in ctors:
                kwargs["device"] = meta
            elif func in (torch.Tensor.cuda,):
                return args[0].to(meta)
            elif func is torch.Tensor.to:
                a = list(args)
                for i, x in enumerate(a[1:], 1):
                    if isinstance(x, (str, torch.device)) or (isinstance(x, int) and not isinstance(x, bool)):
                        a[i] = meta
                if "device" in kwargs:
                    kwargs["device"] = meta
                args = tuple(a)
            return func(*args, **kwargs)

    return MetaEverywhere()


def _subclasses(base):
    seen = []
    todo = [base]
    while todo:
        c = todo.pop()
        for s in c.__subclasses__():
            if s not in seen:
                seen.append(s)
                todo.append(s)
    return seen


def import_all(package):
    """Imports every module of a package so that all its config / method subclasses exist (the
    wrappers are installed on subclasses).  Modules that fail to import are skipped."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    for m in pkgutil.walk_packages(pkg.__path__, package + "."):
        try:
            importlib.import_module(m.name)
        except BaseException:  # noqa: BLE001 - optional backends missing on CPU
            pass


class CallRecorder:
    """Engine-independent call recording.  The engine side supplies:
    - `classify(method, layer) -> (decision, detail)`
    - `substitute(layer) -> method or None` (the engine's unquantized method for that layer)
    - `allowed_ctor(cls_name) -> bool` (method classes whose constructors cannot run on CPU)
    - `kind(layer) -> "linear" | "lm_head" | "embedding" | "moe" | "attention" | "other"`
    - `moe_shape(layer) -> (experts, intermediate, hidden)`: an MoE layer's logical sizes as its
      object holds them
    """

    def __init__(self, classify, substitute, allowed_ctor, kind, moe_shape, before_call=None):
        self.classify = classify
        self.kind = kind
        self.moe_shape = moe_shape
        self.substitute = substitute
        self.allowed_ctor = allowed_ctor
        self.before_call = before_call or (lambda: None)
        self.calls: list[dict] = []
        self.layers: list = []  # keeps layer objects alive so id() stays unique
        self.ctor_not_run: set[str] = set()
        self.config_dict = None
        self._in_get_quant_config = False
        self._depth = 0
        self._cw_depth = 0
        self._last_for_layer: dict[int, int] = {}

    def reset(self):
        self.calls = []
        self.layers = []
        self.ctor_not_run = set()
        self.config_dict = None
        self._depth = 0
        self._cw_depth = 0
        self._last_for_layer = {}

    # -- get_quant_method ------------------------------------------------
    def wrap_configs(self, config_base):
        for cls in [config_base] + _subclasses(config_base):
            self._wrap_config_class(cls)
        rec = self
        orig_init_subclass = config_base.__dict__.get("__init_subclass__")

        @classmethod
        def __init_subclass__(cls, **kw):
            if orig_init_subclass is not None:
                orig_init_subclass.__func__(cls, **kw)
            else:
                super(config_base, cls).__init_subclass__(**kw)
            rec._wrap_config_class(cls)

        config_base.__init_subclass__ = __init_subclass__

    def _wrap_config_class(self, cls):
        rec = self
        d = cls.__dict__
        if "get_quant_method" in d and not getattr(d["get_quant_method"], "_oracle", False):
            orig = d["get_quant_method"]

            def get_quant_method(self, layer, *a, __orig=orig, **k):
                return rec._call(__orig, self, layer, a, k)

            get_quant_method._oracle = True
            cls.get_quant_method = get_quant_method
        fc = d.get("from_config")
        if isinstance(fc, classmethod) and not getattr(fc.__func__, "_oracle", False):
            if True:
                f = fc.__func__

                def from_config(klass, config, *a, __f=f, **k):
                    if rec._in_get_quant_config and rec.config_dict is None and isinstance(config, dict):
                        rec.config_dict = json_safe(config)
                    return __f(klass, config, *a, **k)

                from_config._oracle = True
                cls.from_config = classmethod(from_config)

    def _call(self, orig, cfg, layer, a, k):
        if self._depth > 0:
            return orig(cfg, layer, *a, **k)
        prefix = k.get("prefix", a[0] if a else "")
        self.before_call()
        self._depth += 1
        entry = {"prefix": prefix, "layer_class": type(layer).__name__, "kind": self.kind(layer)}
        try:
            method = orig(cfg, layer, *a, **k)
        except ConstructorNotRun as e:
            if self.allowed_ctor(e.cls_name):
                entry["decision"] = "unquantized" if e.cls_name.startswith("Unquantized") else "quantized"
                entry["detail"] = e.cls_name
                self.ctor_not_run.add(f"{e.cls_name} ({type(e.exc).__name__})")
            else:
                entry["decision"] = "error"
                entry["detail"] = f"constructor {e.cls_name} failed: {_exc_text(e.exc)}"
            method = self.substitute(layer)
        except Exception as e:  # noqa: BLE001 - the engine's error is the recorded decision
            entry["decision"], entry["detail"] = "error", _exc_text(e)
            method = self.substitute(layer)
        else:
            entry["decision"], entry["detail"] = self.classify(method, layer)
        finally:
            self._depth -= 1
        entry["_layer"] = id(layer)
        self.layers.append(layer)
        self._last_for_layer[id(layer)] = len(self.calls)
        self.calls.append(entry)
        return method

    # -- create_weights ----------------------------------------------------
    def wrap_methods(self, method_base):
        for cls in [method_base] + _subclasses(method_base):
            self._wrap_method_class(cls)
        rec = self
        orig_init_subclass = method_base.__dict__.get("__init_subclass__")

        @classmethod
        def __init_subclass__(cls, **kw):
            if orig_init_subclass is not None:
                orig_init_subclass.__func__(cls, **kw)
            rec._wrap_method_class(cls)

        # The constructor wrapper of harness.py already replaced __init_subclass__; chain to it.
        method_base.__init_subclass__ = __init_subclass__

    def _wrap_method_class(self, cls):
        rec = self
        d = cls.__dict__
        if "create_weights" in d and not getattr(d["create_weights"], "_oracle", False):
            orig = d["create_weights"]

            def create_weights(self, layer, *a, __orig=orig, **k):
                if rec._cw_depth > 0:
                    return __orig(self, layer, *a, **k)
                rec._cw_depth += 1
                try:
                    return __orig(self, layer, *a, **k)
                except ConstructorNotRun:
                    raise
                except Exception as e:  # noqa: BLE001
                    idx = rec._last_for_layer.get(id(layer))
                    sub = rec.substitute(layer)
                    if idx is None or sub is None:
                        raise
                    rec.calls[idx]["decision"] = "error"
                    rec.calls[idx]["detail"] = _exc_text(e)
                    rec.calls[idx]["stage"] = "create_weights"
                    layer.quant_method = sub
                    return sub.create_weights(layer, *a, **k)
                finally:
                    rec._cw_depth -= 1

            create_weights._oracle = True
            cls.create_weights = create_weights

    # -- get_quant_config ------------------------------------------------
    def wrap_get_quant_config(self, modules, name="get_quant_config"):
        rec = self
        orig = getattr(modules[0], name)

        def get_quant_config(*a, **k):
            rec._in_get_quant_config = True
            try:
                return orig(*a, **k)
            finally:
                rec._in_get_quant_config = False

        for m in modules:
            setattr(m, name, get_quant_config)

    # -- results -----------------------------------------------------------
    def shape_fields(self, layer, kind) -> dict:
        """The layer's logical (unsplit) shape, read from the built layer object: linear
        `shape: [output_size, input_size]`, for merged layers `legs` (their `output_sizes`), for
        QKV layers `legs` q, k, v from the head counts and `heads: [heads, kv_heads]` (the object's
        `output_sizes` already repeat a KV head replicated across ranks); MoE `experts` and
        `shape: [intermediate, hidden]` of one expert.  Empty for other kinds."""
        if kind == "linear":
            out = {"shape": [layer.output_size, layer.input_size]}
            if hasattr(layer, "total_num_kv_heads"):
                q = layer.total_num_heads * layer.head_size
                kv = layer.total_num_kv_heads * layer.head_size
                v = layer.total_num_kv_heads * layer.v_head_size
                out = {"shape": [q + kv + v, layer.input_size], "legs": [q, kv, v],
                       "heads": [layer.total_num_heads, layer.total_num_kv_heads]}
            elif hasattr(layer, "output_sizes"):
                out["legs"] = list(layer.output_sizes)
            return out
        if kind == "moe":
            experts, intermediate, hidden = self.moe_shape(layer)
            return {"experts": experts, "shape": [intermediate, hidden]}
        return {}

    def finish(self, model, extra_models=()):
        """Returns (quant_calls, modules).  `extra_models` are (tag, model) pairs built after the
        main one (a speculative draft); their entries carry "model": tag."""
        paths = {}
        modules = []
        for tag, m in [(None, model)] + list(extra_models):
            if m is None:
                continue
            for name, mod in m.named_modules():
                paths.setdefault(id(mod), (tag, name))
                row = {"name": name, "class": type(mod).__name__}
                if tag:
                    row["model"] = tag
                modules.append(row)
        calls = []
        by_id = {id(layer): layer for layer in self.layers}
        for c in self.calls:
            lid = c.pop("_layer")
            tag_name = paths.get(lid)
            row = {"prefix": c["prefix"], "module": tag_name[1] if tag_name else None,
                   "layer_class": c["layer_class"], "kind": c["kind"]}
            row.update(self.shape_fields(by_id[lid], c["kind"]))
            row.update({"decision": c["decision"], "detail": c["detail"]})
            if c.get("stage"):
                row["stage"] = c["stage"]
            if tag_name and tag_name[0]:
                row["model"] = tag_name[0]
            calls.append(row)
        return calls, modules


def engine_exception(e: BaseException) -> BaseException:
    """The exception the engine raised.  vLLM's configs are pydantic dataclasses: an error raised
    in `__post_init__` reaches the caller wrapped in a `ValidationError` whose single entry carries
    the original exception; that one is recorded."""
    try:
        from pydantic import ValidationError
    except ImportError:
        return e
    if isinstance(e, ValidationError):
        errs = e.errors()
        if len(errs) == 1 and isinstance((errs[0].get("ctx") or {}).get("error"), BaseException):
            return errs[0]["ctx"]["error"]
    return e


def debug_traceback():
    """With ORACLE_DEBUG set, the traceback of an error recorded as a model's `error`."""
    import os
    import traceback

    if os.environ.get("ORACLE_DEBUG"):
        traceback.print_exc()


def log(*a):
    print(*a, file=sys.stderr, flush=True)
