"""Kompute: general purpose GPU compute over Vulkan, for any vendor's GPU.

The four concepts: a :class:`Manager` owns the device, :class:`Tensor` (and
:class:`Image`) objects own data, an :class:`Algorithm` wraps a compute shader, and a
:class:`Sequence` records operations (``OpSyncDevice``, ``OpAlgoDispatch``,
``OpSyncLocal``, ...) and submits them as one batch::

    import kp
    mgr = kp.Manager()
    a = mgr.tensor([2, 2, 2])
    b = mgr.tensor([1, 2, 3])
    out = mgr.tensor([0, 0, 0])
    algo = mgr.algorithm([a, b, out], kp.compile_source(GLSL))
    (mgr.sequence()
        .record(kp.OpSyncDevice([a, b]))
        .record(kp.OpAlgoDispatch(algo))
        .record(kp.OpSyncLocal([out]))
        .eval())
    print(out.data())

Tensors of a size without data: :meth:`Manager.zeros` (zero-filled on the
host and on the device) and :meth:`Manager.empty`. Operations can be written
in Python: subclass :class:`OpBase` (``record(command_buffer)``, ...) or
:class:`OpComposite`, which records other operations as one.

Logging: messages of the C++ side go to the standard :mod:`logging` logger
named ``"kp"``. Its threshold is set with :func:`set_log_level` (or
``logging.getLogger("kp").setLevel(...)``, which does the same); until then
the environment variable ``KOMPUTE_LOG_LEVEL`` (trace, debug, info, warn,
error, critical, off) decides, and the default is warn.

Errors: every error of the C++ side raises :class:`Error` (a RuntimeError),
or its subclasses :class:`DestroyedError` (an object used after it or its
Manager was destroyed) and :class:`VulkanError` (with ``.code`` and
``.result``), itself the base of :class:`OutOfMemoryError` (also a
MemoryError) and :class:`DeviceLostError`; bad Python arguments raise
TypeError or ValueError (complex or object arrays: TypeError).
"""

import enum as _enum
import logging as _logging

from . import _kp
from ._kp import (  # noqa: F401  (re-exported API)
    SHADERLOGISTICREGRESSION_COMP_SPV,
    SHADEROPMULT_COMP_SPV,
    Algorithm,
    DataTypes,
    DestroyedError,
    DeviceLostError,
    Error,
    Image,
    ImageTiling,
    Manager,
    Memory,
    MemoryAccess,
    MemoryTypes,
    OpAlgoDispatch,
    OpBase,
    OpCopy,
    OpMemoryBarrier,
    OpMult,
    OpSyncDevice,
    OpSyncLocal,
    OutOfMemoryError,
    Sequence,
    Shader,
    Tensor,
    VulkanError,
    WaitStrategy,
)
from ._kp import (  # noqa: F401  (the kernel library, re-exported)
    AttentionPath,
    BinaryOp,
    KernelOp,
    OpBinary,
    OpFma,
    OpAttention,
    OpGetRows,
    OpLayerNorm,
    OpMatMul,
    OpReduce,
    OpRMSNorm,
    OpRoPE,
    OpSetRows,
    OpSoftmax,
    OpSwiGLU,
    OpUnary,
    ReduceOp,
    RoPEMode,
    UnaryOp,
    WeightFormat,
    dequantize,
    quantize,
)

__version__: str = getattr(_kp, "__version__")
"""The version of Kompute (the CMake project version)."""

# Raised by the extension; shown as kp.Error, ... in tracebacks.
for _error in (Error, DestroyedError, VulkanError, OutOfMemoryError, DeviceLostError):
    _error.__module__ = "kp"
del _error

compile_source = Shader.compile_source

# Kompute 0.9.0's names (deprecated; each use warns): the operations here,
# kp.TensorTypes through __getattr__ below, and methods added to the classes.
from . import _legacy  # noqa: E402
from ._legacy import OpTensorCopy, OpTensorSyncDevice, OpTensorSyncLocal  # noqa: E402,F401
from ._operations import OpComposite  # noqa: E402

