#version 450
// Matrix x vector: out[r] = alpha * sum_k W(r, k) * x[k] + beta * out[r], for
// GEMMs with one row or one column (LLM decode). Compiled twice: plain, and
// with INT_DOT defined (Q8_0/Q4_0 weights through integer dot products, the
// activations quantized to int8 on the fly; with QX_BLOCKS, also Q4_K and
// Q5_K, x quantized once per workgroup: qxRowMode). The other GGUF block
// formats (QuantBlocks.glsl) take unitRowMode in both.
//
// Row mode (the weights of a linear layer, W[r][k] with k contiguous): each
// workgroup computes ROWS outputs. Its threads split k: a thread loads a unit
// of x once (16 bytes of weights' worth) and uses it for all ROWS rows, so
// x is read once per ROWS rows; partial sums are reduced with subgroupAdd,
// then across subgroups through shared memory. Quantized rows are read in
// units of 4 quantized bytes (8 lanes per Q8_0 block, 4 per Q4_0 block), so
// that a subgroup's loads stay within a few cache lines.
// Column mode (W[k][r], r contiguous): each thread owns one output and a
// slice of k; slices are summed through shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#if defined(ROPE_EPILOGUE) || defined(GLU_OUT)
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "MatMulCommon.glsl"
#ifdef CHAIN
// Ordered after the dispatch before it by the shader (Chain.glsl): x, the
// C it adds to and the caches it writes are coherent. The chain's buffer
// follows the other bindings.
#ifdef ROPE_EPILOGUE
#define CHAIN_BINDING 9
#else
#define CHAIN_BINDING 4
#endif
#define CHAIN_SPEC 22
#include "Chain.glsl"
#define CHAIN_COHERENT coherent
#else
#define CHAIN_COHERENT
#endif
// GLU_OUT builds (MatMulParams::swigluC on the int-dot mat-vec): the
// product's rows are pairs, row 2i the gate's row i of the weights and row
// 2i + 1 the up's (from row upRow), and C[i] = silu(gate) * up. With
// GLU_QUANTIZE, C's row is also written quantized as the quantized-x mode
// reads it (MatMulParams::quantizeC): the tile that completes a 32-element
// block of C (a counter per block at binding 4, see gluFinish) quantizes
// it, so that the product after this one copies x instead of quantizing it
// (or running an x pass). C is read back by that tile: coherent.
// ATTN_TAIL builds (MatMulParams::attentionC, with ROPE_EPILOGUE): the
// dispatch also computes the decode attention of the row it writes
// (AttentionTail.glsl), reading back what its other workgroups wrote: C
// and the caches are coherent.
#if defined(CHAIN) || defined(GLU_OUT) || defined(ATTN_TAIL)
#define OUT_COHERENT coherent
#else
#define OUT_COHERENT
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 2;     // outputs per workgroup (row mode)
layout(constant_id = 2) const uint X_TYPE = 0;   // f32, f16 or bf16
layout(constant_id = 3) const uint W_TYPE = 0;   // any TYPE_*
layout(constant_id = 4) const uint OUT_TYPE = 0; // f32 or f16
layout(constant_id = 5) const uint COLUMN_MODE = 0;
// Row mode: W rows and offsets aligned to 16 bytes (8 f16, 4 f32), k a
// multiple of the unit, so whole units load with one 16-byte load.
layout(constant_id = 6) const uint VEC_W = 0;
// x contiguous and aligned to a unit (vector loads of x).
layout(constant_id = 7) const uint VEC_X = 0;
layout(constant_id = 8) const uint K_SPLIT = 8;  // column mode: threads per output
// Quantized rows staged through shared memory (rows of whole 16-byte
// chunks): TILE_BLOCKS blocks of each of the ROWS rows per step.
layout(constant_id = 9) const uint STAGED = 0;
layout(constant_id = 10) const uint TILE_BLOCKS = 32;
// INT_DOT only: the quantized-x row mode (qxRowMode) with x quantized into
// shared memory QX_BLOCKS 32-element blocks at a time (a multiple of 8); 0:
// the row modes above.
layout(constant_id = 11) const uint QX_BLOCKS = 0;
// x is silu(gate) * up (see xAt), the gate xGateDelta elements from x.
layout(constant_id = 12) const uint X_GLU = 0;
// qxRowMode with x whole: the loads of a thread's next group (interleaved:
// its next batch of chunks) issued before the dot products of its current
// one (two groups or batches of registers); 2, interleaved: its first batch
// also issued before x is quantized (a group a thread always does so).
layout(constant_id = 13) const uint QX_PREFETCH = 0;
// qxRowMode with x whole and each row's threads in one subgroup: the
// weights loaded coalesced and handed to their threads through shared
// memory (qxStagedRows).
layout(constant_id = 14) const uint QX_STAGE = 0;
// qxRowMode and rowMode only: x RMS-normalized as it is read (and
// quantized), x[k] * g[k] / sqrt(mean(x^2) + normEps), g the norm's
// weights at binding 3 from element normOffset (an LLM's RMSNorm inside the
// product that reads it: MatMulParams::normA). 0: none; else 1 + g's
// element type, + 4 where normOffset is a multiple of 4 (4-element loads of
// g). The weights scale x before it is quantized; 1 / rms, a factor of the
// whole row, scales each output.
layout(constant_id = 15) const uint NORM_X = 0;
const uint NORM_TYPE = (NORM_X + 3u) & 3u;
const bool NORM_VEC = NORM_X > 4u;
// qxRowMode with x whole, grouped weights (Q8_0X8, Q4_0X8): a row's threads
// take neighbouring 16-byte chunks of its quants (qxInterleavedRows),
// QX_INTERLEAVE of them loaded at once, instead of a group of 8 blocks
// each (0).
layout(constant_id = 16) const uint QX_INTERLEAVE = 0;
// For kompute-kernel-probe's timings of the quantized-x mode's parts (x
// whole; the result is not the product unless 0): 1 quantizes x and writes
// a value of it per row (no weights read), 2 reads the weights against
// whatever shared memory holds (x not read), 3 reads the weights and only
// combines their words (neither x nor the dot products: what the loads
// alone take in the same loop).
layout(constant_id = 17) const uint TIMING_PART = 0;
// The quantized-x mode's x: 0, quantized by each workgroup; 1, the x pass
// (qxPass: x quantized once, a thread a block, into binding 2, before the
// product); 2, the product reading x as the x pass wrote it (binding 0).
// OpMatMul takes the pair for swigluA, whose SwiGLU (two f32 rows of k and
// an exp per element) each workgroup would otherwise repeat.
layout(constant_id = 18) const uint QX_SOURCE = 0;
// ROPE_EPILOGUE builds (MatMulParams::ropeC): OpRoPECache's work on the row
// the product writes, in the same dispatch. The row is [query heads | key
// heads | value heads] of ropeHeadDim each; rows 2i and 2i + 1 are a pair
// (RoPEMode::eNormal), and every mode below has a pair's two sums in one
// subgroup or in shared memory when it writes them (ropeWrite). The caches'
// element type (f32 or f16), and whether freqFactors and the bias are bound.
layout(constant_id = 19) const uint ROPE_CACHE_TYPE = 0;
layout(constant_id = 20) const uint ROPE_FACTORS = 0;
layout(constant_id = 21) const uint ROPE_BIAS = 0;
#ifdef GLU_OUT
// (22 is the chain's in the CHAIN builds, which take no GLU_OUT.)
layout(constant_id = 22) const uint GLU_QUANTIZE = 0;
#endif

layout(push_constant) uniform MatVecParams
{
    uint rows, k;
    uint xStride, ldw, outStride;
    uint xBatchStride, wBatchStride, outBatchStride;
    uint xOffset, wOffset, outOffset;
    float alpha, beta;
    int xGateDelta;
    float normEps;
    uint normOffset;
#ifdef GLU_OUT
    uint upRow; // MatMulParams::upRowB
#endif
#ifdef ROPE_EPILOGUE
    // kernels::RoPECachePush (the rotation and the caches; rows = 1).
    uint ropeHeads, ropeKvHeads, ropeHeadDim, ropeDims;
    float ropeLog2Theta, ropeFreqScale;
    uint ropeCacheRowStride, ropeCacheOffset, ropeKeyRows, ropeValueRows;
    uint ropePositionsOffset, ropeFactorsOffset, ropeBiasOffset;
#endif
#ifdef ATTN_TAIL
    float attnScale;    // MatMulParams::attentionScale
    uint attnOutOffset; // MatMulParams::attentionOffset
#endif
#ifdef CHAIN
    uint chainSlot;
#endif
}
p;

#ifdef CHAIN
COHERENT_OPERAND_VIEWS(0, X)
#else
OPERAND_VIEWS(0, X)
#endif
OPERAND_VIEWS(1, W)
layout(set = 0, binding = 2) OUT_COHERENT buffer OutView32 { float Out32[]; };
layout(set = 0, binding = 2) OUT_COHERENT buffer OutView16 { float16_t Out16[]; };
// The x pass's output (QX_SOURCE 1).
layout(set = 0, binding = 2) OUT_COHERENT buffer OutViewQ64 { uvec2 OutQ64[]; };
layout(set = 0, binding = 2) OUT_COHERENT buffer OutViewQ128 { uvec4 OutQ128[]; };
// The norm's weights (NORM_X; without it the host binds x's tensor here,
// unread).
OPERAND_VIEWS(3, G)
#ifdef ROPE_EPILOGUE
// The position, the caches, freqFactors and the bias (absent ones: the
// host binds the positions in their place, unread).
layout(set = 0, binding = 4) readonly buffer RopePositions { uint ropePositions[]; };
#if defined(CHAIN) || defined(ATTN_TAIL)
#define CACHE_COHERENT coherent
#else
#define CACHE_COHERENT
#endif
layout(set = 0, binding = 5) CACHE_COHERENT writeonly buffer KeyView32 { float Key32[]; };
layout(set = 0, binding = 5) CACHE_COHERENT writeonly buffer KeyView16 { float16_t Key16[]; };
layout(set = 0, binding = 6) CACHE_COHERENT writeonly buffer ValueView32 { float Value32[]; };
layout(set = 0, binding = 6) CACHE_COHERENT writeonly buffer ValueView16 { float16_t Value16[]; };
layout(set = 0, binding = 7) readonly buffer RopeFactors { float ropeFactors[]; };
layout(set = 0, binding = 8) readonly buffer RopeBias { float ropeBias[]; };
#include "RoPERotate.glsl"
#endif
#ifdef GLU_OUT
// GLU_QUANTIZE: per 32-element block of C, its outputs counted so far by
// the workgroups that wrote them (zero before the dispatch, left zero by
// it).
layout(set = 0, binding = 4) coherent buffer GluCounts { uint gluCount[]; };
#endif
FLOAT_OPERAND_LOADS(X)
FLOAT_OPERAND_LOADS(W)
FLOAT_OPERAND_LOADS(G)
#define QUANT_VIEW W16
#define QUANT_VIEW32 W32
#include "QuantBlocks.glsl"
QUANT_OPERAND_LOADS(W)

