#!/usr/bin/env bash
# Builds Kompute's documentation site into build/docs/html/ with Doxygen:
# the user guide (docs/guide/*.md, index.md is the front page, plus the
# sections of README.md, python/README.md and docs/performance.md as pages,
# made by scripts/readme-pages.py), the C++ API reference from the public
# headers' doc comments (include/kompute/ and the LLM runner's
# llm/include/), and the Python API reference from the kp package's
# docstrings and type stubs (kp/_kp.pyi and kp/_kp_llm.pyi, generated from
# the compiled module, so they always match it). In the reference the
# package is python::kp, apart from the C++ namespace kp; attribute
# docstrings reach Doxygen through scripts/docs-python-filter.py.
#
# Doxygen's errors (a broken reference, bad markup) fail the build. Public
# names without a doc comment are counted and listed in
# build/docs/undocumented.log; DOCS_STRICT=1 (what CI runs) fails on them
# too. Names that are not API are kept out of the reference on purpose, and
# not counted: the namespaces detail and internal (docs/Doxyfile), members
# in \cond INTERNAL blocks (constructors that take the library's internal
# device context, protected members of classes that only the library
# derives from), and the Python package's private (_-prefixed) names.
#
# Needs doxygen (Debian 12: `apt-get install doxygen`, or
# `scripts/install-deps.sh --docs`). The Python part is read from an
# installed kp package:
#   PYTHON   an interpreter that has kp installed (scripts/test-python.sh's
#            venv, say). Without it, or if it lacks kp, the script builds kp
#            in a virtual environment of its own (build/docs/venv: pip fetches
#            scikit-build-core and nanobind; many minutes on two cores).
#   DOCS_DIR where to build (default: build/docs)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DOCS_DIR=${DOCS_DIR:-$ROOT/build/docs}

if ! command -v doxygen >/dev/null 2>&1; then
    echo "docs.sh: doxygen is not installed; on Debian 12: apt-get install doxygen" \
        "(or scripts/install-deps.sh --docs)" >&2
    exit 1
fi

# Where an interpreter has the kp package, without importing it (importing
# the extension would need a Vulkan loader).
kp_package_dir() {
    "$1" -c 'import importlib.util, sys
spec = importlib.util.find_spec("kp")
sys.exit(1) if spec is None else print("\n".join(spec.submodule_search_locations))' 2>/dev/null
}

package=""
if [ -n "${PYTHON:-}" ]; then
    package=$(kp_package_dir "$PYTHON" || true)
    [ -n "$package" ] || echo "docs.sh: $PYTHON has no kp package; building one"
fi
if [ -z "$package" ]; then
    venv=$DOCS_DIR/venv
    if [ ! -x "$venv/bin/python" ] || [ -z "$(kp_package_dir "$venv/bin/python" || true)" ]; then
        echo "=== building kp in $venv (pip install .)"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install -q "$ROOT"
    fi
    package=$(kp_package_dir "$venv/bin/python")
fi
# (An editable install has two folders: the sources and the built module.)
mapfile -t package_dirs <<<"$package"
for stub in _kp.pyi _kp_llm.pyi; do
    if [ -z "$(find "${package_dirs[@]}" -maxdepth 1 -name "$stub")" ]; then
        echo "docs.sh: the kp package (${package_dirs[*]}) has no $stub (a stub the kp build" \
            "generates: install kp from this tree again)" >&2
        exit 1
    fi
done

# The Python sources, laid out as Python sees them: the package kp inside a
# package python (which keeps it apart from the C++ namespace kp, and whose
# lower-case name Doxygen does not link wherever prose says "Python"), with
# the compiled module's stubs as the package kp._kp and its submodule llm
# (as .py files: Doxygen reads no __init__.pyi). Then the README pages.
python_root=$DOCS_DIR/python
python_src=$python_root/python/kp
pages=$DOCS_DIR/pages
rm -rf "$python_root" "$pages" "$DOCS_DIR/html"
mkdir -p "$python_src/_kp"
for dir in "${package_dirs[@]}"; do
    (cd "$dir" && find . -name '*.py' -not -path '*/__pycache__/*' -print0 |
        xargs -0 -I{} cp --parents {} "$python_src/")
    [ ! -f "$dir/_kp.pyi" ] || cp "$dir/_kp.pyi" "$python_src/_kp/__init__.py"
    [ ! -f "$dir/_kp_llm.pyi" ] || cp "$dir/_kp_llm.pyi" "$python_src/_kp/llm.py"
done
cat >"$python_root/python/__init__.py" <<'END'
"""The Python module kp (import kp), shown here as python::kp to keep it
apart from the C++ namespace kp: its reference, from the package's
docstrings and the stubs of its compiled part. The classes are defined in
the compiled module kp._kp (and kp._kp.llm) and used through kp: kp.Manager
is kp._kp.Manager, kp.llm.Model is kp._kp.llm.Model. The module's own guide
is the page "kp — Kompute for Python" (python/README.md)."""
END
python3 scripts/readme-pages.py "$pages"

version=$(sed -nE 's/^ *VERSION ([0-9.]+)$/\1/p' CMakeLists.txt | head -n 1)
warnings=$DOCS_DIR/warnings.log
echo "=== doxygen (Kompute $version) -> $DOCS_DIR/html"
{
    cat docs/Doxyfile
    echo "PROJECT_NUMBER = $version"
    echo "OUTPUT_DIRECTORY = $DOCS_DIR"
    echo "INPUT = docs/guide $pages include/kompute llm/include/kompute/llm $python_root"
    echo "STRIP_FROM_PATH = $ROOT $python_root $DOCS_DIR"
    echo "STRIP_FROM_INC_PATH = $ROOT/include $ROOT/llm/include"
    echo "EXAMPLE_PATH = examples"
    echo "FILTER_PATTERNS = *.py=$ROOT/scripts/docs-python-filter.py *.pyi=$ROOT/scripts/docs-python-filter.py"
    echo "WARN_LOGFILE = $warnings"
} | doxygen -

undocumented=$DOCS_DIR/undocumented.log
# (Doxygen repeats a member's warning for each class that inherits it.)
grep -E 'is not documented|not documented\.$' "$warnings" | sort -u >"$undocumented" || true
errors=$(grep -vE 'is not documented|not documented\.$' "$warnings" | grep -c 'warning:' || true)
if [ "$errors" -gt 0 ]; then
    grep -vE 'is not documented|not documented\.$' "$warnings" >&2
    echo "docs.sh: $errors Doxygen error(s), see above" >&2
    exit 1
fi
count=$(wc -l <"$undocumented")
echo "docs.sh: built $DOCS_DIR/html/index.html ($count public name(s) without a doc comment: $undocumented)"
if [ "${DOCS_STRICT:-0}" = 1 ] && [ "$count" -gt 0 ]; then
    echo "docs.sh: DOCS_STRICT=1 and $count undocumented name(s)" >&2
    exit 1
fi