_legacy.install()


def __getattr__(name):
    alias = _legacy.MODULE_ALIASES.get(name)
    if alias is None:
        raise AttributeError(f"module 'kp' has no attribute {name!r}")
    current, value = alias
    import warnings

    warnings.warn(f"kp.{name} is Kompute 0.9.0's name: use {current}", DeprecationWarning,
                  stacklevel=2)
    return value


class AccessFlagBits(_enum.IntFlag):
    """Vulkan VkAccessFlagBits, for :class:`OpMemoryBarrier`."""

    none = 0
    indirect_command_read = 0x00000001
    index_read = 0x00000002
    vertex_attribute_read = 0x00000004
    uniform_read = 0x00000008
    input_attachment_read = 0x00000010
    shader_read = 0x00000020
    shader_write = 0x00000040
    color_attachment_read = 0x00000080
    color_attachment_write = 0x00000100
    depth_stencil_attachment_read = 0x00000200
    depth_stencil_attachment_write = 0x00000400
    transfer_read = 0x00000800
    transfer_write = 0x00001000
    host_read = 0x00002000
    host_write = 0x00004000
    memory_read = 0x00008000
    memory_write = 0x00010000


class PipelineStageFlagBits(_enum.IntFlag):
    """Vulkan VkPipelineStageFlagBits, for :class:`OpMemoryBarrier`."""

    none = 0
    top_of_pipe = 0x00000001
    draw_indirect = 0x00000002
    vertex_input = 0x00000004
    vertex_shader = 0x00000008
    tessellation_control_shader = 0x00000010
    tessellation_evaluation_shader = 0x00000020
    geometry_shader = 0x00000040
    fragment_shader = 0x00000080
    early_fragment_tests = 0x00000100
    late_fragment_tests = 0x00000200
    color_attachment_output = 0x00000400
    compute_shader = 0x00000800
    transfer = 0x00001000
    bottom_of_pipe = 0x00002000
    host = 0x00004000
    all_graphics = 0x00008000
    all_commands = 0x00010000


# --- Logging -------------------------------------------------------------------

TRACE = 5
"""Logging level of the C++ side's trace messages (below logging.DEBUG)."""
_logging.addLevelName(TRACE, "TRACE")

_LEVEL_NAMES = {
    "trace": TRACE,
    "debug": _logging.DEBUG,
    "info": _logging.INFO,
    "warn": _logging.WARNING,
    "warning": _logging.WARNING,
    "error": _logging.ERROR,
    "critical": _logging.CRITICAL,
    "off": _logging.CRITICAL + 10,
}


def _to_level(level):
    if isinstance(level, str):
        try:
            return _LEVEL_NAMES[level.lower()]
        except KeyError:
            raise ValueError(
                f"Unknown log level {level!r}: use one of {', '.join(_LEVEL_NAMES)} "
                "or a logging level number"
            ) from None
    if isinstance(level, _enum.Enum) or not hasattr(level, "__index__"):
        raise TypeError(f"A log level is a logging level number or a name, not {level!r}")
    return level.__index__()


# The C++ side's threshold before anyone sets one: KOMPUTE_LOG_LEVEL, or warn.
_DEFAULT_NATIVE_LEVEL = _kp._get_native_log_level()


def _native_level_setter(logger_class):
    """A subclass of the "kp" logger's class whose setLevel also sets the C++
    side's threshold, so that messages below it are not even formatted.
    NOTSET restores the threshold from KOMPUTE_LOG_LEVEL (default warn)."""

    def setLevel(self, level):  # noqa: N802 (logging's name)
        logger_class.setLevel(self, level)
        if self.level == _logging.NOTSET:
            _kp._set_native_log_level(_DEFAULT_NATIVE_LEVEL)
        else:
            _kp._set_native_log_level(self.level)

    return type("KomputeLogger", (logger_class,), {"setLevel": setLevel,
                                                   "__doc__": _native_level_setter.__doc__})