const uint WG = gl_WorkGroupSize.x;
const bool W_QUANT = IS_QUANT_TYPE(W_TYPE);
// Q8_0X8 and Q4_0X8 hold Q8_0's and Q4_0's blocks, grouped by 8 with the
// scales first (MatMulCommon.glsl): every mode below reads them as their
// base format, only the addresses differ.
const uint W_BASE = W_TYPE == TYPE_Q8_0X8 ? TYPE_Q8_0 : (W_TYPE == TYPE_Q4_0X8 ? TYPE_Q4_0 : W_TYPE);
const bool W_GROUPED = W_TYPE >= TYPE_Q8_0X8;
// The formats with the tuned row modes below (units of 4 quantized bytes,
// staging, integer dot products); the others go through unitRowMode.
const bool W_UNITS = W_BASE == TYPE_Q8_0 || W_BASE == TYPE_Q4_0;
// Elements of one unit: 16 bytes of float weights, or 4 quantized bytes.
const uint UNIT = W_TYPE == TYPE_F32 ? 4 : (W_BASE == TYPE_Q8_0 ? 4 : 8);

shared float partial[64 * 8]; // [subgroup][row] (row mode) or [slice][output]

// The staged row mode (STAGED, for quantized rows of whole 16-byte chunks):
// a subgroup reading quantized rows 2 bytes at a time touches each 32-byte
// sector several times; staged, every sector is read once with 16-byte
// loads, the units are picked out of shared memory, and the loads of the
// next step are in flight while the current one is multiplied. Each step
// holds TILE_BLOCKS blocks of each of the ROWS rows (best on the H200: one
// unit per thread and row per step; a thread per whole block, tried after,
// was slower: see docs/matmul-tuning.md).
const uint BLOCK_BYTES = W_BASE == TYPE_Q8_0 ? 34u : 18u;
const uint UNITS_PER_BLOCK = W_BASE == TYPE_Q8_0 ? 8u : 4u;
const uint TILE_U4 = TILE_BLOCKS * BLOCK_BYTES / 16u; // TILE_BLOCKS % 8 == 0
const uint TILE_WORDS = TILE_U4 * 4u;
const uint TILE_UNITS = TILE_BLOCKS * UNITS_PER_BLOCK;
const uint STAGE_LOADS = (ROWS * TILE_U4 + WG - 1u) / WG;
shared uint tile[STAGED != 0 ? ROWS * TILE_WORDS : 1u];
uvec4 staged[STAGE_LOADS];

void writeOut(uint index, float sum)
{
    float value = p.alpha * sum;
    if (OUT_TYPE == TYPE_F32) {
        Out32[index] = p.beta != 0.0 ? value + p.beta * Out32[index] : value;
    } else {
        Out16[index] = float16_t(p.beta != 0.0 ? value + p.beta * float(Out16[index]) : value);
    }
}

// C[index] = value (the epilogues that write C without alpha and beta).
void storeOut(uint index, float value)
{
    if (OUT_TYPE == TYPE_F32) {
        Out32[index] = value;
    } else {
        Out16[index] = float16_t(value);
    }
}

#ifdef ROPE_EPILOGUE

void storeCache(bool isValue, uint index, float value)
{
    if (ROPE_CACHE_TYPE == TYPE_F32) {
        if (isValue) {
            Value32[index] = value;
        } else {
            Key32[index] = value;
        }
    } else if (isValue) {
        Value16[index] = float16_t(value);
    } else {
        Key16[index] = float16_t(value);
    }
}

// Row `row` of the product (its sum, and its pair's: rows 2i and 2i + 1),
// written as OpMatMul then OpRoPECache on C would leave it (beta is 0): C
// gets the query heads rotated (with the bias) and the key and value heads
// as the product gives them; the key heads go rotated into the key cache
// and the value heads into the value cache (with the bias) at the row
// positions[ropePositionsOffset], where the caches hold it.
void ropeWrite(uint outBase, uint row, float sum, float pairSum)
{
    float value = p.alpha * sum;
    float x = value, y = p.alpha * pairSum;
    if (ROPE_BIAS != 0) {
        x += ropeBias[p.ropeBiasOffset + row];
        y += ropeBias[p.ropeBiasOffset + (row ^ 1u)];
    }
    uint head = row / p.ropeHeadDim, d = row % p.ropeHeadDim;
    bool isQuery = head < p.ropeHeads;
    bool isValue = head >= p.ropeHeads + p.ropeKvHeads;
    uint position = ropePositions[p.ropePositionsOffset];
    uint j = d >> 1;
    float result = x;
    if (!isValue && j < p.ropeDims / 2u) {
        bool first = (d & 1u) == 0u;
        float factor = ROPE_FACTORS != 0 ? ropeFactors[p.ropeFactorsOffset + j] : 1.0;
        vec2 turned = ropeRotate(first ? x : y, first ? y : x, j, position, p.ropeDims, p.ropeLog2Theta,
                                 p.ropeFreqScale, factor);
        result = first ? turned.x : turned.y;
    }
    storeOut(outBase + row * p.outStride, isQuery ? result : value);
    if (isQuery) {
        return;
    }
    uint cacheHead = head - p.ropeHeads - (isValue ? p.ropeKvHeads : 0u);
    if (position < (isValue ? p.ropeValueRows : p.ropeKeyRows)) {
        storeCache(isValue, p.ropeCacheOffset + position * p.ropeCacheRowStride + cacheHead * p.ropeHeadDim + d, result);
    }
}
#ifdef ATTN_TAIL
#include "AttentionTail.glsl"
#endif
#endif

// NORM_X: each subgroup's sum of the squares of x (the elements its
// threads read: in the quantized-x mode the blocks they quantized), shared
// before a barrier (the one that ends the quantization of x, or the row
// mode's reduction); after it, 1 / rms of x (1 without NORM_X).
shared float normSquares[64];
void shareSquares(float squares)
{
    if (NORM_X != 0) {
        float s = subgroupAdd(squares);
        if (subgroupElect()) {
            normSquares[gl_SubgroupID] = s;
        }
    }
}
float inverseRms()
{
    if (NORM_X == 0) {
        return 1.0;
    }
    float total = 0.0;
    for (uint g = 0; g < gl_NumSubgroups; ++g) {
        total += normSquares[g];
    }
    return inversesqrt(total / float(p.k) + p.normEps);
}

// The weights' row of the product's row `row` (GLU_OUT: a gate row and an
// up row in turn).
uint weightRow(uint row)
{
#ifdef GLU_OUT
    return (row & 1u) != 0u ? p.upRow + (row >> 1) : row >> 1;
#else
    return row;
#endif
}

#ifdef GLU_OUT
// Output i of a GLU_OUT product: C[i] = silu(gate) * up, from the sums of
// rows 2i and 2i + 1.
void gluWrite(uint outBase, uint i, float gateSum, float upSum)
{
    float g = p.alpha * gateSum, u = p.alpha * upSum;
    storeOut(outBase + i, silu(g) * u);
}
#endif

// Sums each row's partial sums over the workgroup and writes the outputs;
// with NORM_X, scaled by 1 / rms of x (`squares`: this thread's sum of the
// squares of the x elements it read).
void reduceAndWrite(float sums[ROWS], uint row0, uint outBase, float squares)
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        float s = subgroupAdd(sums[r]);
        if (subgroupElect()) {
            partial[gl_SubgroupID * ROWS + r] = s;
        }
    }
    shareSquares(squares);
    barrier();
#if defined(ROPE_EPILOGUE) || defined(GLU_OUT)
    // Every thread takes part in the shuffle; a pair's rows are threads 2i
    // and 2i + 1 (ROWS even), always one subgroup's (GLU_OUT: the gate's row
    // and the up's).
    float s = 0.0;
    if (tid < ROWS) {
        for (uint g = 0; g < gl_NumSubgroups; ++g) {
            s += partial[g * ROWS + tid];
        }
    }
    s *= inverseRms();
    float pairSum = subgroupShuffleXor(s, 1u);
#ifdef ROPE_EPILOGUE
    if (tid < ROWS && row0 + tid < p.rows) {
        ropeWrite(outBase, row0 + tid, s, pairSum);
    }
#else
    if (tid < ROWS && (tid & 1u) == 0u && row0 + tid < p.rows) {
        gluWrite(outBase, (row0 + tid) >> 1, s, pairSum);
    }
#endif
#else
    if (tid < ROWS && row0 + tid < p.rows) {
        float s = 0.0;
        for (uint g = 0; g < gl_NumSubgroups; ++g) {
            s += partial[g * ROWS + tid];
        }
        writeOut(outBase + (row0 + tid) * p.outStride, s * inverseRms());
    }
#endif
}

// x as the modes read it: the operand, or with X_GLU the SwiGLU of two
// vectors of it, silu(gate) * up (an LLM's feed-forward activation fused
// into its down projection), the gate xGateDelta elements from the up.

float xAt(uint base, uint i)
{
    uint e = base + i * p.xStride;
    float up = XLoad(X_TYPE, e);
    return X_GLU != 0 ? silu(XLoad(X_TYPE, uint(int(e) + p.xGateDelta))) * up : up;
}

vec4 xLoad4(uint e)
{
    vec4 up = XLoad4(X_TYPE, e);
    return X_GLU != 0 ? silu(XLoad4(X_TYPE, uint(int(e) + p.xGateDelta))) * up : up;
}

void xLoad8(uint e, out vec4 lo, out vec4 hi)
{
    XLoad8(X_TYPE, e, lo, hi);
    if (X_GLU != 0) {
        vec4 gateLo, gateHi;
        XLoad8(X_TYPE, uint(int(e) + p.xGateDelta), gateLo, gateHi);
        lo *= silu(gateLo);
        hi *= silu(gateHi);
    }
}

