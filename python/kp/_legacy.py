"""Kompute 0.9.0's Python names, kept as deprecated aliases of the current
ones so that programs written for the released 0.9.0 run unchanged. Each use
raises a :class:`DeprecationWarning` naming the current spelling.

==============================  ==========================================
0.9.0                           current
==============================  ==========================================
``kp.OpTensorSyncDevice``       :class:`kp.OpSyncDevice`
``kp.OpTensorSyncLocal``        :class:`kp.OpSyncLocal`
``kp.OpTensorCopy``             :class:`kp.OpCopy`
``kp.TensorTypes``              :class:`kp.MemoryTypes`
``mgr.tensor(..., tensor_type=)``  ``memory_type=`` (also ``tensor_t``)
``tensor.tensor_type()``        ``tensor.memory_type()``
``algorithm.get_tensors()``     ``algorithm.get_mem_objects()``
==============================  ==========================================
"""

import functools as _functools
import warnings as _warnings

from . import _kp


def _warn(old, new):
    # stacklevel 3: the caller of the deprecated name, not this module.
    _warnings.warn(f"{old} is Kompute 0.9.0's name: use {new}", DeprecationWarning, stacklevel=3)


class OpTensorSyncDevice(_kp.OpSyncDevice):
    """Kompute 0.9.0's name of :class:`OpSyncDevice` (deprecated)."""

    def __init__(self, tensors):
        _warn("kp.OpTensorSyncDevice", "kp.OpSyncDevice")
        super().__init__(tensors)


class OpTensorSyncLocal(_kp.OpSyncLocal):
    """Kompute 0.9.0's name of :class:`OpSyncLocal` (deprecated)."""

    def __init__(self, tensors):
        _warn("kp.OpTensorSyncLocal", "kp.OpSyncLocal")
        super().__init__(tensors)


class OpTensorCopy(_kp.OpCopy):
    """Kompute 0.9.0's name of :class:`OpCopy` (deprecated)."""

    def __init__(self, tensors):
        _warn("kp.OpTensorCopy", "kp.OpCopy")
        super().__init__(tensors)


MODULE_ALIASES = {"TensorTypes": ("kp.MemoryTypes", _kp.MemoryTypes)}
"""Kompute 0.9.0's module attributes, reached through kp.__getattr__ (which warns first):
name -> (current spelling, value)."""


def _accepting_tensor_type(method, name):
    """`method` of Manager, also taking 0.9.0's keyword tensor_type=."""

    @_functools.wraps(method)
    def wrapper(self, *args, tensor_type=None, **kwargs):
        if tensor_type is not None:
            _warn(f"Manager.{name}(tensor_type=)", "memory_type=")
            if "memory_type" in kwargs:
                raise TypeError(f"Manager.{name}() got both tensor_type and memory_type")
            kwargs["memory_type"] = tensor_type
        return method(self, *args, **kwargs)

    return wrapper


def _tensor_type(self):
    """Kompute 0.9.0's name of :meth:`memory_type` (deprecated)."""
    _warn("Tensor.tensor_type()", "Tensor.memory_type()")
    return self.memory_type()


def _get_tensors(self):
    """Kompute 0.9.0's name of :meth:`get_mem_objects` (deprecated)."""
    _warn("Algorithm.get_tensors()", "Algorithm.get_mem_objects()")
    return self.get_mem_objects()


def install():
    """Adds 0.9.0's methods and keywords to the classes of the extension."""
    for name in ("tensor", "tensor_t"):
        setattr(_kp.Manager, name, _accepting_tensor_type(getattr(_kp.Manager, name), name))
    _kp.Tensor.tensor_type = _tensor_type
    _kp.Algorithm.get_tensors = _get_tensors
