// SPDX-License-Identifier: Apache-2.0
// The matrix kernels' variants: tile shapes per device, and the
// specialization and push constants that select them (mirroring the
// shaders' constant_id and push-constant blocks). Shared by OpMatMul and the
// tuning probe (benchmarks/probe), so that what is measured is what runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kompute/Vulkan.hpp"
#include "kompute/kernels/KernelOp.hpp"

namespace kp {
namespace kernels {
namespace matmul {

/** Element types as the shaders number them (MatMulCommon.glsl). */
enum ElementType : uint32_t
{
    kF32 = 0,
    kF16 = 1,
    kBF16 = 2,
    kQ8_0 = 3,
    kQ4_0 = 4,
    kQ4_1 = 5,
    kQ5_0 = 6,
    kQ5_1 = 7,
    kQ2_K = 8,
    kQ3_K = 9,
    kQ4_K = 10,
    kQ5_K = 11,
    kQ6_K = 12,
    kIQ4_NL = 13,
    kIQ4_XS = 14,
    kQ8_0X8 = 15,
    kQ4_0X8 = 16,
};

const char* elementTypeName(uint32_t type);
inline bool
isQuantized(uint32_t type)
{
    return type >= kQ8_0 && type <= kQ4_0X8;
}
/** Q8_0 and Q4_0 blocks grouped by 8, their scales first
 * (kp::WeightFormat::eQ8_0X8, eQ4_0X8). */
inline bool
isGrouped(uint32_t type)
{
    return type == kQ8_0X8 || type == kQ4_0X8;
}
/** The formats the mat-vec reads in 4-byte units, with its staged and
 * integer-dot row modes (grouped: not staged); the others take its block
 * row mode. */
inline bool
hasUnitRowModes(uint32_t type)
{
    return type == kQ8_0 || type == kQ4_0 || isGrouped(type);
}
/** The formats the int-dot build's quantized-x row mode takes (Q8_0 and
 * Q4_0 in groups of 8 blocks, Q4_K and Q5_K a super-block at a time). */
inline bool
hasQxRowMode(uint32_t type)
{
    return hasUnitRowModes(type) || type == kQ4_K || type == kQ5_K;
}
/** The element type of GGUF blocks of `format` (kp::WeightFormat, not
 * eNone): the shaders number them in the enum's order from kQ8_0. */
uint32_t quantElementType(WeightFormat format);

/** One matrix multiply-add shape of the device's cooperative matrices. */
struct CoopmatShape
{
    uint32_t m = 0, n = 0, k = 0;
};

/** What the matrix kernels need to know about a device. */
struct DeviceView
{
    std::string name;
    std::string driver; // internal::driverVersionText: what tuning tables key
    uint32_t vendorID = 0;
    vk::PhysicalDeviceType type = vk::PhysicalDeviceType::eOther;
    uint32_t subgroupSize = 1;
    bool subgroupArithmetic = false; // in compute shaders
    bool storage16Bit = false;
    uint32_t maxSharedBytes = 16384;
    uint32_t maxInvocations = 128;
    uint32_t maxGroupCount[3] = { 65535, 65535, 65535 };
    uint32_t smCount = 0; // 0: unknown
    uint32_t maxStorageRange = 1u << 27;
    // Cooperative matrices usable by shaders (enabled, not disabled), with
    // their f16 x f16 -> f32 and bf16 x bf16 -> f32 subgroup shapes.
    bool coopmatNV = false;
    bool coopmatKHR = false;
    std::vector<CoopmatShape> nvF16Shapes;
    std::vector<CoopmatShape> khrF16Shapes;
    std::vector<CoopmatShape> khrBf16Shapes;
    // 4x8-bit packed integer dot products, signed and mixed, accelerated.
    bool intDot = false;
    // The same instructions enabled but not accelerated (lavapipe): the
    // int-dot mat-vec runs there only when asked for (tests, the probe).
    bool intDotSupported = false;