// x values of the unit starting at element k0 (Q4_0: elements k0..k0+3 and
// k0+16..k0+19 of a block, since a byte holds weights j and j + 16).
void loadXUnit(uint xBase, uint k0, out vec4 lo, out vec4 hi)
{
    hi = vec4(0);
    if (W_BASE == TYPE_Q4_0) {
        if (VEC_X != 0) {
            lo = xLoad4(xBase + k0);
            hi = xLoad4(xBase + k0 + 16u);
        } else {
            for (uint i = 0; i < 4; ++i) {
                lo[i] = xAt(xBase, k0 + i);
                hi[i] = xAt(xBase, k0 + 16u + i);
            }
        }
        return;
    }
    if (UNIT == 8) {
        if (VEC_X != 0) {
            xLoad8(xBase + k0, lo, hi);
        } else {
            for (uint i = 0; i < 4; ++i) {
                lo[i] = xAt(xBase, k0 + i);
                hi[i] = xAt(xBase, k0 + 4u + i);
            }
        }
        return;
    }
    if (VEC_X != 0) {
        lo = xLoad4(xBase + k0);
    } else {
        for (uint i = 0; i < 4; ++i) {
            lo[i] = xAt(xBase, k0 + i);
        }
    }
}

// The unit index u of a row: its first element, for loadXUnit.
uint unitStart(uint u)
{
    if (W_BASE == TYPE_Q8_0) {
        return u * 4u; // 8 units per block, contiguous
    }
    if (W_BASE == TYPE_Q4_0) {
        return (u >> 2) * 32u + (u & 3u) * 4u; // 4 units per block
    }
    return u * UNIT;
}

// NORM_X in the row mode: the x values of the unit starting at element k0
// (as loadXUnit laid them out) add their squares to `squares` and are
// multiplied by the norm's weights.
void normUnit(uint k0, inout vec4 lo, inout vec4 hi, inout float squares)
{
    squares += dot(lo, lo) + dot(hi, hi); // hi is 0 for 4-element units
    // (the second 4 elements: Q4_0's k0 + 16.., the next 4 of 8-element units)
    uint second = W_BASE == TYPE_Q4_0 ? 16u : 4u;
    uint e = p.normOffset + k0;
    if (NORM_VEC) {
        lo *= GLoad4(NORM_TYPE, e);
        if (W_BASE == TYPE_Q4_0 || UNIT == 8) {
            hi *= GLoad4(NORM_TYPE, e + second);
        }
    } else {
        for (uint i = 0; i < 4u; ++i) {
            lo[i] *= GLoad(NORM_TYPE, e + i);
            if (W_BASE == TYPE_Q4_0 || UNIT == 8) {
                hi[i] *= GLoad(NORM_TYPE, e + second + i);
            }
        }
    }
}

// The 4 quantized bytes of unit u of the row starting at weight rowStart.
uint quantWord(uint rowStart, uint u, out float d)
{
    uint perBlock = W_BASE == TYPE_Q8_0 ? 8u : 4u;
    uint dAt, qAt;
    q8BlockAt(W_TYPE, (rowStart >> 5) + u / perBlock, dAt, qAt);
    d = f16BitsToFloat(uint(W16[dAt]));
    uint q = qAt + (u % perBlock) * 2u;
    return uint(W16[q]) | (uint(W16[q + 1u]) << 16);
}

#ifdef INT_DOT
#extension GL_EXT_spirv_intrinsics : require
// OpSDot / OpSUDot on 4 packed 8-bit lanes (SPV_KHR_integer_dot_product;
// glslang 12 predates GL_EXT_integer_dot_product, so the instructions are
// spelled out).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dotPackedSS(uint a, uint b, spirv_literal uint packedFormat);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int dotPackedSU(uint signedA, uint unsignedB, spirv_literal uint packedFormat);

// Quantizes 4 activations to int8 with their own scale (returned).
uint quantize4(vec4 v, out float scale)
{
    float amax = max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w)));
    scale = amax / 127.0;
    float inv = amax > 0.0 ? 127.0 / amax : 0.0;
    ivec4 q = ivec4(round(v * inv));
    return uint(q.x & 255) | (uint(q.y & 255) << 8) | (uint(q.z & 255) << 16) | (uint(q.w & 255) << 24);
}
#endif

// A unit's 4 quantized bytes (scale d) against its x values.
float quantDot(uint word, float d, vec4 xlo, vec4 xhi)
{
    if (W_BASE == TYPE_Q8_0) {
        ivec4 q = ivec4(bitfieldExtract(int(word), 0, 8), bitfieldExtract(int(word), 8, 8),
                        bitfieldExtract(int(word), 16, 8), bitfieldExtract(int(word), 24, 8));
        return d * dot(vec4(q), xlo);
    }
    vec4 lo = vec4(word & 15u, (word >> 8) & 15u, (word >> 16) & 15u, word >> 24 & 15u) - 8.0;
    vec4 hi = vec4((word >> 4) & 15u, (word >> 12) & 15u, (word >> 20) & 15u, word >> 28) - 8.0;
    return d * (dot(lo, xlo) + dot(hi, xhi));
}

float rowModeUnit(uint wRow, uint u, vec4 xlo, vec4 xhi)
{
    if (W_QUANT) {
        float d;
        uint word = quantWord(wRow, u, d);
        return quantDot(word, d, xlo, xhi);
    }
    uint e = wRow + u * UNIT;
    if (UNIT == 8) {
        vec4 lo, hi;
        if (VEC_W != 0) {
            WLoad8(W_TYPE, e, lo, hi);
        } else {
            for (uint i = 0; i < 4; ++i) {
                lo[i] = WLoad(W_TYPE, e + i);
                hi[i] = WLoad(W_TYPE, e + 4u + i);
            }
        }
        return dot(lo, xlo) + dot(hi, xhi);
    }
    vec4 w;
    if (VEC_W != 0) {
        w = WLoad4(W_TYPE, e);
    } else {
        for (uint i = 0; i < 4; ++i) {
            w[i] = WLoad(W_TYPE, e + i);
        }
    }
    return dot(w, xlo);
}

void rowMode()
{
    uint batch = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * ROWS;
    uint xBase = p.xOffset + batch * p.xBatchStride;
    uint wBase = p.wOffset + batch * p.wBatchStride;
    uint outBase = p.outOffset + batch * p.outBatchStride;
    uint tid = gl_LocalInvocationID.x;

    float sums[ROWS];
    for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    // Units beyond k (only when k is not a multiple of the unit, float
    // weights) are handled element by element below.
    uint units = W_QUANT ? p.k / (W_BASE == TYPE_Q8_0 ? 4u : 8u) : p.k / UNIT;
    float squares = 0.0; // NORM_X: of the x elements this thread reads
    for (uint u = tid; u < units; u += WG) {
        vec4 xlo, xhi;
        loadXUnit(xBase, unitStart(u), xlo, xhi);
        if (NORM_X != 0) {
            normUnit(unitStart(u), xlo, xhi, squares);
        }
#ifdef INT_DOT
        float xScaleLo, xScaleHi = 0.0;
        uint qxLo = quantize4(xlo, xScaleLo);
        uint qxHi = W_BASE == TYPE_Q4_0 ? quantize4(xhi, xScaleHi) : 0u;
        // Q4_0 weights are q - 8: subtract 8 * sum(qx) once per unit.
        int sumLo = dotPackedSS(qxLo, 0x01010101u, 0);
        int sumHi = dotPackedSS(qxHi, 0x01010101u, 0);
#endif
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
            uint row = row0 + r;
            if (row >= p.rows) {
                break;
            }
            uint wRow = wBase + weightRow(row) * p.ldw;
#ifdef INT_DOT
            float d;
            uint word = quantWord(wRow, u, d);
            if (W_BASE == TYPE_Q8_0) {
                sums[r] += d * xScaleLo * float(dotPackedSS(word, qxLo, 0));
            } else {
                int lo = dotPackedSU(qxLo, word & 0x0F0F0F0Fu, 0) - 8 * sumLo;
                int hi = dotPackedSU(qxHi, (word >> 4) & 0x0F0F0F0Fu, 0) - 8 * sumHi;
                sums[r] += d * (xScaleLo * float(lo) + xScaleHi * float(hi));
            }
#else
            sums[r] += rowModeUnit(wRow, u, xlo, xhi);
#endif
        }
    }
    if (!W_QUANT) {
        for (uint kk = units * UNIT + tid; kk < p.k; kk += WG) {
            float x = xAt(xBase, kk);
            if (NORM_X != 0) {
                squares += x * x;
                x *= GLoad(NORM_TYPE, p.normOffset + kk);
            }
            for (uint r = 0; r < ROWS; ++r) {
                uint row = row0 + r;
                if (row < p.rows) {
                    sums[r] += x * WLoad(W_TYPE, wBase + weightRow(row) * p.ldw + kk);
                }
            }
        }
    }

    reduceAndWrite(sums, row0, outBase, squares);
}

// Loads step `t` of the ROWS rows into registers (16-byte chunks; zeros past
// the rows' ends).
void loadStage(uint t, uint row0, uint wBase, uint rowU4s)
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < STAGE_LOADS; ++i) {
        uint e = tid + i * WG;
        uint r = e / TILE_U4, q = e % TILE_U4;
        uint at = t * TILE_U4 + q;
        staged[i] = uvec4(0);
        if (r < ROWS && row0 + r < p.rows && at < rowU4s) {
            uint rowU4 = ((wBase + (row0 + r) * p.ldw) >> 5) * BLOCK_BYTES / 16u;
            staged[i] = W128[rowU4 + at];
        }
    }
}

void storeStage()
{
    uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0; i < STAGE_LOADS; ++i) {
        uint e = tid + i * WG;
        if (e < ROWS * TILE_U4) {
            uint base = (e / TILE_U4) * TILE_WORDS + (e % TILE_U4) * 4u;
            tile[base] = staged[i].x;
            tile[base + 1u] = staged[i].y;
            tile[base + 2u] = staged[i].z;
            tile[base + 3u] = staged[i].w;
        }
    }
}

// The 4 quantized bytes of unit u of the staged tile of row r, and their
// block's scale (blocks are 2-byte aligned: two words funnelled when needed).
uint stagedWord(uint r, uint u, out float d)
{
    uint block = u / UNITS_PER_BLOCK;
    uint dByte = block * BLOCK_BYTES;
    uint base = r * TILE_WORDS;
    d = f16BitsToFloat((tile[base + (dByte >> 2)] >> ((dByte & 2u) * 8u)) & 0xFFFFu);
    uint o = dByte + 2u + (u % UNITS_PER_BLOCK) * 4u;
    uint w = base + (o >> 2);
    return (o & 2u) != 0u ? (tile[w] >> 16) | (tile[w + 1u] << 16) : tile[w];
}

