"""Matrix multiplication on the GPU with a tiled shader (shared memory),
compared against numpy. The matrix sizes go in as uint32 push constants and
the tile size as a specialization constant. Exits non-zero if the result
differs from numpy's.

    python examples/python/matmul.py [M K N]
"""

import sys
import time

import numpy as np

import kp

TILE = 16

# C[M][N] = A[M][K] * B[K][N], row-major; one invocation per element of C,
# TILE x TILE invocations per workgroup sharing tiles of A and B.
SHADER = """
#version 450

layout(constant_id = 0) const uint TILE = 16;
layout(local_size_x_id = 0, local_size_y_id = 0) in;

layout(set = 0, binding = 0) readonly buffer MatrixA { float a[]; };
layout(set = 0, binding = 1) readonly buffer MatrixB { float b[]; };
layout(set = 0, binding = 2) writeonly buffer MatrixC { float c[]; };

layout(push_constant) uniform Sizes { uint M; uint K; uint N; } sizes;

shared float tileA[TILE][TILE];
shared float tileB[TILE][TILE];

void main()
{
    uint row = gl_GlobalInvocationID.y;
    uint col = gl_GlobalInvocationID.x;
    uint localRow = gl_LocalInvocationID.y;
    uint localCol = gl_LocalInvocationID.x;

    float sum = 0.0;
    for (uint t = 0; t < sizes.K; t += TILE) {
        uint aCol = t + localCol;
        uint bRow = t + localRow;
        tileA[localRow][localCol] =
            (row < sizes.M && aCol < sizes.K) ? a[row * sizes.K + aCol] : 0.0;
        tileB[localRow][localCol] =
            (bRow < sizes.K && col < sizes.N) ? b[bRow * sizes.N + col] : 0.0;
        barrier();
        for (uint k = 0; k < TILE; ++k) {
            sum += tileA[localRow][k] * tileB[k][localCol];
        }
        barrier();
    }
    if (row < sizes.M && col < sizes.N) {
        c[row * sizes.N + col] = sum;
    }
}
"""


def main(argv):
    m, k, n = (int(v) for v in argv[1:4]) if len(argv) >= 4 else (200, 96, 130)

    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)

    mgr = kp.Manager()
    print("Device:", mgr.get_device_properties()["device_name"])

    t_a = mgr.tensor(a)  # flattened row-major
    t_b = mgr.tensor(b)
    t_c = mgr.tensor(np.zeros(m * n, dtype=np.float32))

    workgroup = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE, 1)
    sizes = np.array([m, k, n], dtype=np.uint32)
    algo = mgr.algorithm([t_a, t_b, t_c],
                         kp.compile_source(SHADER),
                         workgroup,
                         np.array([TILE], dtype=np.uint32),
                         sizes)

    start = time.perf_counter()
    (mgr.sequence()
        .record(kp.OpSyncDevice([t_a, t_b]))
        .record(kp.OpAlgoDispatch(algo))
        .record(kp.OpSyncLocal([t_c]))
        .eval())
    elapsed = time.perf_counter() - start

    c = t_c.data().reshape(m, n)
    expected = a @ b
    error = float(np.max(np.abs(c - expected)))
    print(f"C = A @ B with A {m}x{k}, B {k}x{n}: {elapsed * 1000:.1f} ms on the device")
    print(f"max |C - numpy| = {error:.2e}")

    correct = np.allclose(c, expected, rtol=1e-4, atol=1e-4)
    print("Result matches numpy" if correct else "UNEXPECTED RESULTS")
    mgr.destroy()
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
