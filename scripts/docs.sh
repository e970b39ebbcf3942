#!/usr/bin/env bash
# Builds Kompute's documentation site into build/docs/html/ with Doxygen:
# the user guide (docs/guide/*.md, index.md is the front page, plus the
# sections of README.md, python/README.md and docs/performance.md as pages,
# made by scripts/readme-pages.py), the C++ API reference from the public
# headers' doc comments (include/kompute/ and the LLM runner's
# llm/include/), and the Python API reference from the kp package's
# docstrings and type stubs (kp/_kp.pyi, generated from the compiled module,
# so it always matches it).
#
# Doxygen's errors (a broken reference, bad markup) fail the build. Public
# names without a doc comment are counted and listed in
# build/docs/undocumented.log; DOCS_STRICT=1 fails on them too.
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
if [ -z "$(find "${package_dirs[@]}" -maxdepth 1 -name _kp.pyi)" ]; then
    echo "docs.sh: the kp package (${package_dirs[*]}) has no _kp.pyi (the stub the kp build generates)" >&2
    exit 1
fi

# The Python sources, in a folder named as readers import them (kp), and
# the README pages.
python_src=$DOCS_DIR/kp
pages=$DOCS_DIR/pages
rm -rf "$python_src" "$pages" "$DOCS_DIR/html"
mkdir -p "$python_src"
for dir in "${package_dirs[@]}"; do
    (cd "$dir" && find . \( -name '*.py' -o -name '*.pyi' \) -print0 |
        xargs -0 -I{} cp --parents {} "$python_src/")
done
python3 scripts/readme-pages.py "$pages"

version=$(sed -nE 's/^ *VERSION ([0-9.]+)$/\1/p' CMakeLists.txt | head -n 1)
warnings=$DOCS_DIR/warnings.log
echo "=== doxygen (Kompute $version) -> $DOCS_DIR/html"
{
    cat docs/Doxyfile
    echo "PROJECT_NUMBER = $version"
    echo "OUTPUT_DIRECTORY = $DOCS_DIR"
    echo "INPUT = docs/guide $pages include/kompute llm/include/kompute/llm $python_src"
    echo "STRIP_FROM_PATH = $ROOT $DOCS_DIR"
    echo "STRIP_FROM_INC_PATH = $ROOT/include $ROOT/llm/include"
    echo "EXAMPLE_PATH = examples"
    echo "WARN_LOGFILE = $warnings"
} | doxygen -

undocumented=$DOCS_DIR/undocumented.log
grep -E 'is not documented|not documented\.$' "$warnings" >"$undocumented" || true
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
