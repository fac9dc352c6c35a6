"""quantpath: from a quantized Hugging Face model folder to a Linear forward on the right kernel.

A thin layer over quantpath's pipeline (the same one the ``quantpath`` command runs):

>>> import quantpath
>>> plan = quantpath.plan("examples/llama-tiny-fp8")          # what `plan --json` prints
>>> layer = quantpath.load_layer("examples/llama-tiny-fp8", "model.layers.0.mlp.down_proj")
>>> layer.parameters["weight"].dtype                             # float8_e4m3fn, zero-copy
>>> y = layer.linear.forward(x)                                  # x: float32 or bfloat16 [M, K]

A folder may be a model folder, a Hugging Face cache folder (``…/hub/models--org--name``) or a repo
id (``org/name``) in the local cache; nothing is downloaded. Errors raise :class:`Error` (a
``ValueError``) with the CLI's message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from os import PathLike, fspath
from typing import Any, Dict, Optional, Union

import ml_dtypes
import numpy as np

from . import _quantpath
from ._quantpath import Error

__version__: str = _quantpath.__version__
__all__ = ["Error", "Layer", "Linear", "check", "explain", "load_layer", "plan", "__version__"]

Folder = Union[str, "PathLike[str]"]

# How each element type of a loaded tensor is viewed (docs/python.md lists them).
_VIEWS = {
    "bf16": ml_dtypes.bfloat16,
    "fp16": np.float16,
    "fp32": np.float32,
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "e8m0": ml_dtypes.float8_e8m0fnu,
    "int8": np.int8,
    "uint8": np.uint8,
    "int32": np.int32,
}


def _args(
    engine: str = "native",
    quantization: Optional[str] = None,
    online: Optional[str] = None,
    device: str = "cpu",
    dtype: str = "auto",
    tp: int = 1,
    speculative: bool = False,
    modelslim_packing: Optional[str] = None,
    int8_activations: bool = False,
    platform: str = "cuda",
) -> _quantpath.OpenArgs:
    args = _quantpath.OpenArgs()
    args.engine = engine
    args.quantization = quantization or ""
    args.online = online or ""
    args.device = device
    args.dtype = dtype
    args.tp = tp
    args.speculative = speculative
    args.platform = platform
    args.modelslim_packing = modelslim_packing or ""
    args.int8_activations = int8_activations
    return args


def plan(
    folder: Folder,
    *,
    engine: str = "native",
    quantization: Optional[str] = None,
    online: Optional[str] = None,
    device: str = "cpu",
    dtype: str = "auto",
    tp: int = 1,
    speculative: bool = False,
    modelslim_packing: Optional[str] = None,
    int8_activations: bool = False,
    platform: str = "cuda",
) -> Dict[str, Any]:
    """Every layer site decided: the object ``quantpath plan FOLDER --json`` prints."""
    args = _args(
        engine, quantization, online, device, dtype, tp, speculative, modelslim_packing,
        int8_activations, platform,
    )
    return json.loads(_quantpath.plan_json(fspath(folder), args))


def explain(
    folder: Folder,
    layer: str,
    *,
    engine: str = "native",
    quantization: Optional[str] = None,
    online: Optional[str] = None,
    dtype: str = "auto",
    tp: int = 1,
    speculative: bool = False,
    platform: str = "cuda",
) -> Dict[str, Any]:
    """Every rule tried for one layer: the object ``quantpath explain FOLDER LAYER --json`` prints."""
    args = _args(engine, quantization, online, "cpu", dtype, tp, speculative, platform=platform)
    return json.loads(_quantpath.explain_json(fspath(folder), layer, args))


def check(
    folder: Folder,
    *,
    engine: str = "native",
    quantization: Optional[str] = None,
    tp: int = 1,
    modelslim_packing: Optional[str] = None,
    platform: str = "cuda",
    headers_only: bool = False,
    deep: bool = False,
) -> Dict[str, Any]:
    """The checkpoint's headers and values held against its config: ``quantpath check FOLDER
    --json`` (``headers_only``: ``--headers-only``; ``deep``: ``--deep``)."""
    if headers_only and deep:
        raise ValueError("check: headers_only and deep exclude each other")
    args = _args(engine, quantization, tp=tp, modelslim_packing=modelslim_packing, platform=platform)
    reads = "headers" if headers_only else "every-byte" if deep else "values"
    return json.loads(_quantpath.check_json(fspath(folder), args, reads))


class Linear:
    """The layer's Linear on the kernel the dispatcher picks."""

    def __init__(self, layer: _quantpath.LoadedLayer):
        self._layer = layer

    @property
    def in_features(self) -> int:
        return self._layer.in_features

    @property
    def out_features(self) -> int:
        return self._layer.out_features

    def kernel(self, m: int, input: str = "fp32") -> str:
        """The kernel's name for ``m`` rows of ``input`` (``"fp32"`` or ``"bf16"``)."""
        return self._layer.kernel(m, input)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """y = x · Wᵀ (+ bias) as float32; x is float32 or ml_dtypes.bfloat16, [M, K] or [K]."""
        x = np.asarray(x)
        if x.ndim not in (1, 2):
            raise ValueError(f"x: expected [M, {self.in_features}] or [{self.in_features}], got shape {x.shape}")
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        if rows.shape[0] == 0 and rows.shape[1] == self.in_features:
            return np.zeros((0, self.out_features), np.float32)  # no rows: no kernel to run
        if rows.dtype == np.float32:
            y = self._layer.forward_fp32(np.ascontiguousarray(rows))
        elif rows.dtype == ml_dtypes.bfloat16:
            y = self._layer.forward_bf16(np.ascontiguousarray(rows).view(np.uint16))
        else:
            raise TypeError(f"x: expected float32 or bfloat16, got {rows.dtype}")
        return y[0] if x.ndim == 1 else y


@dataclass(frozen=True)
class Layer:
    """One loaded layer: its site, spec and canonical parameters (docs/python.md)."""

    path: str
    spec_id: str
    scheme: str
    parameters: Dict[str, np.ndarray]
    linear: Linear


def _view(element: str, rows: int, cols: int, data: np.ndarray) -> np.ndarray:
    if element == "packed":
        return data  # uint8 [rows, row bytes]: codes packed along each row, low bits first
    return data.view(_VIEWS[element]).reshape(rows, cols)


def load_layer(
    folder: Folder,
    path: str,
    *,
    tp: int = 1,
    rank: int = 0,
    engine: str = "native",
    quantization: Optional[str] = None,
    online: Optional[str] = None,
    device: str = "cpu",
    dtype: str = "auto",
    modelslim_packing: Optional[str] = None,
    int8_activations: bool = False,
) -> Layer:
    """Loads rank ``rank`` of ``tp`` of one layer through its spec, as ``quantpath run`` does."""
    args = _args(
        engine, quantization, online, device, dtype, tp, False, modelslim_packing, int8_activations
    )
    loaded = _quantpath.load_layer(fspath(folder), path, rank, args)
    parameters = {
        slot: _view(element, rows, cols, data)
        for slot, element, rows, cols, data in loaded.parameters()
    }
    return Layer(loaded.path, loaded.spec_id, loaded.scheme, parameters, Linear(loaded))
