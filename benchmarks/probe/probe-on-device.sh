#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .gl,
# .gl-extra and the bundle folder carried (GPU_BUNDLE, default
# .gpu-bundle-matmul; made by benchmarks/probe/bundle-probe.sh): the kernel
# probe once with the validation layer at small sizes, once at full size,
# then the CUDA references (matmul.cu, built here with nvcc and cuBLAS while
# the probe runs). Logs under $OUT; the reply's tail gets the summaries.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=${GPU_BUNDLE:-.gpu-bundle-matmul}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
rm -rf /tmp/vvl && mkdir -p /tmp/vvl
for f in .gl-extra/*.deb; do dpkg -x "$f" /tmp/vvl; done
export VK_LAYER_PATH=/tmp/vvl/usr/share/vulkan/explicit_layer.d
export LD_LIBRARY_PATH=$PWD/$B:/tmp/vvl/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"

(cd /tmp && nvcc -O3 -arch=sm_90 "$OLDPWD/$B/matmul.cu" -lcublas -o cuda-matmul) > "$OUT/nvcc.txt" 2>&1 &
nvcc=$!
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw --format=csv -lms 250 > "$OUT/clocks.csv" 2>&1 &
clocks=$!
SECONDS=0
timeout "${VALIDATE_SECONDS:-60}" "$B"/kompute-kernel-probe --quick --validate --all-paths > "$OUT/probe-validate.txt" 2>&1
echo "validate: rc $? after ${SECONDS}s"
timeout "${PROBE_SECONDS:-170}" "$B"/kompute-kernel-probe ${PROBE_ARGS:-} > "$OUT/probe.txt" 2>&1
echo "probe: rc $? after ${SECONDS}s"
wait $nvcc
if [ -z "${SKIP_CUDA:-}" ]; then
    timeout 60 /tmp/cuda-matmul > "$OUT/cuda.txt" 2>&1
    echo "cuda: rc $? after ${SECONDS}s"
fi
kill $clocks 2>/dev/null

echo "=== device"
grep -v "^  stats\|^memory type" "$OUT/probe.txt" | sed -n '1,/^read bandwidth/p' | head -40
echo "=== validation run: $(grep -c '\[validation error\]' "$OUT/probe-validate.txt") errors"
grep -m 12 "validation\|BAD\|failed" "$OUT/probe-validate.txt" | cut -c1-400
echo "=== probe"
grep -m 10 "BAD\|failed" "$OUT/probe.txt" | cut -c1-300
sed -n '/^summary/,$p' "$OUT/probe.txt"
echo "=== cuda"
cat "$OUT/cuda.txt" 2>/dev/null
tail -5 "$OUT/nvcc.txt"
