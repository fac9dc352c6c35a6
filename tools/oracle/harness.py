"""The worker-side base of the recorder: import-time stand-ins for compiled extensions, the
constructor wrapper, and the `Harness` every engine harness in record_cases.py derives from.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
import types

# ---------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------


class ConstructorNotRun(BaseException):
    """Raised by the constructor wrapper; BaseException so engine code that
    catches Exception cannot swallow it and change the control flow."""

    def __init__(self, cls_name: str, exc: BaseException):
        super().__init__(cls_name)
        self.cls_name = cls_name
        self.exc = exc


def _stub_module(name: str):
    """A stand-in for a compiled extension that is only needed at import time.
    Any attribute is a function that raises if it is ever called."""
    m = types.ModuleType(name)

    def _getattr(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def _missing(*a, **k):
            raise RuntimeError(f"{name}.{attr}: compiled extension not available")

        _missing.__name__ = attr
        return _missing

    m.__getattr__ = _getattr
    sys.modules[name] = m
    return m


def _install_stub_finder(roots: set[str], exclude: set[str]):
    import importlib.abc
    import importlib.machinery

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname in exclude or fullname.split(".")[0] not in roots:
                return None
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

        def create_module(self, spec):
            m = _stub_module(spec.name)
            m.__path__ = []
            return m

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Finder())


class Harness:
    """Engine-specific setup shared by both engines."""

    engine = ""
    method_base = None  # QuantizeMethodBase of the engine

    def wrap_constructors(self):
        base = self.method_base

        def wrap(cls):
            if cls.__dict__.get("_oracle_wrapped"):
                return
            orig = cls.__dict__.get("__init__")
            cls._oracle_wrapped = True
            if orig is None:
                return

            def __init__(self, *a, __orig=orig, **k):
                try:
                    __orig(self, *a, **k)
                except ConstructorNotRun:
                    raise
                except Exception as e:  # noqa: BLE001 - re-raised as ConstructorNotRun
                    raise ConstructorNotRun(type(self).__name__, e) from e

            cls.__init__ = __init__

        def walk(c):
            for s in c.__subclasses__():
                wrap(s)
                walk(s)

        walk(base)
        orig_init_subclass = base.__dict__.get("__init_subclass__")

        @classmethod
        def __init_subclass__(cls, **kw):
            if orig_init_subclass is not None:
                orig_init_subclass.__func__(cls, **kw)
            wrap(cls)

        base.__init_subclass__ = __init_subclass__

    # -- classification -------------------------------------------------
    def classify(self, method, layer, case, cfg) -> tuple[str, str]:
        if method is None:
            return "unquantized", "get_quant_method returned None"
        name = type(method).__name__
        if name.startswith("Unquantized"):
            return "unquantized", name
        return "quantized", self.describe(method, layer, case, cfg)

    def describe(self, method, layer, case, cfg) -> str:
        name = type(method).__name__
        extra = getattr(layer, "_oracle_detail", None)
        if extra:
            return f"{name}[{extra}]"
        return name


def _exc_text(e: BaseException) -> str:
    msg = str(e)
    if isinstance(e, KeyError):
        msg = repr(e.args[0]) if e.args else ""
    return f"{type(e).__name__}: {msg}"


_FOLDERS = tempfile.mkdtemp(prefix="oracle-cases-")  # one per worker, gone when it exits
atexit.register(shutil.rmtree, _FOLDERS, True)


def _write_folder(files: dict) -> str:
    folder = tempfile.mkdtemp(prefix="model-", dir=_FOLDERS)
    for fname, content in files.items():
        with open(os.path.join(folder, fname), "w") as f:
            json.dump(content, f)
    return folder