logger = _logging.getLogger("kp")
"""The logger that receives the C++ side's messages."""
if not getattr(logger.__class__, "_kp_native_level", False):
    logger.__class__ = _native_level_setter(logger.__class__)
    setattr(logger.__class__, "_kp_native_level", True)
if logger.level != _logging.NOTSET:
    _kp._set_native_log_level(logger.level)


def set_log_level(level):
    """Sets the level of Kompute's logging, on the C++ side and on the "kp"
    logger: a logging level (logging.DEBUG, kp.TRACE, ...) or a name
    ("trace", "debug", "info", "warn", "error", "critical", "off")."""
    logger.setLevel(_to_level(level))


def get_log_level():
    """The C++ side's logging threshold, as a logging level (60 means off)."""
    return _kp._get_native_log_level()


def flush_log():
    """Hands C++ log messages still queued to the "kp" logger. Messages are
    delivered when each kp call returns; this is only needed for messages
    logged outside any call (by another thread, or while an object was
    freed)."""
    _kp._flush_log()


def _at_exit():
    _kp._release_operations_at_exit()
    _kp._flush_log()


import atexit as _atexit  # noqa: E402

_atexit.register(_at_exit)

# Enum values at module level, as upstream exports them (kp.float,
# kp.device, ...). Note that `from kp import *` therefore shadows the builtins
# bool, int and float, as upstream's module does. Defined last, so that the
# builtins keep their meaning everywhere above.
device = MemoryTypes.device
host = MemoryTypes.host
storage = MemoryTypes.storage
deviceAndHost = MemoryTypes.deviceAndHost
bool = DataTypes.bool  # noqa: A001
int = DataTypes.int  # noqa: A001
uint = DataTypes.uint
float = DataTypes.float  # noqa: A001
double = DataTypes.double
custom = DataTypes.custom
short = DataTypes.short
ushort = DataTypes.ushort
char = DataTypes.char
uchar = DataTypes.uchar
long = DataTypes.long
ulong = DataTypes.ulong
half = DataTypes.half
bfloat16 = DataTypes.bfloat16

__all__ = [
    "Algorithm",
    "AccessFlagBits",
    "AttentionPath",
    "BinaryOp",
    "KernelOp",
    "OpBinary",
    "OpFma",
    "OpAttention",
    "OpLayerNorm",
    "OpReduce",
    "OpRMSNorm",
    "OpRoPE",
    "OpSetRows",
    "OpSoftmax",
    "OpSwiGLU",
    "OpUnary",
    "ReduceOp",
    "RoPEMode",
    "UnaryOp",
    "WeightFormat",
    "DataTypes",
    "DestroyedError",
    "Error",
    "Image",
    "ImageTiling",
    "Manager",
    "Memory",
    "MemoryAccess",
    "MemoryTypes",
    "OpAlgoDispatch",
    "OpBase",
    "OpComposite",
    "OpCopy",
    "OpMemoryBarrier",
    "OpMult",
    "OpSyncDevice",
    "OpSyncLocal",
    "PipelineStageFlagBits",
    "SHADERLOGISTICREGRESSION_COMP_SPV",
    "SHADEROPMULT_COMP_SPV",
    "Sequence",
    "Shader",
    "TRACE",
    "Tensor",
    "VulkanError",
    "WaitStrategy",
    "compile_source",
    "flush_log",
    "get_log_level",
    "logger",
    "set_log_level",
    "bfloat16",
    "bool",
    "char",
    "custom",
    "device",
    "deviceAndHost",
    "double",
    "float",
    "half",
    "host",
    "int",
    "long",
    "short",
    "storage",
    "uchar",
    "uint",
    "ulong",
    "ushort",
]
