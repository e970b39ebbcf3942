#version 450
#extension GL_GOOGLE_include_directive : require
// OpRoPE: one invocation per pair of values of a head. Slot j < ropeDims/2
// rotates its pair by positions[row] * freqScale * theta^(-2j / ropeDims);
// the slots above copy the dimensions from ropeDims on, two at a time.
// With FACTORS (Llama 3.1's rope_freqs) slot j's angle is divided by
// factors[j]; without, the op binds x in their place.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NEOX = 0;
layout(constant_id = 2) const uint FACTORS = 0;

layout(set = 0, binding = 0) readonly buffer X { STORAGE(TYPE) x[]; };
layout(set = 0, binding = 1) readonly buffer Positions { uint positions[]; };
layout(set = 0, binding = 2) buffer Y { STORAGE(TYPE) y[]; };
layout(set = 0, binding = 3) readonly buffer F { float factors[]; };
layout(push_constant) uniform Push
{
    uint rows;
    uint heads;
    uint headDim;
    uint ropeDims;
    float log2Theta;
    float freqScale;
    uint xRowStride;
    uint yRowStride;
    uint xOffset;
    uint yOffset;
    uint positionsOffset;
    uint factorsOffset;
} p;

void main()
{
    uint slots = p.headDim / 2;
    uint index = flatGroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= p.rows * p.heads * slots) {
        return;
    }
    uint j = index % slots;
    uint head = (index / slots) % p.heads;
    uint row = index / (slots * p.heads);
    uint xBase = p.xOffset + row * p.xRowStride + head * p.headDim;
    uint yBase = p.yOffset + row * p.yRowStride + head * p.headDim;
    uint halfDims = p.ropeDims / 2;
    if (j >= halfDims) {
        uint d = p.ropeDims + 2 * (j - halfDims);
        float a = LOAD(TYPE, x, xBase + d);
        float b = LOAD(TYPE, x, xBase + d + 1);
        STORE(TYPE, y, yBase + d, a);
        STORE(TYPE, y, yBase + d + 1, b);
        return;
    }
    uint first = NEOX != 0 ? j : 2 * j;
    uint second = NEOX != 0 ? j + halfDims : 2 * j + 1;
    float position = float(positions[p.positionsOffset + row]);
    float angle = position * p.freqScale * exp2(-2.0 * float(j) / float(p.ropeDims) * p.log2Theta);
    if (FACTORS != 0) {
        angle /= factors[p.factorsOffset + j];
    }
    float c = cos(angle);
    float s = sin(angle);
    float a = LOAD(TYPE, x, xBase + first);
    float b = LOAD(TYPE, x, xBase + second);
    STORE(TYPE, y, yBase + first, a * c - b * s);
    STORE(TYPE, y, yBase + second, a * s + b * c);
}