void stagedRowMode()
{
    uint batch = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * ROWS;
    uint xBase = p.xOffset + batch * p.xBatchStride;
    uint wBase = p.wOffset + batch * p.wBatchStride;
    uint outBase = p.outOffset + batch * p.outBatchStride;
    uint tid = gl_LocalInvocationID.x;
    uint rowBlocks = p.k >> 5;
    uint rowU4s = rowBlocks * BLOCK_BYTES / 16u;
    uint steps = (rowBlocks + TILE_BLOCKS - 1u) / TILE_BLOCKS;

    float sums[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    loadStage(0, row0, wBase, rowU4s);
    for (uint t = 0; t < steps; ++t) {
        barrier(); // the previous step's units are read
        storeStage();
        barrier();
        if (t + 1u < steps) {
            loadStage(t + 1u, row0, wBase, rowU4s);
        }
        for (uint u = tid; u < TILE_UNITS; u += WG) {
            uint unit = t * TILE_UNITS + u; // of the row
            if (unit >= rowBlocks * UNITS_PER_BLOCK) {
                break;
            }
            vec4 xlo, xhi;
            loadXUnit(xBase, unitStart(unit), xlo, xhi);
#ifdef INT_DOT
            float xScaleLo, xScaleHi = 0.0;
            uint qxLo = quantize4(xlo, xScaleLo);
            uint qxHi = W_BASE == TYPE_Q4_0 ? quantize4(xhi, xScaleHi) : 0u;
            int sumLo = dotPackedSS(qxLo, 0x01010101u, 0);
            int sumHi = dotPackedSS(qxHi, 0x01010101u, 0);
#endif
            [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                float d;
                uint word = stagedWord(r, u, d);
#ifdef INT_DOT
                if (W_BASE == TYPE_Q8_0) {
                    sums[r] += d * xScaleLo * float(dotPackedSS(word, qxLo, 0));
                } else {
                    int lo = dotPackedSU(qxLo, word & 0x0F0F0F0Fu, 0) - 8 * sumLo;
                    int hi = dotPackedSU(qxHi, (word >> 4) & 0x0F0F0F0Fu, 0) - 8 * sumHi;
                    sums[r] += d * (xScaleLo * float(lo) + xScaleHi * float(hi));
                }
#else
                sums[r] += quantDot(word, d, xlo, xhi);
#endif
            }
        }
    }
    reduceAndWrite(sums, row0, outBase, 0.0);
}

// Row mode for the block formats beyond Q8_0/Q4_0 (QuantBlocks.glsl): a
// thread takes a unit of 32 weights (a 32-weight block, or an eighth of a
// 256-weight super-block; neighbouring threads read neighbouring bytes),
// reads its bytes once with 8- or 16-byte loads (Q4_K, Q5_K: 16-byte
// aligned blocks in 16-byte loads) and applies each sub-block's scale and
// minimum once to the dot products of its quants with x:
// sum(w x) = d sc sum(q x) - dmin m sum(x). The unit's 32 x values (4 runs
// of 8) and their sums serve all ROWS rows.
const bool W_BLOCK_UNITS = W_QUANT && !W_UNITS;
const bool W_SUPER = W_TYPE == TYPE_Q2_K || W_TYPE == TYPE_Q3_K || W_TYPE == TYPE_Q4_K || W_TYPE == TYPE_Q5_K ||
                     W_TYPE == TYPE_Q6_K || W_TYPE == TYPE_IQ4_XS;
const uint UNIT_BLOCK_SHIFT = W_SUPER ? 8u : 5u; // log2 of the weights per block
const uint BLOCK_UNITS = W_SUPER ? 8u : 1u; // units of 32 weights per block
const uint UNIT_BLOCK_BYTES = W_TYPE == TYPE_Q2_K ? 84u : W_TYPE == TYPE_Q3_K ? 110u : W_TYPE == TYPE_Q4_K ? 144u :
                              W_TYPE == TYPE_Q5_K ? 176u : W_TYPE == TYPE_Q6_K ? 210u : W_TYPE == TYPE_IQ4_XS ? 136u :
                              W_TYPE == TYPE_Q4_1 ? 20u : W_TYPE == TYPE_Q5_0 ? 22u : W_TYPE == TYPE_Q5_1 ? 24u : 18u;

// 8 bytes from byte `at` (even) of W, as two words; never reads past
// at + 7 (a block's last bytes may end the binding).
uvec2 wBytes8(uint at)
{
    if ((at & 2u) == 0u) {
        return uvec2(W32[at >> 2], W32[(at >> 2) + 1u]);
    }
    uint h = at >> 1;
    uint middle = W32[(at + 2u) >> 2];
    return uvec2(uint(W16[h]) | (middle << 16), (middle >> 16) | (uint(W16[h + 3u]) << 16));
}

vec4 byteLanes(uint w) { return vec4(w & 255u, (w >> 8) & 255u, (w >> 16) & 255u, w >> 24); }
vec4 iq4Lanes(uint w) { return iq4Levels(uvec4(w & 15u, (w >> 8) & 15u, (w >> 16) & 15u, (w >> 24) & 15u)); }
// Bits 0..3 of `bits`, one per byte.
uint spreadBits4(uint bits) { return (bits & 1u) | ((bits & 2u) << 7) | ((bits & 4u) << 14) | ((bits & 8u) << 21); }

// Byte i of the 12 scale bytes of a Q4_K/Q5_K block (words 1..3 of its
// first 16 bytes).
uint kScaleByte(uvec4 head, uint i) { return (head[1u + (i >> 2)] >> ((i & 3u) * 8u)) & 255u; }

// The 6-bit scale and minimum of sub-block sb of a Q4_K/Q5_K block (ggml's
// get_scale_min_k4, as quantScaleMinK4).
void kScaleMin(uvec4 head, uint sb, out float sc, out float mn)
{
    if (sb < 4u) {
        sc = float(kScaleByte(head, sb) & 63u);
        mn = float(kScaleByte(head, sb + 4u) & 63u);
    } else {
        uint packed = kScaleByte(head, sb + 4u);
        sc = float((packed & 15u) | ((kScaleByte(head, sb - 4u) >> 6) << 4));
        mn = float((packed >> 4) | ((kScaleByte(head, sb) >> 6) << 4));
    }
}

// The 4 runs of 8 weights (offsets within the block) of unit `part`.
uint unitRunStart(uint part, uint run)
{
    if (W_TYPE == TYPE_Q2_K || W_TYPE == TYPE_Q3_K || W_TYPE == TYPE_Q6_K) {
        // n = part / 4, l0 = (part % 4) * 8; run j: 128 n + 32 j + l0
        return (part >> 2) * 128u + run * 32u + (part & 3u) * 8u;
    }
    if (W_TYPE == TYPE_Q4_K || W_TYPE == TYPE_Q5_K) {
        // c = part / 2, h = part % 2: low nibbles at 64 c + 16 h (+8), high at +32
        return (part >> 1) * 64u + (run >> 1) * 32u + (part & 1u) * 16u + (run & 1u) * 8u;
    }
    return part * 32u + run * 8u; // IQ4_XS sub-block `part`; the 32-weight blocks
}

// sum over the unit of w * x, for the block at byte `at`.
float unitDot(uint at, uint part, vec4 xs[8], vec4 xsum)
{
    if (W_TYPE == TYPE_Q2_K || W_TYPE == TYPE_Q3_K || W_TYPE == TYPE_Q6_K) {
        uint n = part >> 2, l0 = (part & 3u) * 8u;
        float total = 0.0;
        if (W_TYPE == TYPE_Q6_K) {
            uvec2 la = wBytes8(at + 64u * n + l0);
            uvec2 lb = wBytes8(at + 64u * n + 32u + l0);
            uvec2 qh = wBytes8(at + 128u + 32u * n + l0);
            uvec2 scales = wBytes8(at + 192u + 8u * n);
            float d = quantHalf(at + 208u);
            [[unroll]] for (uint g = 0; g < 4u; ++g) {
                uvec2 ql = (g & 1u) == 0u ? la : lb;
                uint shift = (g >> 1) * 4u;
                uint q0 = ((ql.x >> shift) & 0x0F0F0F0Fu) | (((qh.x >> (2u * g)) & 0x03030303u) << 4);
                uint q1 = ((ql.y >> shift) & 0x0F0F0F0Fu) | (((qh.y >> (2u * g)) & 0x03030303u) << 4);
                float dotQ = dot(byteLanes(q0), xs[2u * g]) + dot(byteLanes(q1), xs[2u * g + 1u]);
                uint index = (l0 >> 4) + 2u * g;
                float sc = float(bitfieldExtract(int(scales[index >> 2]), int((index & 3u) * 8u), 8));
                total += d * sc * (dotQ - 32.0 * xsum[g]);
            }
        } else if (W_TYPE == TYPE_Q2_K) {
            uvec2 q = wBytes8(at + 16u + 32u * n + l0);
            uvec2 scales = wBytes8(at + 8u * n);
            vec2 dm = unpackHalf2x16(quantWord(at + 80u));
            [[unroll]] for (uint j = 0; j < 4u; ++j) {
                uint q0 = (q.x >> (2u * j)) & 0x03030303u, q1 = (q.y >> (2u * j)) & 0x03030303u;
                float dotQ = dot(byteLanes(q0), xs[2u * j]) + dot(byteLanes(q1), xs[2u * j + 1u]);
                uint index = 2u * j + (l0 >> 4);
                uint sc = (scales[index >> 2] >> ((index & 3u) * 8u)) & 255u;
                total += dm.x * float(sc & 15u) * dotQ - dm.y * float(sc >> 4) * xsum[j];
            }
        } else { // Q3_K: q - 4 where the hmask bit is clear
            uvec2 hm = wBytes8(at + l0);
            uvec2 q = wBytes8(at + 32u + 32u * n + l0);
            uvec2 scalesLow = wBytes8(at + 96u);
            uint scalesHigh = quantWord(at + 104u);
            float d = quantHalf(at + 108u);
            [[unroll]] for (uint j = 0; j < 4u; ++j) {
                uint bit = 4u * n + j;
                uint q0 = ((q.x >> (2u * j)) & 0x03030303u) | (((hm.x >> bit) & 0x01010101u) << 2);
                uint q1 = ((q.y >> (2u * j)) & 0x03030303u) | (((hm.y >> bit) & 0x01010101u) << 2);
                float dotQ = dot(byteLanes(q0), xs[2u * j]) + dot(byteLanes(q1), xs[2u * j + 1u]);
                uint i = 8u * n + 2u * j + (l0 >> 4);
                uint low = (scalesLow[(i & 7u) >> 2] >> ((i & 3u) * 8u + (i >> 3) * 4u)) & 15u;
                uint high = (scalesHigh >> ((i & 3u) * 8u + 2u * (i >> 2))) & 3u;
                total += d * float(int(low | (high << 4)) - 32) * (dotQ - 4.0 * xsum[j]);
            }
        }
        return total;
    }
    if (W_TYPE == TYPE_Q4_K || W_TYPE == TYPE_Q5_K) {
        bool five = W_TYPE == TYPE_Q5_K;
        uint c = part >> 1, h = part & 1u;
        uvec4 head = W128[at >> 4];
        vec2 dm = unpackHalf2x16(head.x);
        uvec4 q = W128[(at + (five ? 48u : 16u) + 32u * c + 16u * h) >> 4];
        uvec4 qh = five ? W128[(at + 16u + 16u * h) >> 4] : uvec4(0);
        float dot0 = 0.0, dot1 = 0.0;
        [[unroll]] for (uint j = 0; j < 4u; ++j) {
            uint lo = (q[j] & 0x0F0F0F0Fu) | (((qh[j] >> (2u * c)) & 0x01010101u) << 4);
            uint hi = ((q[j] >> 4) & 0x0F0F0F0Fu) | (((qh[j] >> (2u * c + 1u)) & 0x01010101u) << 4);
            dot0 += dot(byteLanes(lo), xs[j]);
            dot1 += dot(byteLanes(hi), xs[4u + j]);
        }
        float sc[2], mn[2];
        [[unroll]] for (uint t = 0; t < 2u; ++t) {
            kScaleMin(head, 2u * c + t, sc[t], mn[t]);
        }
        return dm.x * (sc[0] * dot0 + sc[1] * dot1) - dm.y * (mn[0] * (xsum.x + xsum.y) + mn[1] * (xsum.z + xsum.w));
    }
    // The rest hold their unit's 32 quants as 16 bytes: weights 0..7 and
    // 8..15 in the low nibbles of bytes 0..7 and 8..15, 16..31 in the high
    // nibbles (IQ4_XS: of its sub-block `part`).
    uint qs = W_TYPE == TYPE_IQ4_XS ? 8u + 16u * part : W_TYPE == TYPE_Q4_1 ? 4u : W_TYPE == TYPE_Q5_0 ? 6u :
              W_TYPE == TYPE_Q5_1 ? 8u : 2u;
    uvec2 qa = wBytes8(at + qs), qb = wBytes8(at + qs + 8u);
    uvec4 nibbles[2] = { uvec4(qa.x, qa.y, qb.x, qb.y) & 0x0F0F0F0Fu, (uvec4(qa.x, qa.y, qb.x, qb.y) >> 4) & 0x0F0F0F0Fu };
    if (W_TYPE == TYPE_IQ4_XS || W_TYPE == TYPE_IQ4_NL) {
        float dl;
        if (W_TYPE == TYPE_IQ4_XS) {
            uvec2 head = wBytes8(at);
            uint ls = ((head.y >> (8u * (part >> 1) + 4u * (part & 1u))) & 15u) | (((head.x >> (16u + 2u * part)) & 3u) << 4);
            dl = unpackHalf2x16(head.x).x * float(int(ls) - 32);
        } else {
            dl = quantHalf(at);
        }
        float total = 0.0;
        [[unroll]] for (uint i = 0; i < 8u; ++i) {
            total += dot(iq4Lanes(nibbles[i >> 2][i & 3u]), xs[i]);
        }
        return dl * total;
    }
    if (W_TYPE == TYPE_Q5_0 || W_TYPE == TYPE_Q5_1) { // the 5th bit of weight j is bit j of qh
        uint qh = quantWord(at + (W_TYPE == TYPE_Q5_0 ? 2u : 4u));
        [[unroll]] for (uint i = 0; i < 8u; ++i) {
            nibbles[i >> 2][i & 3u] |= spreadBits4(qh >> (4u * i)) << 4;
        }
    }
    float dotQ = 0.0;
    [[unroll]] for (uint i = 0; i < 8u; ++i) {
        dotQ += dot(byteLanes(nibbles[i >> 2][i & 3u]), xs[i]);
    }
    float sumX = xsum.x + xsum.y + xsum.z + xsum.w;
    if (W_TYPE == TYPE_Q5_0) {
        return quantHalf(at) * (dotQ - 16.0 * sumX);
    }
    vec2 dm = unpackHalf2x16(quantWord(at)); // Q4_1, Q5_1: w = d q + m
    return dm.x * dotQ + dm.y * sumX;
}

void unitRowMode()
{
    uint batch = gl_WorkGroupID.y;
    uint row0 = gl_WorkGroupID.x * ROWS;
    uint xBase = p.xOffset + batch * p.xBatchStride;
    uint wBase = p.wOffset + batch * p.wBatchStride;
    uint outBase = p.outOffset + batch * p.outBatchStride;
    uint tid = gl_LocalInvocationID.x;

    float sums[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    uint units = (p.k >> UNIT_BLOCK_SHIFT) * BLOCK_UNITS;
    for (uint u = tid; u < units; u += WG) {
        uint block = u / BLOCK_UNITS, part = u % BLOCK_UNITS;
        vec4 xs[8];
        vec4 xsum; // per run of 8
        [[unroll]] for (uint run = 0; run < 4u; ++run) {
            uint k0 = (block << UNIT_BLOCK_SHIFT) + unitRunStart(part, run);
            if (VEC_X != 0) {
                xs[2u * run] = xLoad4(xBase + k0);
                xs[2u * run + 1u] = xLoad4(xBase + k0 + 4u);
            } else {
                for (uint i = 0; i < 4; ++i) {
                    xs[2u * run][i] = xAt(xBase, k0 + i);
                    xs[2u * run + 1u][i] = xAt(xBase, k0 + 4u + i);
                }
            }
            xsum[run] = dot(xs[2u * run] + xs[2u * run + 1u], vec4(1.0));
        }
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
            uint row = row0 + r;
            if (row >= p.rows) {
                break;
            }
            uint at = (((wBase + row * p.ldw) >> UNIT_BLOCK_SHIFT) + block) * UNIT_BLOCK_BYTES;
            sums[r] += unitDot(at, part, xs, xsum);
        }
    }
    reduceAndWrite(sums, row0, outBase, 0.0);
}

#ifdef INT_DOT
// The quantized-x row mode (QX_BLOCKS; Q8_0/Q4_0 rows of whole 16-byte
// chunks, Q4_K and Q5_K rows; integer dot products). The per-unit modes above spend ~30
// instructions per 4 quantized bytes (x quantized per unit and row step, the
// scale re-extracted for every unit); here the work per weight byte is cut:
//  - each workgroup quantizes x once per chunk of QX_BLOCKS blocks into
//    shared memory: int8 values with one scale per 32 elements (and, for
//    Q4_0's q - 8, 8 * scale * sum(q)), a thread per block, shared by the
//    ROWS rows;
//  - the ROWS rows get WG / ROWS threads each (a row's threads neighbours, so
//    a subgroup reads long contiguous runs); a thread takes whole groups of 8
//    blocks of its row (144 or 272 bytes: 9 or 17 16-byte loads), so every
//    block's scale and quants sit at fixed places in its registers;
//  - a block is 8 packed dot products against the shared x, its two scales
//    applied once: about 35 instructions per Q4_0 block-row.
// Partial sums meet in a shared-memory tree over each row's threads.
// Q4_K and Q5_K take it too: a group is then one super-block (144 or 176
// bytes: 9 or 11 16-byte loads), its 8 sub-blocks of 32 weights against the
// 8 x blocks.
const bool W_QX = W_UNITS || W_TYPE == TYPE_Q4_K || W_TYPE == TYPE_Q5_K;
const uint QX_GROUPS = QX_BLOCKS >= 8u ? QX_BLOCKS / 8u : 1u;
// 8 blocks (a super-block) in 16-byte chunks
const uint GROUP_U4 = W_BASE == TYPE_Q8_0 ? 17u : (W_TYPE == TYPE_Q5_K ? 11u : 9u);
// Padded so that neighbouring threads (neighbouring groups) read different
// banks: 17 uvec4 of int8 x per group, 9 (scale, offset) pairs.
const uint QX_GROUP_STRIDE = 17u;
const uint QS_GROUP_STRIDE = 9u;
shared uvec4 qx[QX_BLOCKS != 0 ? QX_GROUPS * QX_GROUP_STRIDE : 1u];
shared vec2 qxScale[QX_BLOCKS != 0 ? QX_GROUPS * QS_GROUP_STRIDE : 1u];

// 32 values as one int8 block: their int8 values q = round(v / amax * 127)
// (4 a word), and (scale, scale * the sum of q), scale = amax / 127.
void quantizeValues(vec4 v[8], out uvec4 qa, out uvec4 qb, out vec2 scaleSum)
{
    vec4 m = abs(v[0]);
    [[unroll]] for (uint j = 1; j < 8u; ++j) {
        m = max(m, abs(v[j]));
    }
    float amax = max(max(m.x, m.y), max(m.z, m.w));
    float inv = amax > 0.0 ? 1.0 / amax : 0.0;
    uint q[8];
    int sum = 0;
    [[unroll]] for (uint j = 0; j < 8u; ++j) {
        q[j] = packSnorm4x8(v[j] * inv); // round(x / amax * 127)
        sum += dotPackedSS(q[j], 0x01010101u, 0);
    }
    qa = uvec4(q[0], q[1], q[2], q[3]);
    qb = uvec4(q[4], q[5], q[6], q[7]);
    float scale = amax / 127.0;
    scaleSum = vec2(scale, scale * float(sum));
}

// Quantizes x block `block` (of the row): its 32 int8 values (qa, qb) and
// (scale, scale * the sum of the int8 values); with NORM_X, x times the
// norm's weights, and returns the sum of the squares of x (0 without).
float quantizeBlock(uint xBase, uint block, out uvec4 qa, out uvec4 qb, out vec2 scaleSum)
{
    vec4 v[8];
    uint k0 = block * 32u;
    [[unroll]] for (uint j = 0; j < 8u; ++j) {
        if (VEC_X != 0) {
            v[j] = xLoad4(xBase + k0 + 4u * j);
        } else {
            for (uint i = 0; i < 4u; ++i) {
                v[j][i] = xAt(xBase, k0 + 4u * j + i);
            }
        }
    }
    float squares = 0.0;
    if (NORM_X != 0) {
        [[unroll]] for (uint j = 0; j < 8u; ++j) {
            squares += dot(v[j], v[j]);
            uint e = p.normOffset + k0 + 4u * j;
            if (NORM_VEC) {
                v[j] *= GLoad4(NORM_TYPE, e);
            } else {
                for (uint i = 0; i < 4u; ++i) {
                    v[j][i] *= GLoad(NORM_TYPE, e + i);
                }
            }
        }
    }
    quantizeValues(v, qa, qb, scaleSum);
    return squares;
}

// x's sum enters the products of weights with offsets (Q4_0's q - 8,
// Q4_K's minimums; Q8_0 has none): the factor of scale * sum in qxScale.
const float X_SUM_FACTOR = W_BASE == TYPE_Q4_0 ? 8.0 : (W_BASE == TYPE_Q8_0 ? 0.0 : 1.0);

// Where the x pass (and quantizeC) puts block `block` of a row of `blocks`
// blocks from word `base`: the blocks' int8 values (2 uvec4 each), then
// their (scale, scale * sum) pairs; `base` a multiple of 4 words. qxScaleAt:
// of the product's x, k / 32 blocks.
uint quantsAt(uint base, uint block) { return base / 4u + 2u * block; }
uint scaleAt(uint base, uint blocks, uint block) { return (base + blocks * 8u) / 2u + block; }
uint qxScaleAt(uint base, uint block) { return scaleAt(base, p.k >> 5, block); }

#ifdef GLU_OUT

// GLU_QUANTIZE, once the workgroup has written all its outputs: each of its
// tiles (ROWS / 2 outputs, a divisor of 32) counts its outputs into its
// block's counter, and the tile that completes a block quantizes it into
// the words after C's row of rows / 2 elements, laid out as the x pass lays
// out x (quantsAt, scaleAt). Counting once at the end, not as each row is
// written: a fence waits for the thread's loads in flight, and one per
// tile stalled the loop's prefetch (the product took 45 µs a layer against
// 30 on an H100, docs/performance.md). The memory model is
// AttentionMerge.glsl's (GLSL without the Vulkan memory model: `coherent`
// C, memoryBarrierBuffer a device-scope fence): every invocation fences
// after its writes and the workgroup barrier orders them before any of its
// counts; the tile that reads 32 - its count (every other output of the
// block written, in the counter's modification order) fences after its
// atomic before it reads the block back, and sets the counter to 0 for the
// next dispatch (no one else touches it in this one).
void gluFinish(uint outBase)
{
    memoryBarrierBuffer();
    barrier();
    const uint HALF = ROWS / 2u;
    uint n = p.rows / 2u;
    uint tiles = (p.rows + ROWS - 1u) / ROWS;
    for (uint tile = gl_WorkGroupID.x + gl_LocalInvocationID.x * gl_NumWorkGroups.x; tile < tiles;
         tile += WG * gl_NumWorkGroups.x) {
        uint first = tile * HALF;
        uint count = min(HALF, n - first);
        uint block = first >> 5;
        memoryBarrierBuffer();
        if (atomicAdd(gluCount[block], count) + count != 32u) {
            continue;
        }
        memoryBarrierBuffer();
        vec4 v[8];
        uint at = outBase + block * 32u;
        [[unroll]] for (uint j = 0; j < 8u; ++j) {
            // (quantizeC takes f32 C only, its row a multiple of 4 elements from 0.)
            v[j] = vec4(Out32[at + 4u * j], Out32[at + 4u * j + 1u], Out32[at + 4u * j + 2u], Out32[at + 4u * j + 3u]);
        }
        uvec4 qa, qb;
        vec2 scaleSum;
        quantizeValues(v, qa, qb, scaleSum);
        uint qBase = outBase + n;
        OutQ128[quantsAt(qBase, block)] = qa;
        OutQ128[quantsAt(qBase, block) + 1u] = qb;
        OutQ64[scaleAt(qBase, n >> 5, block)] = floatBitsToUint(scaleSum);
        atomicExchange(gluCount[block], 0u);
    }
}
#endif

// Quantizes x block `block` (of the row) into slot `slot` of the chunk
// (QX_SOURCE 2: copies it from the x pass's output) and returns the sum of
// the squares of x with NORM_X (0 without).
float quantizeXBlock(uint xBase, uint block, uint slot)
{
    uvec4 qa, qb;
    vec2 scaleSum;
    float squares = 0.0;
    if (QX_SOURCE == 2) {
        qa = X128[quantsAt(xBase, block)];
        qb = X128[quantsAt(xBase, block) + 1u];
        scaleSum = uintBitsToFloat(X64[qxScaleAt(xBase, block)]);
    } else {
        squares = quantizeBlock(xBase, block, qa, qb, scaleSum);
    }
    uint g = slot >> 3, i = slot & 7u;
    qx[g * QX_GROUP_STRIDE + 2u * i] = qa;
    qx[g * QX_GROUP_STRIDE + 2u * i + 1u] = qb;
    qxScale[g * QS_GROUP_STRIDE + i] = vec2(scaleSum.x, X_SUM_FACTOR * scaleSum.y);
    return squares;
}

// QX_SOURCE 1: block gl_GlobalInvocationID.x of x quantized into binding 2,
// batch b's blocks from word outOffset + b * outBatchStride.
void qxPass()
{
    uint block = gl_GlobalInvocationID.x;
    if (block >= (p.k >> 5)) {
        return;
    }
    uint batch = gl_WorkGroupID.y;
    uint outBase = p.outOffset + batch * p.outBatchStride;
    uvec4 qa, qb;
    vec2 scaleSum;
    quantizeBlock(p.xOffset + batch * p.xBatchStride, block, qa, qb, scaleSum);
    OutQ128[quantsAt(outBase, block)] = qa;
    OutQ128[quantsAt(outBase, block) + 1u] = qb;
    OutQ64[qxScaleAt(outBase, block)] = floatBitsToUint(scaleSum);
}


// Word `at` (a byte offset, even) of a group held as 16-byte chunks: two
// halves funnelled together when it is not word aligned (`at` is a
// compile-time constant once the loops are unrolled).
uint groupWord(uvec4 w[GROUP_U4], uint at)
{
    uint i = at >> 2;
    uint lo = w[i >> 2][i & 3u];
    if ((at & 2u) == 0u) {
        return lo;
    }
    uint j = i + 1u;
    return (lo >> 16) | (w[j >> 2][j & 3u] << 16);
}

// TIMING_PART 3's stand-in for a dot product: a value that needs every
// word loaded (so no load is dropped) and no arithmetic to speak of.
uint wordsXor(uvec4 w) { return w.x ^ w.y ^ w.z ^ w.w; }

// sum over the 8 blocks of group slot `g` of the chunk of w * x (x as
// quantized).
float qxGroupDot(uvec4 w[GROUP_U4], uint g)
{
    float acc = 0.0;
    if (TIMING_PART == 3) {
        uint h = 0u;
        [[unroll]] for (uint j = 0; j < GROUP_U4; ++j) {
            h ^= wordsXor(w[j]);
        }
        return float(h & 0xFFu);
    }
    if (W_TYPE == TYPE_Q4_K || W_TYPE == TYPE_Q5_K) {
        // sum(w x) = d sc sum(q x) - dmin m sum(x) per sub-block; chunk c of
        // the 128 quant bytes holds sub-block 2c in its low nibbles and
        // 2c + 1 in its high ones (Q5_K: their 5th bits are bits 2c and
        // 2c + 1 of the 32 qh bytes, 16-bytes chunks 1 and 2).
        bool five = W_TYPE == TYPE_Q5_K;
        uint qs = five ? 3u : 1u; // the 16-byte chunk of the first quants
        vec2 dm = unpackHalf2x16(w[0].x);
        [[unroll]] for (uint c = 0; c < 4u; ++c) {
            int dotLo = 0, dotHi = 0;
            [[unroll]] for (uint j = 0; j < 8u; ++j) {
                uint q = w[qs + 2u * c + (j >> 2)][j & 3u];
                uint lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
                if (five) {
                    uint h = w[1u + (j >> 2)][j & 3u];
                    lo |= ((h >> (2u * c)) & 0x01010101u) << 4;
                    hi |= ((h >> (2u * c + 1u)) & 0x01010101u) << 4;
                }
                uint e = g * QX_GROUP_STRIDE + 4u * c + (j >> 2);
                dotLo += dotPackedSU(qx[e][j & 3u], lo, 0);
                dotHi += dotPackedSU(qx[e + 2u][j & 3u], hi, 0);
            }
            vec2 sLo = qxScale[g * QS_GROUP_STRIDE + 2u * c];
            vec2 sHi = qxScale[g * QS_GROUP_STRIDE + 2u * c + 1u];
            float scLo, mnLo, scHi, mnHi;
            kScaleMin(w[0], 2u * c, scLo, mnLo);
            kScaleMin(w[0], 2u * c + 1u, scHi, mnHi);
            acc += dm.x * (scLo * sLo.x * float(dotLo) + scHi * sHi.x * float(dotHi)) -
                   dm.y * (mnLo * sLo.y + mnHi * sHi.y);
        }
        return acc;
    }
    [[unroll]] for (uint i = 0; i < 8u; ++i) {
        // Block i's scale and the byte where its quants start: grouped, the
        // 8 scales fill the first chunk and the quants follow, aligned.
        uint at = W_GROUPED ? 16u + i * (BLOCK_BYTES - 2u) - 2u : i * BLOCK_BYTES;
        uint dWord = W_GROUPED ? w[0][i >> 1] : w[at >> 4][(at >> 2) & 3u];
        bool dHigh = W_GROUPED ? (i & 1u) != 0u : (at & 2u) != 0u;
        float d = dHigh ? unpackHalf2x16(dWord).y : unpackHalf2x16(dWord).x;
        uvec4 xa = qx[g * QX_GROUP_STRIDE + 2u * i];
        uvec4 xb = qx[g * QX_GROUP_STRIDE + 2u * i + 1u];
        vec2 s = qxScale[g * QS_GROUP_STRIDE + i];
        int dotQ = 0;
        if (W_BASE == TYPE_Q8_0) {
            [[unroll]] for (uint j = 0; j < 4u; ++j) {
                dotQ += dotPackedSS(groupWord(w, at + 2u + 4u * j), xa[j], 0);
                dotQ += dotPackedSS(groupWord(w, at + 18u + 4u * j), xb[j], 0);
            }
        } else { // byte j holds weights j (low nibble) and j + 16 (high)
            [[unroll]] for (uint j = 0; j < 4u; ++j) {
                uint q = groupWord(w, at + 2u + 4u * j);
                dotQ += dotPackedSU(xa[j], q & 0x0F0F0F0Fu, 0);
                dotQ += dotPackedSU(xb[j], (q >> 4) & 0x0F0F0F0Fu, 0);
            }
        }
        acc += d * (s.x * float(dotQ) - s.y);
    }
    return acc;
}

// The 16-byte chunk where row `row` of the weights starts (rows of whole
// groups of 256 weights).
uint rowChunk(uint wBase, uint row) { return ((wBase + weightRow(row) * p.ldw) >> 8) * GROUP_U4; }

void loadGroup(uint rowU4, uint group, out uvec4 w[GROUP_U4])
{
    [[unroll]] for (uint j = 0; j < GROUP_U4; ++j) {
        w[j] = W128[rowU4 + group * GROUP_U4 + j];
    }
}

// A row's first thread holds the sum of its TPR threads' acc (TPR a power
// of two). Where a row's threads are one subgroup's neighbours (TPR <= the
// subgroup size and the workgroup of whole subgroups: qxThread numbers the
// threads so), the sums meet in subgroupAdds, one per row of the subgroup,
// with no barrier, so that the subgroups of a workgroup run apart; else in a
// shared-memory tree (barriers: call it in workgroup-uniform control flow).
bool qxSubgroupRows(uint tpr) { return tpr <= gl_SubgroupSize && WG % gl_SubgroupSize == 0u; }
uint qxThread(uint tpr)
{
    return qxSubgroupRows(tpr) ? gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID : gl_LocalInvocationID.x;
}
float qxRowSum(float acc, uint tpr)
{
    if (qxSubgroupRows(tpr)) {
        uint slot = gl_SubgroupInvocationID / tpr;
        float sum = 0.0;
        for (uint j = 0u; j < gl_SubgroupSize / tpr; ++j) {
            float s = subgroupAdd(slot == j ? acc : 0.0);
            sum = slot == j ? s : sum;
        }
        return sum;
    }
    // (After the tree's last barrier each thread reads only its own entry,
    // which only it writes next.)
    uint t = gl_LocalInvocationID.x, lane = t % tpr;
    partial[t] = acc;
    barrier();
    for (uint stride = tpr / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            partial[t] += partial[t + stride];
        }
        barrier();
    }
    return partial[t];
}

