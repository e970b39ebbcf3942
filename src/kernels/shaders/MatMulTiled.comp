#version 450
// C = alpha * op(A) * op(B) + beta * C on any device: BM x BN tiles of C per
// workgroup, staged through shared memory BK deep, each thread computing a
// TM x TN block in registers with f32 accumulation. The next tiles are
// loaded into registers while the current ones are multiplied. Batches run
// along the z dimension of the grid.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "MatMulCommon.glsl"
#include "MatMulParams.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4; // 4 or 8
layout(constant_id = 5) const uint TN = 4; // 4 or 8
layout(constant_id = 6) const uint A_TYPE = 0;
layout(constant_id = 7) const uint B_TYPE = 0;
layout(constant_id = 8) const uint C_TYPE = 0;
layout(constant_id = 9) const uint TRANS_A = 0;
layout(constant_id = 10) const uint TRANS_B = 0;
// Whether 4-element chunks along the contiguous dimension may be loaded with
// one wide load (aligned, and that dimension's extent a multiple of 4).
layout(constant_id = 11) const uint VEC_A = 0;
layout(constant_id = 12) const uint VEC_B = 0;
// Two shared tiles: one barrier per tile instead of two.
layout(constant_id = 13) const uint DOUBLE_BUFFER = 0;
// MatMulParams::swigluC: C = silu(gate) * up. The tile's columns hold gate
// rows of B and the up rows of the same outputs (bRow) so that each thread
// holds both halves of its outputs; a workgroup writes BN / 2 columns of C.
layout(constant_id = 14) const uint SWIGLU_C = 0;

const uint WG = (BM / TM) * (BN / TN);
const bool B_QUANT = IS_QUANT_TYPE(B_TYPE);
const uint A_CHUNKS = BM * BK / 4 / WG; // 4-element chunks each thread stages
const uint B_CHUNKS = BK * BN / 4 / WG;

OPERAND_VIEWS(0, A)
OPERAND_VIEWS(1, B)
layout(set = 0, binding = 2) buffer CView32 { float C32[]; };
layout(set = 0, binding = 2) buffer CView16 { float16_t C16[]; };
FLOAT_OPERAND_LOADS(A)
FLOAT_OPERAND_LOADS(B)
#define QUANT_VIEW B16
#define QUANT_VIEW32 B32
#include "QuantBlocks.glsl"
QUANT_OPERAND_LOADS(B)

// k-major tiles: As[kk][mm] and Bs[kk][nn], as vec4 along m and n.
const uint A_TILE = BK * (BM / 4);
const uint B_TILE = BK * (BN / 4);
const uint BUFFERS = DOUBLE_BUFFER != 0 ? 2 : 1;
shared vec4 As[A_TILE * BUFFERS];
shared vec4 Bs[B_TILE * BUFFERS];

vec4 stA[A_CHUNKS];
vec4 stB[B_CHUNKS];

vec4 loadChunkA(uint base, uint contiguousIndex, uint otherIndex, uint contiguousExtent, uint otherExtent)
{
    // Elements base .. base+3 (along the contiguous dimension of A).
    if (otherIndex >= otherExtent) {
        return vec4(0);
    }
    if (VEC_A != 0) {
        return contiguousIndex < contiguousExtent ? ALoad4(A_TYPE, base) : vec4(0);
    }
    vec4 v;
    for (uint i = 0; i < 4; ++i) {
        v[i] = contiguousIndex + i < contiguousExtent ? ALoad(A_TYPE, base + i) : 0.0;
    }
    return v;
}

vec4 loadChunkB(uint base, uint contiguousIndex, uint otherIndex, uint contiguousExtent, uint otherExtent)
{
    if (otherIndex >= otherExtent) {
        return vec4(0);
    }
    if (VEC_B != 0) {
        return contiguousIndex < contiguousExtent ? BLoad4(B_TYPE, base) : vec4(0);
    }
    vec4 v;
    for (uint i = 0; i < 4; ++i) {
        v[i] = contiguousIndex + i < contiguousExtent ? BLoad(B_TYPE, base + i) : 0.0;
    }
    return v;
}

// The row of B (transposed: a column of the product) behind column c of the
// workgroup's tile, whose first column is col0, and whether B has it.
// SWIGLU_C: a thread's columns (its TN / 4 runs of 4, BN * 4 / TN apart)
// split into gate and up: with TN = 8 its first run is gate, its second up;
// with TN = 4 the first two of its run are gate, the last two up.
uint bRow(uint col0, uint c, out bool inside)
{
    if (SWIGLU_C == 0) {
        inside = col0 + c < p.n;
        return col0 + c;
    }
    bool up = TN == 8 ? c >= BN / 2u : (c & 2u) != 0u;
    uint column = col0 / 2u + (TN == 8 ? c % (BN / 2u) : c / 4u * 2u + (c & 1u)); // of C
    inside = column < p.n;
    return up ? column + p.upRowB : column;
}

