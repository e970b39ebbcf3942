#!/usr/bin/env bash
# Installs the Debian packages Kompute needs to build, test and run (on a real
# GPU driver, or on Mesa's lavapipe CPU driver where there is no GPU).
# Idempotent: when everything is already installed it only asks dpkg, never apt.
#   --docs  also doxygen, for scripts/docs.sh (the API reference and guide)
set -euo pipefail

PACKAGES=(
    build-essential cmake pkg-config           # toolchain
    libvulkan-dev                              # Vulkan loader, headers, Vulkan-Hpp
    mesa-vulkan-drivers                        # lavapipe (CPU) and Mesa GPU drivers
    vulkan-validationlayers vulkan-tools       # validation in tests; vulkaninfo
    glslang-tools libshaderc-dev spirv-tools   # shader compilation and SPIR-V checks
    libgtest-dev libbenchmark-dev              # test and benchmark frameworks
    python3 python3-venv python3-pip           # the Python module kp and its tests
)
if [ "${1:-}" = "--docs" ]; then
    PACKAGES+=(doxygen)
elif [ $# -gt 0 ]; then
    echo "usage: install-deps.sh [--docs]" >&2
    exit 2
fi

# One dpkg-query for all of them; packages it does not know are missing.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for package in "${PACKAGES[@]}"; do
    if ! grep -qE "^${package} ii" <<<"$installed"; then
        missing+=("$package")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages already installed"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: missing packages (${missing[*]}) and not root, and sudo is not installed" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