// A row's last step in the quantized-x modes: its threads' sums meet and
// its first thread writes it (ROPE_EPILOGUE: with its pair's sum, that of
// the row whose threads are TPR further on or back). Called in
// workgroup-uniform control flow (the pair's sum may come through shared
// memory, between barriers).
void finishRow(float acc, uint tpr, uint lane, bool live, uint outBase, uint row, float invRms)
{
    float sum = qxRowSum(acc, tpr);
#if defined(ROPE_EPILOGUE) || defined(GLU_OUT)
    float pairSum;
    if (qxSubgroupRows(tpr) && 2u * tpr <= gl_SubgroupSize) {
        pairSum = subgroupShuffleXor(sum, tpr);
    } else {
        uint t = qxThread(tpr);
        barrier(); // every thread has read its row sum (the tree's entries)
        partial[t] = sum;
        barrier();
        pairSum = partial[t ^ tpr];
        barrier(); // read before the next tile writes partial
    }
#ifdef ROPE_EPILOGUE
    if (lane == 0u && live) {
        ropeWrite(outBase, row, sum * invRms, pairSum * invRms);
    }
#else
    if (lane == 0u && live && (row & 1u) == 0u) {
        gluWrite(outBase, row >> 1, sum * invRms, pairSum * invRms);
    }
#endif
#else
    if (lane == 0u && live) {
        writeOut(outBase + row * p.outStride, sum * invRms);
    }
#endif
}