void loadTiles(uint k0, uint row0, uint col0, uint baseA, uint baseB)
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {
        uint c = tid + i * WG;
        if (TRANS_A == 0) { // A[m][k]: chunks along k
            uint mm = c / (BK / 4), kk = (c % (BK / 4)) * 4;
            stA[i] = loadChunkA(baseA + (row0 + mm) * p.lda + k0 + kk, k0 + kk, row0 + mm, p.k, p.m);
        } else { // A[k][m]: chunks along m
            uint kk = c / (BM / 4), mm = (c % (BM / 4)) * 4;
            stA[i] = loadChunkA(baseA + (k0 + kk) * p.lda + row0 + mm, row0 + mm, k0 + kk, p.m, p.k);
        }
    }
    if (B_QUANT) { // B[n][k] in blocks: groups of 8 weights along k
        [[unroll]] for (uint i = 0; i < B_CHUNKS / 2; ++i) {
            uint g = tid + i * WG;
            uint nn = g / (BK / 8), kk = (g % (BK / 8)) * 8;
            bool inside;
            uint row = bRow(col0, nn, inside);
            if (inside) {
                BLoadQ8(B_TYPE, baseB + row * p.ldb + k0 + kk, stB[2 * i], stB[2 * i + 1]);
            } else {
                stB[2 * i] = vec4(0);
                stB[2 * i + 1] = vec4(0);
            }
        }
        return;
    }
    [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {
        uint c = tid + i * WG;
        if (TRANS_B == 0) { // B[k][n]: chunks along n
            uint kk = c / (BN / 4), nn = (c % (BN / 4)) * 4;
            stB[i] = loadChunkB(baseB + (k0 + kk) * p.ldb + col0 + nn, col0 + nn, k0 + kk, p.n, p.k);
        } else { // B[n][k]: chunks along k
            uint nn = c / (BK / 4), kk = (c % (BK / 4)) * 4;
            bool inside;
            uint row = bRow(col0, nn, inside);
            stB[i] = loadChunkB(baseB + row * p.ldb + k0 + kk, k0 + kk, inside ? 0u : 1u, p.k, 1u);
        }
    }
}

void storeTiles(uint slot)
{
    uint tid = gl_LocalInvocationID.x;
    uint aBase = slot * A_TILE, bBase = slot * B_TILE;
    [[unroll]] for (uint i = 0; i < A_CHUNKS; ++i) {
        uint c = tid + i * WG;
        if (TRANS_A == 0) {
            uint mm = c / (BK / 4), kk = (c % (BK / 4)) * 4;
            [[unroll]] for (uint j = 0; j < 4; ++j) {
                As[aBase + (kk + j) * (BM / 4) + mm / 4][mm % 4] = stA[i][j];
            }
        } else {
            uint kk = c / (BM / 4), mq = c % (BM / 4);
            As[aBase + kk * (BM / 4) + mq] = stA[i];
        }
    }
    if (B_QUANT) {
        [[unroll]] for (uint i = 0; i < B_CHUNKS / 2; ++i) {
            uint g = tid + i * WG;
            uint nn = g / (BK / 8), kk = (g % (BK / 8)) * 8;
            for (uint j = 0; j < 8; ++j) {
                Bs[bBase + (kk + j) * (BN / 4) + nn / 4][nn % 4] = stB[2 * i + j / 4][j % 4];
            }
        }
        return;
    }
    [[unroll]] for (uint i = 0; i < B_CHUNKS; ++i) {
        uint c = tid + i * WG;
        if (TRANS_B == 0) {
            uint kk = c / (BN / 4), nq = c % (BN / 4);
            Bs[bBase + kk * (BN / 4) + nq] = stB[i];
        } else {
            uint nn = c / (BK / 4), kk = (c % (BK / 4)) * 4;
            for (uint j = 0; j < 4; ++j) {
                Bs[bBase + (kk + j) * (BN / 4) + nn / 4][nn % 4] = stB[i][j];
            }
        }
    }
}

