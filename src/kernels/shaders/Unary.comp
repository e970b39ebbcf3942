#version 450
#extension GL_GOOGLE_include_directive : require
// OpUnary: y[i] = f(x[i]), x of X_TYPE, y of Y_TYPE (casts included).
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0; // kp::UnaryOp

layout(set = 0, binding = 0) readonly buffer X { STORAGE(X_TYPE) x[]; };
layout(set = 0, binding = 1) buffer Y { STORAGE(Y_TYPE) y[]; };
layout(push_constant) uniform Push
{
    uint count;
    uint xOffset;
    uint yOffset;
    float scale;
} p;

float apply(float v)
{
    switch (OP) {
        case 1: return p.scale * v;
        case 2: return max(v, 0.0);
        case 3: {
            // The tanh form of GELU, 0.5 v (1 + tanh(u)), written as
            // v sigmoid(2u): the same function without the cancellation of
            // 1 + tanh(u) for negative v.
            float u = 0.7978845608 * (v + 0.044715 * v * v * v);
            return v / (1.0 + exp(-2.0 * u));
        }
        case 4: return v / (1.0 + exp(-v));
        case 5: return 1.0 / (1.0 + exp(-v));
        case 6: return tanh(clamp(v, -15.0, 15.0)); // +-1 beyond; no overflow inside tanh
        case 7: return exp(v);
        case 8: return -v;
        case 9: return abs(v);
        case 10: return sqrt(v);
        case 11: return v * v;
        default: return v;
    }
}

void main()
{
    uint i = flatGroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= p.count) {
        return;
    }
    float v = LOAD(X_TYPE, x, p.xOffset + i);
    STORE(Y_TYPE, y, p.yOffset + i, apply(v));
}