// The coalesced form of the loop below (QX_STAGE; x whole, each row's TPR
// threads neighbours in one subgroup). Thread `lane` of a row takes group
// `lane` of each round of TPR groups, whose 16-byte chunks lie at a stride
// of a group (144 bytes for Q4_0): loaded straight, a subgroup's load
// touches a cache line per thread. Here the row's threads load the round's
// chunks side by side (chunk lane + TPR * i), store them into their
// subgroup's part of wStage and read back their own group's; the next
// round's loads (or the next tile's first) are in flight during the dot
// products. Measured slower than the straight loads on the H100 (the raw
// chunks of the next round held beside the current group: 72 registers
// for Q4_0, 136 for Q8_0; docs/matmul-tuning.md), so no device takes it by
// default.
shared uvec4 wStage[QX_STAGE != 0 ? WG * GROUP_U4 : 1u];

// Chunks lane, lane + TPR, ... of round `round` (groups round * TPR ..) of
// the row whose first chunk is rowU4, those inside its `groups` groups.
void loadRound(uint rowU4, bool live, uint round, uint lane, uint tpr, uint groups, out uvec4 raw[GROUP_U4])
{
    uint first = round * tpr;
    uint count = live && first < groups ? min(tpr, groups - first) * GROUP_U4 : 0u;
    [[unroll]] for (uint i = 0; i < GROUP_U4; ++i) {
        uint c = lane + tpr * i;
        if (c < count) {
            raw[i] = W128[rowU4 + first * GROUP_U4 + c];
        }
    }
}