    bool isCpu() const { return type == vk::PhysicalDeviceType::eCpu; }
    bool isNvidia() const { return vendorID == 0x10DE; }
};

/** Tiled GEMM (MatMulTiled.comp): BM x BN tiles, BK deep, TM x TN per
 * thread. */
struct TiledConfig
{
    uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
    bool doubleBuffer = false; // two shared tiles, one barrier per tile
    uint32_t threads() const { return (bm / tm) * (bn / tn); }
};

/** Cooperative-matrix GEMM (MatMulCoopmat.comp): BM x BN tiles, BK deep,
 * WM x WN per subgroup, in lM x lN x lK multiply-adds. */
struct CoopmatConfig
{
    uint32_t bm = 128, bn = 128, bk = 32, wm = 64, wn = 32;
    CoopmatShape shape{ 16, 8, 16 };
    uint32_t subgroupSize = 32;
    bool doubleBuffer = true; // two shared tiles, one barrier per tile
    // f32, Q8_0 and Q4_0 operands kept in registers as loaded and converted
    // after the multiply-adds (RAW_STAGING in the shader)
    bool rawStaging = true;
    // tiles whose loads are in flight, each in its own registers (LOAD_AHEAD
    // in the shader, 1-4)
    uint32_t loadAhead = 1;
    // Q8_0/Q4_0 B loaded as 32-bit words, each subgroup's rows of the tile
    // side by side, and decoded a block per lane (BQ_WORDS in the shader;
    // coopmatQuantWordsFit says where it applies)
    bool quantWords = false;
    uint32_t threads() const { return (bm / wm) * (bn / wn) * subgroupSize; }
};

/** Mat-vec (MatVec.comp): `rows` outputs per workgroup of `threads`; column
 * mode splits k over `kSplit` threads per output; `staged` quantized rows
 * go through shared memory `tileBlocks` blocks at a time. `qxBlocks` (not
 * 0; the int-dot build, Q8_0/Q4_0 rows of whole 16-byte chunks): the
 * quantized-x row mode, x quantized to int8 into shared memory `qxBlocks`
 * 32-element blocks at a time (a multiple of 8), threads / rows threads per
 * row (a power of two) taking whole groups of 8 blocks; there, `maxGroups`
 * (not 0) caps the grid, each workgroup looping over tiles of `rows` rows
 * (x quantized once per workgroup where it fits whole), and `prefetch`
 * issues the loads of a thread's next group (with `interleave`, its next
 * batch of chunks) before the dot products of its current one (2, with
 * `interleave`: its first batch also before x is quantized), and `stage`
 * loads the weights coalesced and hands each
 * thread its group through shared memory (where x fits whole and a row's
 * threads are one subgroup's); `interleave` (grouped weights, Q8_0X8 and
 * Q4_0X8, x whole) has a row's threads load neighbouring 16-byte chunks of
 * its quants, that many at once, instead of a group of 8 blocks each. */
struct MatVecConfig
{
    uint32_t threads = 128, rows = 2, kSplit = 8;
    bool staged = false;
    uint32_t tileBlocks = 32;
    uint32_t qxBlocks = 0;
    uint32_t maxGroups = 0;
    // 0, 1, or 2 (see above; a bool before the interleaved loop's level 2).
    uint32_t prefetch = 0;
    bool stage = false;
    // Grouped weights with x whole: a row's threads take neighbouring
    // 16-byte chunks of its quants, this many loaded at once (QX_INTERLEAVE,
    // 1-16), not a group each (0).
    uint32_t interleave = 0;
};

/** Types, transposes and alignment of one GEMM. */
struct GemmVariant
{
    uint32_t a = kF32, b = kF32, c = kF32;
    bool transA = false, transB = false;
    bool vecA = false, vecB = false; // wide loads allowed (see the shaders)
    bool swigluC = false;             // C = silu(gate) * up (MatMulParams::swigluC)
};

struct MatVecVariant
{
    uint32_t x = kF32, w = kF32, out = kF32;
    bool columnMode = false;
    bool vecW = false, vecX = false;
    bool glu = false; // x = silu(gate) * up (MatMulParams::swigluA)
    // x RMS-normalized as the quantized-x mode quantizes it
    // (MatMulParams::normA): 0 none, else 1 + the norm weights' type, + 4
    // where their offset is a multiple of 4 (vector loads)
    uint32_t norm = 0;
    // The int-dot build's x (MatVec.comp's QX_SOURCE): 0, quantized by each
    // workgroup; 1, the x pass that quantizes it into a buffer; 2, the
    // product reading that buffer
    uint32_t qxSource = 0;
};

/** The push-constant blocks (GemmParams in MatMulParams.glsl, MatVecParams
 * in MatVec.glsl). */
struct GemmPush
{
    uint32_t m, n, k;
    uint32_t lda, ldb, ldc;
    uint32_t strideA, strideB, strideC;
    uint32_t offsetA, offsetB, offsetC;
    float alpha, beta;
    uint32_t upRowB; // MatMulParams::swigluC
};
struct MatVecPush
{
    uint32_t rows, k;
    uint32_t xStride, ldw, outStride;
    uint32_t xBatchStride, wBatchStride, outBatchStride;
    uint32_t xOffset, wOffset, outOffset;
    float alpha, beta;
    int32_t xGateDelta; // MatVecVariant::glu: the gate's offset - xOffset
    float normEps;      // MatVecVariant::norm: the RMSNorm's epsilon
    uint32_t normOffset; // and its weights' first element
};

std::vector<uint32_t> tiledSpecialization(const TiledConfig& config, const GemmVariant& variant);
std::vector<uint32_t> coopmatSpecialization(const CoopmatConfig& config,
                                            const GemmVariant& variant,
                                            bool stageBf16);
std::vector<uint32_t> matVecSpecialization(const MatVecConfig& config, const MatVecVariant& variant);

/** Empty when `config` runs on `device` for B of type `bType`; else why not. */
std::string tiledProblem(const TiledConfig& config, uint32_t bType, const DeviceView& device);
std::string coopmatProblem(const CoopmatConfig& config, const DeviceView& device);
/** (The mat-vec: `wType` the weights' element type.) */
std::string matVecProblem(const MatVecConfig& config, const DeviceView& device, uint32_t wType);

/** The tiles this device runs a GEMM of m x n (batch times) with. */
TiledConfig chooseTiled(const DeviceView& device, uint32_t m, uint32_t n, uint32_t batch, uint32_t bType);
/** Cooperative-matrix tiles from `shapes` (the device's, for the operand
 * types); false when none fits the device. */
bool chooseCoopmat(const DeviceView& device,
                   const std::vector<CoopmatShape>& shapes,
                   uint32_t m,
                   uint32_t n,
                   uint32_t batch,
                   CoopmatConfig& config);
/** `stageable`: Q8_0/Q4_0 rows of whole 16-byte chunks (see
 * matVecStageable), for the staged mode; `quantizedX`: the int-dot build
 * runs on rows of whole 16-byte chunks, and may take its quantized-x row
 * mode (rows of k weights). */
MatVecConfig chooseMatVec(const DeviceView& device,
                          uint32_t outputs,
                          uint32_t wType,
                          bool columnMode,
                          bool stageable,
                          bool quantizedX = false,
                          uint32_t k = 0);
/** The workgroups of a row-mode mat-vec of `outputs` rows: one per
 * `rows` rows, or, under `maxGroups`, as few as take the tiles in the same
 * number of rounds (so that every workgroup loops over as many tiles). */
uint32_t matVecGroups(const MatVecConfig& config, uint32_t outputs);

/** Shared memory of the quantized-x row mode: its chunk of `qxBlocks`
 * blocks of x, and with `stage` a group of `wType` weights per thread. */
uint32_t matVecQxSharedBytes(const MatVecConfig& config, uint32_t wType);
/** Whether quantized rows of k weights, `ld` apart from `offset` (weights,
 * batches `batchStride` apart), start and end on 16-byte boundaries (Q8_0,
 * Q4_0: every 8 blocks; Q4_K, Q5_K: always, 144- and 176-byte
 * super-blocks). */
bool matVecStageable(uint32_t wType, uint32_t k, uint64_t ld, uint64_t offset, uint64_t batchStride, uint32_t batch);

/** Whether `config` (quantWords aside) may load B of type `bType` as
 * words: Q8_0 or Q4_0, 64-deep tiles whose B rows are 16 per subgroup of 32
 * lanes (one block a lane), and k, the rows' stride `ldb`, `offset` and the
 * batches' `batchStride` (in weights) multiples of 64, so that every row's
 * two blocks of a tile start on a 4-byte boundary. */
bool coopmatQuantWordsFit(const CoopmatConfig& config,
                          uint32_t bType,
                          uint32_t k,
                          uint64_t ldb,
                          uint64_t offset,
                          uint64_t batchStride,
                          uint32_t batch);

/** The built-in variant of the cooperative-matrix kernel for `config`'s
 * fragments per subgroup ("matmul_coopmat_4x4"); empty if none is built. */
std::string coopmatVariant(const CoopmatConfig& config);

/** Bytes of shared memory each kernel's variant declares. */
uint32_t tiledSharedBytes(const TiledConfig& config);
uint32_t coopmatSharedBytes(const CoopmatConfig& config, bool transA, bool transB, bool swigluC = false);

} // namespace matmul
} // namespace kernels
} // namespace kp
