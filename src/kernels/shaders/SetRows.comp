#version 450
#extension GL_GOOGLE_include_directive : require
// OpSetRows: one invocation per element; row r of src goes to row
// positions[r] of dst, converted from SRC_TYPE to DST_TYPE. Rows that would
// not fit in dst (position >= dstRows) are skipped.
#include "Common.glsl"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) readonly buffer Src { STORAGE(SRC_TYPE) src[]; };
layout(set = 0, binding = 1) buffer Dst { STORAGE(DST_TYPE) dst[]; };
layout(set = 0, binding = 2) readonly buffer Positions { uint positions[]; };
layout(push_constant) uniform Push
{
    uint rows;
    uint cols;
    uint srcRowStride;
    uint srcOffset;
    uint dstRowStride;
    uint dstOffset;
    uint dstRows;
    uint positionsOffset;
} p;

void main()
{
    uint index = flatGroup() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= p.rows * p.cols) {
        return;
    }
    uint row = index / p.cols;
    uint col = index % p.cols;
    uint position = positions[p.positionsOffset + row];
    if (position >= p.dstRows) {
        return;
    }
    float v = LOAD(SRC_TYPE, src, p.srcOffset + row * p.srcRowStride + col);
    STORE(DST_TYPE, dst, p.dstOffset + position * p.dstRowStride + col, v);
}