void qxStagedRows(uint xBase, uint wBase, uint outBase, uint groups, uint tiles)
{
    const uint TPR = WG / ROWS;
    uint t = qxThread(TPR); // subgroup-major: a row's threads are neighbours
    uint r = t / TPR, lane = t % TPR;
    uint rowBase = (t - lane) * GROUP_U4; // the row's part of wStage
    uint rounds = (groups + TPR - 1u) / TPR;
    uint step = gl_NumWorkGroups.x * ROWS;
    uint row = gl_WorkGroupID.x * ROWS + r;
    uvec4 raw[GROUP_U4];
    // The first round's loads are in flight while x is quantized.
    loadRound(rowChunk(wBase, row), row < p.rows, 0u, lane, TPR, groups, raw);
    float squares = 0.0;
    for (uint b = gl_LocalInvocationID.x; b < groups * 8u; b += WG) {
        squares += quantizeXBlock(xBase, b, b);
    }
    shareSquares(squares);
    barrier();
    float invRms = inverseRms();
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x, row += step) {
        bool live = row < p.rows;
        uint rowU4 = rowChunk(wBase, row);
        uint nextRow = row + step;
        float acc = 0.0;
        // Every thread of the subgroup runs every round (subgroupBarrier),
        // live or not.
        for (uint round = 0; round < rounds; ++round) {
            uint first = round * TPR;
            uint count = live ? min(TPR, groups - first) * GROUP_U4 : 0u;
            [[unroll]] for (uint i = 0; i < GROUP_U4; ++i) {
                uint c = lane + TPR * i;
                if (c < count) {
                    wStage[rowBase + c] = raw[i];
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uvec4 w[GROUP_U4];
            [[unroll]] for (uint i = 0; i < GROUP_U4; ++i) {
                w[i] = wStage[rowBase + lane * GROUP_U4 + i];
            }
            subgroupBarrier(); // read before the next round's stores
            if (round + 1u < rounds) {
                loadRound(rowU4, live, round + 1u, lane, TPR, groups, raw);
            } else {
                loadRound(rowChunk(wBase, nextRow), nextRow < p.rows, 0u, lane, TPR, groups, raw);
            }
            uint g = first + lane;
            if (live && g < groups) {
                acc += qxGroupDot(w, g);
            }
        }
        finishRow(acc, TPR, lane, live, outBase, row, invRms);
    }
}

// The quantized-x loop over grouped weights (QX_INTERLEAVE; x whole). A
// group's quants are 16-byte chunks side by side after its scales, so a
// row's TPR threads take neighbouring chunks, lane, lane + TPR, ...: each
// load of a subgroup covers a few whole cache lines, where a thread per
// group of 8 blocks (144 or 272 bytes apart) touches a line per thread.
// (On the H200 that made Q8_0's 28672 x 4096 product 20% faster alone, but
// Q4_0's ran at the same rate either way: docs/matmul-tuning.md.) A
// chunk is a Q4_0 block (32 weights against x's two 16-byte halves) or
// half a Q8_0 block; its scale is a 16-bit word of its group's first chunk.
// A thread's QX_BATCH chunks are loaded before the first is used.
const uint CHUNK_BLOCKS_SHIFT = W_BASE == TYPE_Q8_0 ? 1u : 0u; // log2 of the chunks per block
const uint GROUP_CHUNKS = 8u << CHUNK_BLOCKS_SHIFT;             // quant chunks per group
const uint QX_BATCH = QX_INTERLEAVE != 0u ? QX_INTERLEAVE : 1u;

// A batch of the interleaved loop: chunks c0, c0 + TPR, ... (QX_INTERLEAVE
// of them, those below `chunks`) of the row whose first chunk is rowU4, each
// with the word of its group's first chunk that holds its block's scale.
void loadBatch(bool live, uint rowU4, uint c0, uint tpr, uint chunks, out uvec4 q[QX_BATCH], out uint dWord[QX_BATCH])
{
    [[unroll]] for (uint i = 0; i < QX_BATCH; ++i) {
        uint c = c0 + tpr * i;
        q[i] = uvec4(0);
        dWord[i] = 0u;
        if (live && c < chunks) {
            uint groupU4 = rowU4 + (c / GROUP_CHUNKS) * GROUP_U4;
            uint j = c % GROUP_CHUNKS;
            q[i] = W128[groupU4 + 1u + j];
            dWord[i] = W32[groupU4 * 4u + (j >> CHUNK_BLOCKS_SHIFT) / 2u];
        }
    }
}

// The batch's sum of w * x (x as quantized); TIMING_PART 3 only combines
// its words (the loads without the arithmetic).
float batchDot(uvec4 q[QX_BATCH], uint dWord[QX_BATCH], uint c0, uint tpr, uint chunks)
{
    float acc = 0.0;
    [[unroll]] for (uint i = 0; i < QX_BATCH; ++i) {
        uint c = c0 + tpr * i;
        if (c >= chunks) {
            continue;
        }
        if (TIMING_PART == 3) {
            acc += float((wordsXor(q[i]) ^ dWord[i]) & 0xFFu);
            continue;
        }
        uint g = c / GROUP_CHUNKS, j = c % GROUP_CHUNKS;
        uint b = j >> CHUNK_BLOCKS_SHIFT; // the block within the group
        float d = (b & 1u) != 0u ? unpackHalf2x16(dWord[i]).y : unpackHalf2x16(dWord[i]).x;
        uint e = g * QX_GROUP_STRIDE + 2u * b;
        vec2 s = qxScale[g * QS_GROUP_STRIDE + b];
        int dotQ = 0;
        if (W_BASE == TYPE_Q8_0) {
            uvec4 xq = qx[e + (j & 1u)]; // the block's half this chunk holds
            [[unroll]] for (uint w = 0; w < 4u; ++w) {
                dotQ += dotPackedSS(q[i][w], xq[w], 0);
            }
            acc += d * s.x * float(dotQ);
        } else { // byte w holds weights w (low nibble) and w + 16 (high)
            uvec4 xa = qx[e], xb = qx[e + 1u];
            [[unroll]] for (uint w = 0; w < 4u; ++w) {
                dotQ += dotPackedSU(xa[w], q[i][w] & 0x0F0F0F0Fu, 0);
                dotQ += dotPackedSU(xb[w], (q[i][w] >> 4) & 0x0F0F0F0Fu, 0);
            }
            acc += d * (s.x * float(dotQ) - s.y);
        }
    }
    return acc;
}

// The interleaved loop's current batch (with QX_PREFETCH, loaded before
// the loop, or before x is quantized).
uvec4 batchQ[QX_BATCH];
uint batchD[QX_BATCH];

// With QX_PREFETCH: the thread's first batch (its workgroup's first tile).
void loadFirstBatch(uint wBase, uint groups)
{
    const uint TPR = WG / ROWS;
    uint t = qxThread(TPR);
    uint row = gl_WorkGroupID.x * ROWS + t / TPR;
    bool live = row < p.rows;
    loadBatch(live, live ? rowChunk(wBase, row) : 0u, t % TPR, TPR, groups * GROUP_CHUNKS, batchQ, batchD);
}

// A row's threads take its chunks in rounds of TPR * QX_INTERLEAVE
// (`rounds` per tile, the same for every row, so that a row's subgroup sums
// meet). QX_PREFETCH: the next round's loads (or the next tile's first) are
// issued before the current round's dot products, two batches of
// registers, so that each thread has loads in flight while it computes.
void qxInterleavedRows(uint wBase, uint outBase, uint groups, uint tiles, float invRms)
{
    const uint TPR = WG / ROWS;
    uint t = qxThread(TPR);
    uint r = t / TPR, lane = t % TPR;
    uint chunks = groups * GROUP_CHUNKS;
    uint span = TPR * QX_BATCH;
    uint rounds = (chunks + span - 1u) / span;
    uint step = gl_NumWorkGroups.x * ROWS;
    uint row = gl_WorkGroupID.x * ROWS + r;
    if (QX_PREFETCH == 1) {
        loadFirstBatch(wBase, groups);
    }
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x, row += step) {
        bool live = row < p.rows;
        uint rowU4 = live ? rowChunk(wBase, row) : 0u;
        float acc = 0.0;
        for (uint round = 0u; round < rounds; ++round) {
            uint c0 = round * span + lane;
            if (QX_PREFETCH != 0) {
                bool lastRound = round + 1u == rounds;
                uint nextRow = lastRound ? row + step : row;
                bool nextLive = nextRow < p.rows;
                uvec4 qn[QX_BATCH];
                uint dn[QX_BATCH];
                loadBatch(nextLive, lastRound ? (nextLive ? rowChunk(wBase, nextRow) : 0u) : rowU4,
                          lastRound ? lane : c0 + span, TPR, chunks, qn, dn);
                if (live) {
                    acc += batchDot(batchQ, batchD, c0, TPR, chunks);
                }
                [[unroll]] for (uint i = 0; i < QX_BATCH; ++i) {
                    batchQ[i] = qn[i];
                    batchD[i] = dn[i];
                }
            } else {
                loadBatch(live, rowU4, c0, TPR, chunks, batchQ, batchD);
                if (live) {
                    acc += batchDot(batchQ, batchD, c0, TPR, chunks);
                }
            }
        }
        finishRow(acc, TPR, lane, live, outBase, row, invRms);
    }
}

