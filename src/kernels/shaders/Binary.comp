#version 450
#extension GL_GOOGLE_include_directive : require
// OpBinary (y = a op b), OpSwiGLU (OP 4: y = silu(a) * b) and, with
// TERNARY, OpFma (y = a * b + c). The operands of TYPE, y of Y_TYPE (TYPE
// unless given); b and c may be broadcast (index i % bCount, i % cCount).
// With `cols` (0: one row), elements come in rows of cols, a's, b's and
// y's rows aStride, bStride and yStride apart (OpSwiGLU over the two halves
// of a product's rows; b not broadcast).
#include "Common.glsl"
#ifndef Y_TYPE
#define Y_TYPE TYPE
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0; // kp::BinaryOp, 4 = SwiGLU

layout(set = 0, binding = 0) readonly buffer A { STORAGE(TYPE) a[]; };
layout(set = 0, binding = 1) readonly buffer B { STORAGE(TYPE) b[]; };
#ifdef TERNARY
layout(set = 0, binding = 2) readonly buffer C { STORAGE(TYPE) c[]; };
layout(set = 0, binding = 3) buffer Y { STORAGE(Y_TYPE) y[]; };
#else
layout(set = 0, binding = 2) buffer Y { STORAGE(Y_TYPE) y[]; };
#endif
layout(push_constant) uniform Push
{
    uint count;
    uint bCount;
    uint cCount;
    uint aOffset;
    uint bOffset;
    uint cOffset;
    uint yOffset;
    uint cols;
    uint aStride;
    uint bStride;
    uint yStride;
} p;

void main()
{
    uint i = flatGroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= p.count) {
        return;
    }
    // Row and column only where there are rows (uniform branches).
    uint row = 0u, col = i;
    if (p.cols != 0u) {
        row = i / p.cols;
        col = i - row * p.cols;
    }
    float va = LOAD(TYPE, a, p.aOffset + row * p.aStride + col);
    // The modulo only where b is broadcast.
    float vb = LOAD(TYPE, b, p.bOffset + (p.bCount == p.count ? row * p.bStride + col : i % p.bCount));
    float r;
#ifdef TERNARY
    float vc = LOAD(TYPE, c, p.cOffset + (p.cCount == p.count ? i : i % p.cCount));
    r = fma(va, vb, vc);
#else
    switch (OP) {
        case 0: r = va + vb; break;
        case 1: r = va - vb; break;
        case 2: r = va * vb; break;
        case 3: r = va / vb; break;
        default: r = va / (1.0 + exp(-va)) * vb; break;
    }
#endif
    STORE(Y_TYPE, y, p.yOffset + row * p.yStride + col, r);
}
