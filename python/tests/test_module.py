"""The module itself: names, enums, version, docstrings, stubs."""

import ast
import inspect
import pathlib
import re

import pytest

import kp

from conftest import REPO_ROOT

# Upstream Kompute's Python names (its python/src/main.cpp), plus OpMemoryBarrier.
UPSTREAM_CLASSES = [
    "Manager", "Sequence", "Memory", "Tensor", "Algorithm", "OpBase", "OpSyncDevice",
    "OpSyncLocal", "OpCopy", "OpAlgoDispatch", "OpMult", "OpMemoryBarrier", "DataTypes",
    "MemoryTypes", "Shader",
]


def test_upstream_names_exist():
    for name in UPSTREAM_CLASSES:
        assert inspect.isclass(getattr(kp, name)), name
    assert kp.compile_source is kp.Shader.compile_source


def test_enum_values_match_the_cpp_enums():
    assert [(m.name, int(m)) for m in kp.MemoryTypes] == [
        ("device", 0), ("host", 1), ("storage", 2), ("deviceAndHost", 3)]
    assert [(m.name, int(m)) for m in kp.DataTypes] == [
        ("bool", 0), ("int", 1), ("uint", 2), ("float", 3), ("double", 4), ("custom", 5),
        ("short", 6), ("ushort", 7), ("char", 8), ("uchar", 9), ("long", 10), ("ulong", 11),
        ("half", 12), ("bfloat16", 13)]


def test_enum_values_are_exported_at_module_level():
    for member in kp.DataTypes:
        assert getattr(kp, member.name) is member
    for member in kp.MemoryTypes:
        assert getattr(kp, member.name) is member


def test_version_comes_from_the_cmake_project():
    cmake = (REPO_ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*kompute\s+VERSION\s+([0-9.]+)", cmake)
    assert match, "project(kompute VERSION ...) not found"
    assert kp.__version__ == match.group(1)
    assert kp._kp.__version__ == kp.__version__


def test_exception_hierarchy():
    assert issubclass(kp.Error, RuntimeError)
    assert issubclass(kp.DestroyedError, kp.Error)
    assert issubclass(kp.VulkanError, kp.Error)
    assert kp.Error.__module__ == "kp"


def test_builtin_shaders_are_spirv_bytes():
    for spirv in (kp.SHADEROPMULT_COMP_SPV, kp.SHADERLOGISTICREGRESSION_COMP_SPV):
        assert isinstance(spirv, bytes)
        assert len(spirv) % 4 == 0
        assert spirv[:4] == b"\x03\x02\x23\x07"


def test_compile_source_returns_spirv_bytes():
    spirv = kp.compile_source("#version 450\nlayout(local_size_x=1) in;\nvoid main() {}\n")
    assert isinstance(spirv, bytes)
    assert spirv[:4] == b"\x03\x02\x23\x07"
    assert kp.Shader.has_compiler()


def _public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__len__", "__enter__",
                                                 "__exit__", "__repr__"):
            continue
        if callable(member) or isinstance(member, (staticmethod, classmethod)):
            yield name, getattr(cls, name)


def _docstring_text(obj):
    """The docstring without nanobind's leading signature lines."""
    doc = inspect.getdoc(obj) or ""
    lines = [line for line in doc.splitlines()
             if not re.match(r"^\w+\(.*\)( -> .*)?$", line.strip())]
    return "\n".join(lines).strip()


@pytest.mark.parametrize("name", UPSTREAM_CLASSES + ["Error", "DestroyedError", "VulkanError",
                                                     "AccessFlagBits", "PipelineStageFlagBits",
                                                     "OpComposite", "MemoryAccess"])
def test_every_class_and_method_has_a_docstring(name):
    cls = getattr(kp, name)
    assert _docstring_text(cls), f"kp.{name} has no docstring"
    if issubclass(cls, BaseException) or isinstance(cls, type) and issubclass(cls, int):
        return
    for method_name, method in _public_members(cls):
        assert _docstring_text(method), f"kp.{name}.{method_name} has no docstring"


def test_module_level_functions_have_docstrings():
    for name in ("set_log_level", "get_log_level", "flush_log", "compile_source"):
        assert _docstring_text(getattr(kp, name)), name
    assert kp.__doc__


def test_type_stubs_are_shipped():
    package = pathlib.Path(kp.__file__).parent
    extension = pathlib.Path(kp._kp.__file__)
    stub = extension.parent / "_kp.pyi"
    assert stub.is_file(), f"no stub next to {extension}"
    assert (package / "py.typed").is_file()
    tree = ast.parse(stub.read_text())
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    for name in UPSTREAM_CLASSES + ["Error", "DestroyedError", "VulkanError", "MemoryAccess"]:
        assert name in classes, f"{name} missing from the stub"
    manager = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Manager")
    methods = {n.name for n in manager.body if isinstance(n, ast.FunctionDef)}
    assert {"tensor", "tensor_t", "algorithm", "sequence", "destroy", "list_devices",
            "get_device_properties", "memory_stats", "zeros", "empty"} <= methods
    op_base = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "OpBase")
    assert {"record", "pre_eval", "post_eval", "needs_rerecord"} <= {
        n.name for n in op_base.body if isinstance(n, ast.FunctionDef)}


def test_all_lists_public_names():
    for name in kp.__all__:
        assert hasattr(kp, name), name