// Row tiles of ROWS rows: tile gl_WorkGroupID.x, then every
// gl_NumWorkGroups.x-th one after it. With a grid of fewer workgroups than
// tiles (MatVecConfig::maxGroups: a few per multiprocessor), a workgroup
// quantizes x once for all its tiles when x fits whole in shared memory,
// and its subgroups go from tile to tile without waiting for each other:
// a grid of one workgroup per tile runs in waves, each paying the
// quantization of x, the barriers and the loads' latency before its
// weights stream (docs/matmul-tuning.md).
void qxRowMode()
{
    uint batch = gl_WorkGroupID.y;
    uint xBase = p.xOffset + batch * p.xBatchStride;
    uint wBase = p.wOffset + batch * p.wBatchStride;
    uint outBase = p.outOffset + batch * p.outBatchStride;
    uint tid = gl_LocalInvocationID.x;
    const uint TPR = WG / ROWS; // threads per row (a power of two)
    uint t = qxThread(TPR);
    uint r = t / TPR, lane = t % TPR;
    uint groups = p.k >> 8;
    uint tiles = (p.rows + ROWS - 1u) / ROWS;
    uint step = gl_NumWorkGroups.x * ROWS; // rows from one tile of the workgroup to its next
    bool xWhole = groups <= QX_GROUPS;

    uint row = gl_WorkGroupID.x * ROWS + r;
    if (QX_STAGE != 0 && xWhole && qxSubgroupRows(TPR)) {
#ifdef CHAIN
        chainWait(p.chainSlot);
#endif
        qxStagedRows(xBase, wBase, outBase, groups, tiles);
        return;
    }
    bool interleave = QX_INTERLEAVE != 0 && W_GROUPED && xWhole;
    uvec4 w[GROUP_U4];
    float invRms = 1.0;
    if (xWhole) {
        // The first tile's first group (or batch, QX_PREFETCH 2) is in
        // flight while x is quantized.
        if (!interleave && TIMING_PART != 1 && row < p.rows && lane < groups) {
            loadGroup(rowChunk(wBase, row), lane, w);
        }
        if (interleave && QX_PREFETCH == 2 && TIMING_PART != 1) {
            loadFirstBatch(wBase, groups);
        }
#ifdef CHAIN
        // The first weights are in flight while the dispatch before ends.
        chainWait(p.chainSlot);
#endif
        float squares = 0.0;
        for (uint b = tid; TIMING_PART < 2 && b < groups * 8u; b += WG) {
            squares += quantizeXBlock(xBase, b, b);
        }
        shareSquares(squares);
        barrier();
        invRms = inverseRms();
        if (TIMING_PART == 1) {
            // x only: one value of the quantized x per row, so that none of
            // its work is dropped.
            for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x, row += step) {
                if (lane == 0u && row < p.rows) {
                    writeOut(outBase + row * p.outStride, qxScale[(row % groups) * QS_GROUP_STRIDE].x * invRms);
                }
            }
            return;
        }
    }
#ifdef CHAIN
    chainWait(p.chainSlot); // x in chunks: before the first is read
#endif
    if (interleave) {
        qxInterleavedRows(wBase, outBase, groups, tiles, invRms);
        return;
    }
    for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x, row += step) {
        bool live = row < p.rows;
        uint rowU4 = live ? rowChunk(wBase, row) : 0u;
        float acc = 0.0;
        if (xWhole) {
            // w holds group `lane` of this row; QX_PREFETCH: the loads of
            // the thread's next group (or of its group in the next tile) are
            // issued before this one's dot products.
            uint nextRow = row + step;
            uint nextU4 = nextRow < p.rows ? rowChunk(wBase, nextRow) : 0u;
            for (uint g = lane; live && g < groups; g += TPR) {
                uint gn = g + TPR;
                if (QX_PREFETCH != 0) {
                    uvec4 wn[GROUP_U4];
                    if (gn < groups) {
                        loadGroup(rowU4, gn, wn);
                    } else if (nextRow < p.rows) {
                        loadGroup(nextU4, lane, wn);
                    }
                    acc += qxGroupDot(w, g);
                    [[unroll]] for (uint j = 0; j < GROUP_U4; ++j) {
                        w[j] = wn[j];
                    }
                } else {
                    acc += qxGroupDot(w, g);
                    if (gn < groups) {
                        loadGroup(rowU4, gn, w);
                    } else if (nextRow < p.rows) {
                        loadGroup(nextU4, lane, w);
                    }
                }
            }
        } else {
            float squares = 0.0; // of the whole row, over its chunks
            for (uint c0 = 0; c0 < groups; c0 += QX_GROUPS) {
                uint chunkGroups = min(QX_GROUPS, groups - c0);
                // The first group's loads are in flight while x is quantized.
                uint g = lane;
                if (live && g < chunkGroups) {
                    loadGroup(rowU4, c0 + g, w);
                }
                barrier(); // the previous chunk is consumed
                for (uint b = tid; b < chunkGroups * 8u; b += WG) {
                    squares += quantizeXBlock(xBase, c0 * 8u + b, b);
                }
                bool lastChunk = c0 + QX_GROUPS >= groups;
                if (lastChunk) {
                    shareSquares(squares);
                }
                barrier();
                if (lastChunk) {
                    // (Read before the next tile's last chunk stores them:
                    // its first chunk's barrier comes between.)
                    invRms = inverseRms();
                }
                while (live && g < chunkGroups) {
                    acc += qxGroupDot(w, g);
                    g += TPR;
                    if (g < chunkGroups) {
                        loadGroup(rowU4, c0 + g, w);
                    }
                }
            }
        }
        finishRow(acc, TPR, lane, live, outBase, row, invRms);
    }
}
#endif

void columnMode()
{
    uint batch = gl_WorkGroupID.y;
    uint tid = gl_LocalInvocationID.x;
    uint outputs = WG / K_SPLIT;
    uint local = tid % outputs;
    uint slice = tid / outputs;
    uint row = gl_WorkGroupID.x * outputs + local;
    uint xBase = p.xOffset + batch * p.xBatchStride;
    uint wBase = p.wOffset + batch * p.wBatchStride;
    float sum = 0.0;
    if (row < p.rows) {
        for (uint kk = slice; kk < p.k; kk += K_SPLIT) {
            sum += xAt(xBase, kk) * WLoad(W_TYPE, wBase + kk * p.ldw + row);
        }
    }
    partial[slice * outputs + local] = sum;
    barrier();
    if (slice == 0 && row < p.rows) {
        for (uint s = 1; s < K_SPLIT; ++s) {
            sum += partial[s * outputs + local];
        }
        writeOut(p.outOffset + batch * p.outBatchStride + row * p.outStride, sum);
    }
}

void main()
{
#ifdef CHAIN
    // The quantized-x mode waits once its first weights are in flight;
    // every other mode before it starts.
#ifdef INT_DOT
    bool waitsInside = COLUMN_MODE == 0 && QX_SOURCE != 1 && QX_BLOCKS != 0 && W_QX;
#else
    bool waitsInside = false;
#endif
    if (!waitsInside) {
        chainWait(p.chainSlot);
    }
#endif
    if (COLUMN_MODE != 0) {
        columnMode();
#ifdef INT_DOT
    } else if (QX_SOURCE == 1) {
        qxPass();
    } else if (QX_BLOCKS != 0 && W_QX) {
        qxRowMode();
#ifdef GLU_OUT
        if (GLU_QUANTIZE != 0) {
            gluFinish(p.outOffset);
        }
#endif
#endif
    } else if (W_BLOCK_UNITS) {
        unitRowMode();
    } else if (STAGED != 0) {
        stagedRowMode();
    } else {
        rowMode();
    }
#ifdef ATTN_TAIL
    attentionTail();
#endif
#ifdef CHAIN
    chainSignal(p.chainSlot);
#endif
}
