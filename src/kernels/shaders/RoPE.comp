#version 450
#extension GL_GOOGLE_include_directive : require
// OpRoPE: one invocation per pair of values of a head. Slot j < ropeDims/2
// rotates its pair by positions[row] * freqScale * theta^(-2j / ropeDims);
// the slots above copy the dimensions from ropeDims on, two at a time.
// With FACTORS (Llama 3.1's rope_freqs) slot j's angle is divided by
// factors[j]; without, the op binds x in their place.
//
// With CACHE (OpRoPECache) the heads of a row are [query | key | value]:
// query pairs are rotated in place, key pairs rotated into the key cache
// and value pairs copied into the value cache, at row positions[row] of
// the caches (of CACHE_TYPE); with BIAS the bias is added to every value
// first. Absent factors and bias are bound to qkv.
#include "Common.glsl"
#include "RoPERotate.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NEOX = 0;
layout(constant_id = 2) const uint FACTORS = 0;

#ifdef CACHE
layout(constant_id = 3) const uint BIAS = 0;
layout(set = 0, binding = 0) buffer Qkv { STORAGE(TYPE) qkv[]; };
layout(set = 0, binding = 1) readonly buffer Positions { uint positions[]; };
layout(set = 0, binding = 2) writeonly buffer Keys { STORAGE(CACHE_TYPE) keys[]; };
layout(set = 0, binding = 3) writeonly buffer Values { STORAGE(CACHE_TYPE) values[]; };
layout(set = 0, binding = 4) readonly buffer F { float factors[]; };
layout(set = 0, binding = 5) readonly buffer B { float bias[]; };
// (The fields from heads on are kernels::RoPECachePush.)
layout(push_constant) uniform Push
{
    uint rows;
    uint qkvRowStride;
    uint qkvOffset;
    uint heads;
    uint kvHeads;
    uint headDim;
    uint ropeDims;
    float log2Theta;
    float freqScale;
    uint cacheRowStride;
    uint cacheOffset;
    uint keyRows; // rows that fit in each cache
    uint valueRows;
    uint positionsOffset;
    uint factorsOffset;
    uint biasOffset;
} p;
#else
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
#endif

// The two dimensions of a head that slot j holds: a rotated pair below
// ropeDims/2, else two of the dimensions copied unchanged.
uvec2 pairOf(uint j)
{
    uint halfDims = p.ropeDims / 2;
    if (j >= halfDims) {
        uint d = p.ropeDims + 2 * (j - halfDims);
        return uvec2(d, d + 1);
    }
    return NEOX != 0 ? uvec2(j, j + halfDims) : uvec2(2 * j, 2 * j + 1);
}

// Pair (a, b) of slot j < ropeDims/2 turned by its angle at `position`.
vec2 rotate(float a, float b, uint j, uint position)
{
    float factor = FACTORS != 0 ? factors[p.factorsOffset + j] : 1.0;
    return ropeRotate(a, b, j, position, p.ropeDims, p.log2Theta, p.freqScale, factor);
}

#ifdef CACHE
void main()
{
    uint slots = p.headDim / 2;
    uint rowHeads = p.heads + 2 * p.kvHeads;
    uint index = flatGroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= p.rows * rowHeads * slots) {
        return;
    }
    uint j = index % slots;
    uint head = (index / slots) % rowHeads;
    uint row = index / (slots * rowHeads);
    uint base = p.qkvOffset + row * p.qkvRowStride + head * p.headDim;
    uvec2 at = pairOf(j);
    vec2 v = vec2(LOAD(TYPE, qkv, base + at.x), LOAD(TYPE, qkv, base + at.y));
    if (BIAS != 0) {
        uint b = p.biasOffset + head * p.headDim;
        v += vec2(bias[b + at.x], bias[b + at.y]);
    }
    uint position = positions[p.positionsOffset + row];
    bool isValue = head >= p.heads + p.kvHeads;
    if (!isValue && j < p.ropeDims / 2) {
        v = rotate(v.x, v.y, j, position);
    }
    if (head < p.heads) {
        STORE(TYPE, qkv, base + at.x, v.x);
        STORE(TYPE, qkv, base + at.y, v.y);
        return;
    }
    uint cacheHead = head - p.heads - (isValue ? p.kvHeads : 0);
    uint dst = p.cacheOffset + position * p.cacheRowStride + cacheHead * p.headDim;
    if (isValue) {
        if (position < p.valueRows) {
            STORE(CACHE_TYPE, values, dst + at.x, v.x);
            STORE(CACHE_TYPE, values, dst + at.y, v.y);
        }
    } else if (position < p.keyRows) {
        STORE(CACHE_TYPE, keys, dst + at.x, v.x);
        STORE(CACHE_TYPE, keys, dst + at.y, v.y);
    }
}
#else
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
    uvec2 at = pairOf(j);
    vec2 v = vec2(LOAD(TYPE, x, xBase + at.x), LOAD(TYPE, x, xBase + at.y));
    if (j < p.ropeDims / 2) {
        v = rotate(v.x, v.y, j, positions[p.positionsOffset + row]);
    }
    STORE(TYPE, y, yBase + at.x, v.x);
    STORE(TYPE, y, yBase + at.y, v.y);
}
#endif
