#version 450
#extension GL_GOOGLE_include_directive : require
// OpAttention's prefill path: a flash-attention-style tiled kernel. One
// workgroup per (tile of ROWS_TILE query rows, head) walks the cache in
// tiles of COLS_TILE positions up to the tile's last position, keeping each
// row's running maximum and sum of exponentials and the output (in
// registers, rescaled as the maximum grows), so scores never reach memory.
#include "Common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 128;
layout(constant_id = 2) const uint GROUP = 1;
layout(constant_id = 3) const uint ROWS_TILE = 16;
layout(constant_id = 4) const uint COLS_TILE = 16;
layout(constant_id = 5) const uint CAUSAL = 1;
// Outputs per invocation: ROWS_TILE * HEAD_DIM / local size (a whole number).
layout(constant_id = 6) const uint OUTPUTS = 16;
// f16 output (f16 caches only: AttentionOut.glsl).
layout(constant_id = 7) const uint OUT_HALF = 0;

layout(set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(set = 0, binding = 1) readonly buffer K { STORAGE(KV_TYPE) k[]; };
layout(set = 0, binding = 2) readonly buffer V { STORAGE(KV_TYPE) v[]; };
layout(set = 0, binding = 3) readonly buffer Positions { uint positions[]; };
#include "AttentionOut.glsl"
layout(push_constant) uniform Push
{
    uint rows;
    uint heads;
    uint kvHeads;
    uint kvCapacity;
    float scale;
    uint kvRowStride;
    uint kvOffset;
    uint qRowStride;
    uint qOffset;
    uint positionsOffset;
    uint outRowStride;
    uint outOffset;
} p;

shared float queries[ROWS_TILE * HEAD_DIM];
shared float keys[COLS_TILE * HEAD_DIM];
shared float values[COLS_TILE * HEAD_DIM];
shared float scores[ROWS_TILE * COLS_TILE];
shared float rowMax[ROWS_TILE];
shared float rowSum[ROWS_TILE];
shared float rowRescale[ROWS_TILE];
shared int rowLimit[ROWS_TILE]; // last position the row sees; -1: no row
shared int tileLimit;

void main()
{
    uint group = flatGroup();
    uint tiles = (p.rows + ROWS_TILE - 1) / ROWS_TILE;
    if (group >= tiles * p.heads) {
        return;
    }
    uint head = group % p.heads;
    uint row0 = (group / p.heads) * ROWS_TILE;
    uint kvHead = head / GROUP;
    uint t = gl_LocalInvocationID.x;
    uint T = gl_WorkGroupSize.x;

    for (uint i = t; i < ROWS_TILE * HEAD_DIM; i += T) {
        uint r = row0 + i / HEAD_DIM;
        queries[i] = r < p.rows ? q[p.qOffset + r * p.qRowStride + head * HEAD_DIM + i % HEAD_DIM] * p.scale : 0.0;
    }
    for (uint i = t; i < ROWS_TILE; i += T) {
        uint r = row0 + i;
        int limit = -1;
        if (r < p.rows) {
            uint last = positions[p.positionsOffset + (CAUSAL != 0 ? r : p.rows - 1)];
            limit = int(min(last, p.kvCapacity - 1));
        }
        rowLimit[i] = limit;
        rowMax[i] = NEG_INF;
        rowSum[i] = 0.0;
    }
    barrier();
    if (t == 0) {
        int limit = -1;
        for (uint i = 0; i < ROWS_TILE; ++i) {
            limit = max(limit, rowLimit[i]);
        }
        tileLimit = limit;
    }
    barrier();
    int lastPosition = tileLimit;

    float acc[OUTPUTS];
    for (uint e = 0; e < OUTPUTS; ++e) {
        acc[e] = 0.0;
    }

    for (int j0 = 0; j0 <= lastPosition; j0 += int(COLS_TILE)) {
        for (uint i = t; i < COLS_TILE * HEAD_DIM; i += T) {
            uint position = uint(j0) + i / HEAD_DIM;
            float kv = 0.0;
            float vv = 0.0;
            // Positions past the tile's last one are never attended to and
            // may hold anything (NaN in unwritten cache rows): they are not
            // loaded, since a zero weight times NaN would still be NaN.
            if (position <= uint(lastPosition)) {
                uint index = p.kvOffset + position * p.kvRowStride + kvHead * HEAD_DIM + i % HEAD_DIM;
                kv = LOAD(KV_TYPE, k, index);
                vv = LOAD(KV_TYPE, v, index);
            }
            keys[i] = kv;
            values[i] = vv;
        }
        barrier();
        for (uint e = t; e < ROWS_TILE * COLS_TILE; e += T) {
            uint i = e / COLS_TILE;
            uint j = e % COLS_TILE;
            float s = NEG_INF;
            if (j0 + int(j) <= rowLimit[i]) {
                s = 0.0;
                for (uint d = 0; d < HEAD_DIM; ++d) {
                    s += queries[i * HEAD_DIM + d] * keys[j * HEAD_DIM + d];
                }
            }
            scores[e] = s;
        }
        barrier();
        for (uint i = t; i < ROWS_TILE; i += T) {
            float m = rowMax[i];
            float tileMax = NEG_INF;
            for (uint j = 0; j < COLS_TILE; ++j) {
                tileMax = max(tileMax, scores[i * COLS_TILE + j]);
            }
            float newMax = max(m, tileMax);
            float rescale = 1.0;
            float sum = rowSum[i];
            if (newMax != NEG_INF) {
                rescale = m == NEG_INF ? 0.0 : exp(m - newMax);
                sum *= rescale;
                for (uint j = 0; j < COLS_TILE; ++j) {
                    float s = scores[i * COLS_TILE + j];
                    float e = s == NEG_INF ? 0.0 : exp(s - newMax);
                    scores[i * COLS_TILE + j] = e;
                    sum += e;
                }
            } else {
                for (uint j = 0; j < COLS_TILE; ++j) {
                    scores[i * COLS_TILE + j] = 0.0;
                }
            }
            rowMax[i] = newMax;
            rowSum[i] = sum;
            rowRescale[i] = rescale;
        }
        barrier();
        for (uint e = 0; e < OUTPUTS; ++e) {
            uint index = t + e * T;
            uint i = index / HEAD_DIM;
            uint d = index % HEAD_DIM;
            float o = acc[e] * rowRescale[i];
            for (uint j = 0; j < COLS_TILE; ++j) {
                o += scores[i * COLS_TILE + j] * values[j * HEAD_DIM + d];
            }
            acc[e] = o;
        }
        barrier();
    }

    for (uint e = 0; e < OUTPUTS; ++e) {
        uint index = t + e * T;
        uint i = index / HEAD_DIM;
        uint d = index % HEAD_DIM;
        uint r = row0 + i;
        if (r < p.rows) {
            float sum = rowSum[i];
            storeOut(p.outOffset + r * p.outRowStride + head * HEAD_DIM + d, sum > 0.0 ? acc[e] / sum : 0.0);
        }
    }
}
