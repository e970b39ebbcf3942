"""GLSL sources and helpers shared by the test suites."""

import functools

import kp


@functools.lru_cache(maxsize=None)
def compile_cached(source):
    """kp.compile_source, once per source text."""
    return kp.compile_source(source)


# out[i] = a[i] * b[i] for float32 tensors.
MULTIPLY = """
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float result[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    result[i] = a[i] * b[i];
}
"""

# values[i] = values[i] * 2 + 1 for float32.
TWICE_PLUS_ONE = """
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] * 2.0 + 1.0;
}
"""

# values[i] += push.add * spec scale, float32.
PUSH_AND_SPEC = """
#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const float scale = 1.0;
layout(push_constant) uniform Push { float add; } push;
layout(set = 0, binding = 0) buffer Values { float values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    values[i] += push.add * scale;
}
"""

# Long loops per invocation: seconds of work on a CPU driver when `rounds`
# is large. out[i] depends on every step, so nothing can be optimised away;
# the host recomputes it with heavy_expected(). (llvmpipe ends any loop after
# 65535 iterations, so the work is split into two nested loops.)
HEAVY_STEPS_PER_ROUND = 1000
HEAVY = """
#version 450
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint rounds; } push;
layout(set = 0, binding = 0) buffer Out { uint values[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = i;
    for (uint r = 0; r < push.rounds; ++r) {
        for (uint k = 0; k < 1000; ++k) {
            x = x * 1664525u + 1013904223u;
        }
    }
    values[i] = x;
}
"""


def heavy_expected(count, iterations):
    """What HEAVY writes, computed with numpy (uint32 wrap-around)."""
    import numpy as np

    x = np.arange(count, dtype=np.uint64)
    a, c = 1664525, 1013904223
    # Compose the affine map x -> a*x + c `iterations` times (mod 2^32).
    mult, add = 1, 0
    base_mult, base_add = a, c
    n = iterations
    while n:
        if n & 1:
            mult, add = (mult * base_mult) % 2**32, (add * base_mult + base_add) % 2**32
        base_mult, base_add = (base_mult * base_mult) % 2**32, (base_add * base_mult + base_add) % 2**32
        n >>= 1
    return ((x * mult + add) % 2**32).astype(np.uint32)


def typed_double_shader(glsl_type, extensions=""):
    """values[i] = values[i] + values[i] for one GLSL element type."""
    return f"""
#version 450
{extensions}
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values {{ {glsl_type} values[]; }};
void main() {{
    uint i = gl_GlobalInvocationID.x;
    values[i] = values[i] + values[i];
}}
"""
