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
    OpRoPECache,
    OpSetRows,
    OpSoftmax,
    OpSwiGLU,
    OpUnary,
    ReduceOp,
    RoPECacheParams,
    RoPEMode,
    UnaryOp,
    WeightFormat,
    dequantize,
    group_blocks,
    quantize,
    quantized_row_words,
)

__version__: str = getattr(_kp, "__version__")
"""The version of Kompute (the CMake project version)."""

# Raised by the extension; shown as kp.Error, ... in tracebacks.
for _error in (Error, DestroyedError, VulkanError, OutOfMemoryError, DeviceLostError):
    _error.__module__ = "kp"
del _error

compile_source = Shader.compile_source
"""Shader.compile_source under upstream's module-level name: GLSL compute-shader source to
SPIR-V bytes."""

# Kompute 0.9.0's names (deprecated; each use warns): the operations here,
# kp.TensorTypes through __getattr__ below, and methods added to the classes.
from . import _legacy  # noqa: E402
from ._legacy import OpTensorCopy, OpTensorSyncDevice, OpTensorSyncLocal  # noqa: E402,F401
from ._operations import OpComposite  # noqa: E402

_legacy.install()


def __getattr__(name):
    """Kompute 0.9.0's module attributes (kp.TensorTypes): the current value, after a
    DeprecationWarning naming the current spelling; AttributeError for any other name."""
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
    """No access (VK_ACCESS_NONE)."""
    indirect_command_read = 0x00000001
    """VK_ACCESS_INDIRECT_COMMAND_READ_BIT: reads of indirect command data."""
    index_read = 0x00000002
    """VK_ACCESS_INDEX_READ_BIT: reads of index buffers."""
    vertex_attribute_read = 0x00000004
    """VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT: reads of vertex buffers."""
    uniform_read = 0x00000008
    """VK_ACCESS_UNIFORM_READ_BIT: reads of uniform buffers."""
    input_attachment_read = 0x00000010
    """VK_ACCESS_INPUT_ATTACHMENT_READ_BIT: reads of input attachments."""
    shader_read = 0x00000020
    """VK_ACCESS_SHADER_READ_BIT: reads of storage buffers and images by shaders."""
    shader_write = 0x00000040
    """VK_ACCESS_SHADER_WRITE_BIT: writes of storage buffers and images by shaders."""
    color_attachment_read = 0x00000080
    """VK_ACCESS_COLOR_ATTACHMENT_READ_BIT: reads of color attachments."""
    color_attachment_write = 0x00000100
    """VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT: writes of color attachments."""
    depth_stencil_attachment_read = 0x00000200
    """VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT: reads of depth/stencil attachments."""
    depth_stencil_attachment_write = 0x00000400
    """VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT: writes of depth/stencil attachments."""
    transfer_read = 0x00000800
    """VK_ACCESS_TRANSFER_READ_BIT: reads by copy commands."""
    transfer_write = 0x00001000
    """VK_ACCESS_TRANSFER_WRITE_BIT: writes by copy and fill commands."""
    host_read = 0x00002000
    """VK_ACCESS_HOST_READ_BIT: reads by the host (through a host view)."""
    host_write = 0x00004000
    """VK_ACCESS_HOST_WRITE_BIT: writes by the host (through a host view)."""
    memory_read = 0x00008000
    """VK_ACCESS_MEMORY_READ_BIT: every kind of read."""
    memory_write = 0x00010000
    """VK_ACCESS_MEMORY_WRITE_BIT: every kind of write."""