void main()
{
    uint tid = gl_LocalInvocationID.x;
    uint batch = gl_WorkGroupID.z;
    uint row0 = gl_WorkGroupID.y * BM;
    uint col0 = gl_WorkGroupID.x * BN;
    uint baseA = p.offsetA + batch * p.strideA;
    uint baseB = p.offsetB + batch * p.strideB;
    uint baseC = p.offsetC + batch * p.strideC;

    // This thread's rows are TM/4 runs of 4, BM*4/TM apart (and its columns
    // likewise), so that neighbouring threads read neighbouring vec4s.
    uint tn = tid % (BN / TN);
    uint tm = tid / (BN / TN);
    const uint ROW_STEP = BM * 4 / TM;
    const uint COL_STEP = BN * 4 / TN;

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; ++i) {
        acc[i] = 0.0;
    }

    uint tiles = (p.k + BK - 1) / BK;
    loadTiles(0, row0, col0, baseA, baseB);
    storeTiles(0);
    barrier();
    for (uint t = 0; t < tiles; ++t) {
        uint slot = DOUBLE_BUFFER != 0 ? t & 1u : 0u;
        uint aBase = slot * A_TILE, bBase = slot * B_TILE;
        if (t + 1 < tiles) {
            loadTiles((t + 1) * BK, row0, col0, baseA, baseB);
        }
        [[unroll]] for (uint kk = 0; kk < BK; ++kk) {
            vec4 a[TM / 4];
            vec4 b[TN / 4];
            [[unroll]] for (uint g = 0; g < TM / 4; ++g) {
                a[g] = As[aBase + kk * (BM / 4) + (g * ROW_STEP) / 4 + tm];
            }
            [[unroll]] for (uint h = 0; h < TN / 4; ++h) {
                b[h] = Bs[bBase + kk * (BN / 4) + (h * COL_STEP) / 4 + tn];
            }
            [[unroll]] for (uint g = 0; g < TM / 4; ++g) {
                [[unroll]] for (uint i = 0; i < 4; ++i) {
                    [[unroll]] for (uint h = 0; h < TN / 4; ++h) {
                        [[unroll]] for (uint j = 0; j < 4; ++j) {
                            acc[(g * 4 + i) * TN + h * 4 + j] += a[g][i] * b[h][j];
                        }
                    }
                }
            }
        }
        if (DOUBLE_BUFFER != 0) {
            // The other tile was last read before the previous barrier.
            if (t + 1 < tiles) {
                storeTiles(slot ^ 1u);
            }
            barrier();
        } else {
            barrier();
            if (t + 1 < tiles) {
                storeTiles(0);
                barrier();
            }
        }
    }

    if (SWIGLU_C != 0) {
        // Gate and up of each output (bRow): silu(alpha * gate) * (alpha *
        // up) into C, beta being 0.
        [[unroll]] for (uint g = 0; g < TM / 4; ++g) {
            [[unroll]] for (uint i = 0; i < 4; ++i) {
                uint row = row0 + g * ROW_STEP + tm * 4 + i;
                [[unroll]] for (uint j = 0; j < 4; ++j) {
                    uint gateAt = (g * 4 + i) * TN + (TN == 8 ? j : j & 1u);
                    uint upAt = TN == 8 ? gateAt + 4u : gateAt + 2u;
                    uint col = col0 / 2u + (TN == 8 ? tn * 4u + j : tn * 2u + (j & 1u));
                    if (row < p.m && col < p.n && (TN == 8 || j < 2u)) {
                        float value = silu(p.alpha * acc[gateAt]) * (p.alpha * acc[upAt]);
                        uint e = baseC + row * p.ldc + col;
                        if (C_TYPE == TYPE_F32) {
                            C32[e] = value;
                        } else {
                            C16[e] = float16_t(value);
                        }
                    }
                }
            }
        }
        return;
    }
    bool readC = p.beta != 0.0;
    [[unroll]] for (uint g = 0; g < TM / 4; ++g) {
        [[unroll]] for (uint i = 0; i < 4; ++i) {
            uint row = row0 + g * ROW_STEP + tm * 4 + i;
            if (row >= p.m) {
                continue;
            }
            for (uint h = 0; h < TN / 4; ++h) {
                for (uint j = 0; j < 4; ++j) {
                    uint col = col0 + h * COL_STEP + tn * 4 + j;
                    if (col >= p.n) {
                        continue;
                    }
                    uint e = baseC + row * p.ldc + col;
                    float value = p.alpha * acc[(g * 4 + i) * TN + h * 4 + j];
                    if (C_TYPE == TYPE_F32) {
                        C32[e] = readC ? value + p.beta * C32[e] : value;
                    } else {
                        C16[e] = float16_t(readC ? value + p.beta * float(C16[e]) : value);
                    }
                }
            }
        }
    }
}