class PipelineStageFlagBits(_enum.IntFlag):
    """Vulkan VkPipelineStageFlagBits, for :class:`OpMemoryBarrier`."""

    none = 0
    """No stage (VK_PIPELINE_STAGE_NONE)."""
    top_of_pipe = 0x00000001
    """VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT: the start of the commands."""
    draw_indirect = 0x00000002
    """VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT: where indirect command data is read."""
    vertex_input = 0x00000004
    """VK_PIPELINE_STAGE_VERTEX_INPUT_BIT: where vertex and index buffers are read."""
    vertex_shader = 0x00000008
    """VK_PIPELINE_STAGE_VERTEX_SHADER_BIT."""
    tessellation_control_shader = 0x00000010
    """VK_PIPELINE_STAGE_TESSELLATION_CONTROL_SHADER_BIT."""
    tessellation_evaluation_shader = 0x00000020
    """VK_PIPELINE_STAGE_TESSELLATION_EVALUATION_SHADER_BIT."""
    geometry_shader = 0x00000040
    """VK_PIPELINE_STAGE_GEOMETRY_SHADER_BIT."""
    fragment_shader = 0x00000080
    """VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT."""
    early_fragment_tests = 0x00000100
    """VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT."""
    late_fragment_tests = 0x00000200
    """VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT."""
    color_attachment_output = 0x00000400
    """VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT."""
    compute_shader = 0x00000800
    """VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT: compute shaders (dispatches)."""
    transfer = 0x00001000
    """VK_PIPELINE_STAGE_TRANSFER_BIT: copy and fill commands."""
    bottom_of_pipe = 0x00002000
    """VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT: the end of the commands."""
    host = 0x00004000
    """VK_PIPELINE_STAGE_HOST_BIT: host reads and writes of memory."""
    all_graphics = 0x00008000
    """VK_PIPELINE_STAGE_ALL_GRAPHICS_BIT: every graphics stage."""
    all_commands = 0x00010000
    """VK_PIPELINE_STAGE_ALL_COMMANDS_BIT: every command."""


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
"""MemoryTypes.device, under upstream's module-level name."""
host = MemoryTypes.host
"""MemoryTypes.host, under upstream's module-level name."""
storage = MemoryTypes.storage
"""MemoryTypes.storage, under upstream's module-level name."""
deviceAndHost = MemoryTypes.deviceAndHost
"""MemoryTypes.deviceAndHost, under upstream's module-level name."""
bool = DataTypes.bool  # noqa: A001
"""DataTypes.bool, under upstream's module-level name."""
int = DataTypes.int  # noqa: A001
"""DataTypes.int, under upstream's module-level name."""
uint = DataTypes.uint
"""DataTypes.uint, under upstream's module-level name."""
float = DataTypes.float  # noqa: A001
"""DataTypes.float, under upstream's module-level name."""
double = DataTypes.double
"""DataTypes.double, under upstream's module-level name."""
custom = DataTypes.custom
"""DataTypes.custom, under upstream's module-level name."""
short = DataTypes.short
"""DataTypes.short, under upstream's module-level name."""
ushort = DataTypes.ushort
"""DataTypes.ushort, under upstream's module-level name."""
char = DataTypes.char
"""DataTypes.char, under upstream's module-level name."""
uchar = DataTypes.uchar
"""DataTypes.uchar, under upstream's module-level name."""
long = DataTypes.long
"""DataTypes.long, under upstream's module-level name."""
ulong = DataTypes.ulong
"""DataTypes.ulong, under upstream's module-level name."""
half = DataTypes.half
"""DataTypes.half, under upstream's module-level name."""
bfloat16 = DataTypes.bfloat16
"""DataTypes.bfloat16, under upstream's module-level name."""

__all__ = [
    "Algorithm",
    "AccessFlagBits",
    "AttentionPath",
    "BinaryOp",
    "KernelOp",
    "OpBinary",
    "OpFma",
    "OpAttention",
    "OpGetRows",
    "OpLayerNorm",
    "OpMatMul",
    "OpReduce",
    "OpRMSNorm",
    "OpRoPE",
    "OpRoPECache",
    "OpSetRows",
    "OpSoftmax",
    "OpSwiGLU",
    "OpUnary",
    "ReduceOp",
    "RoPECacheParams",
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
    "dequantize",
    "flush_log",
    "get_log_level",
    "group_blocks",
    "logger",
    "quantize",
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
