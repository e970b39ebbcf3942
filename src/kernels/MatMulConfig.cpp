// SPDX-License-Identifier: Apache-2.0
#include "kernels/MatMulConfig.hpp"

#include <algorithm>

#include "kompute/logger/Logger.hpp"

namespace kp {
namespace kernels {
namespace matmul {

using logger::format;

namespace {

// MatVec.glsl's shared array of partial sums.
constexpr uint32_t kMatVecPartials = 64 * 8;
// The quantized-x mat-vec's grid on GPUs (chooseMatVec): workgroups per
// multiprocessor. On the H200, 2 beat one workgroup per tile and 1, 4 or 8
// per multiprocessor end to end (docs/matmul-tuning.md); the prefetch and
// the staged loads were slower there, and stay off.
constexpr uint32_t kQxGroupsPerSm = 2;

uint32_t
ceilDiv(uint64_t a, uint64_t b)
{
    return static_cast<uint32_t>((a + b - 1) / b);
}

// Workgroups of a problem of m x n in tiles of bm x bn.
uint64_t
tileCount(uint32_t m, uint32_t n, uint32_t batch, uint32_t bm, uint32_t bn)
{
    return uint64_t(ceilDiv(m, bm)) * ceilDiv(n, bn) * batch;
}

// Enough workgroups to fill the device twice over (SM count where known).
uint64_t
fillingTiles(const DeviceView& device)
{
    return device.smCount ? 2ull * device.smCount : 256;
}

} // namespace

const char*
elementTypeName(uint32_t type)
{
    switch (type) {
        case kF32: return "f32";
        case kF16: return "f16";
        case kBF16: return "bf16";
        case kQ8_0: return "q8_0";
        case kQ4_0: return "q4_0";
        case kQ4_1: return "q4_1";
        case kQ5_0: return "q5_0";
        case kQ5_1: return "q5_1";
        case kQ2_K: return "q2_k";
        case kQ3_K: return "q3_k";
        case kQ4_K: return "q4_k";
        case kQ5_K: return "q5_k";
        case kQ6_K: return "q6_k";
        case kIQ4_NL: return "iq4_nl";
        case kIQ4_XS: return "iq4_xs";
        case kQ8_0X8: return "q8_0x8";
        case kQ4_0X8: return "q4_0x8";
    }
    return "unknown";
}

uint32_t
quantElementType(WeightFormat format)
{
    static_assert(uint32_t(WeightFormat::eQ8_0) + 2 == kQ8_0 && uint32_t(WeightFormat::eQ4_K) + 2 == kQ4_K &&
                    uint32_t(WeightFormat::eIQ4_XS) + 2 == kIQ4_XS && uint32_t(WeightFormat::eQ4_0X8) + 2 == kQ4_0X8,
                  "MatMulCommon.glsl numbers the block formats in kp::WeightFormat's order");
    return static_cast<uint32_t>(format) + 2;
}

std::vector<uint32_t>
tiledSpecialization(const TiledConfig& c, const GemmVariant& v)
{
    return { c.threads(), c.bm, c.bn, c.bk, c.tm, c.tn, v.a, v.b, v.c,
             v.transA, v.transB, v.vecA, v.vecB, c.doubleBuffer, v.swigluC };
}

std::vector<uint32_t>
coopmatSpecialization(const CoopmatConfig& c, const GemmVariant& v, bool stageBf16)
{
    return { c.threads(), c.bm, c.bn, c.bk, c.wm, c.wn, c.shape.m, c.shape.n, c.shape.k,
             v.a, v.b, v.c, v.transA, v.transB, v.vecA, v.vecB, stageBf16, c.doubleBuffer, c.rawStaging, c.loadAhead,
             0 /* TIMING_PART: the whole kernel */, c.quantWords, v.swigluC };
}

std::vector<uint32_t>
matVecSpecialization(const MatVecConfig& c, const MatVecVariant& v)
{
    return { c.threads, c.rows, v.x, v.w, v.out, v.columnMode, v.vecW, v.vecX, c.kSplit, c.staged, c.tileBlocks,
             c.qxBlocks, v.glu, c.prefetch, c.stage, v.norm, c.interleave, 0 /* TIMING_PART: the whole kernel */,
             v.qxSource };
}

uint32_t
matVecGroups(const MatVecConfig& c, uint32_t outputs)
{
    uint32_t tiles = ceilDiv(outputs, c.rows);
    if (c.qxBlocks == 0 || c.maxGroups == 0 || tiles <= c.maxGroups) {
        return tiles;
    }
    return ceilDiv(tiles, ceilDiv(tiles, c.maxGroups));
}

uint32_t
tiledSharedBytes(const TiledConfig& c)
{
    return 4 * c.bk * (c.bm + c.bn) * (c.doubleBuffer ? 2 : 1);
}

uint32_t
coopmatSharedBytes(const CoopmatConfig& c, bool transA, bool transB, bool swigluC)
{
    uint32_t a = (transA ? c.bk : c.bm) * ((transA ? c.bm : c.bk) / 8 + 1) * 16;
    uint32_t b = (transB ? c.bn : c.bk) * ((transB ? c.bk : c.bn) / 8 + 1) * 16;
    uint32_t warps = (c.bm / c.wm) * (c.bn / c.wn);
    // One accumulator fragment per subgroup, or with quantWords each
    // subgroup's raw words of B (Q8_0's 34-byte blocks at most).
    uint32_t scratch = warps * c.shape.m * c.shape.n * 4 * (swigluC ? 2 : 1); // swigluC: gate and up
    if (c.quantWords && warps) {
        scratch = std::max(scratch, c.bn * (c.bk / 32 * 34 / 4) * 4);
    }
    return (a + b) * (c.doubleBuffer ? 2 : 1) + scratch;
}

namespace {

/** The tile geometry quantized B as words needs: 64-deep tiles whose B rows
 * are 16 per subgroup of 32 lanes (one block a lane). */
bool
quantWordsTile(const CoopmatConfig& c)
{
    uint32_t warps = (c.bm / c.wm) * (c.bn / c.wn);
    return c.bk == 64 && c.subgroupSize == 32 && warps && c.bn % warps == 0 &&
           c.bn / warps * (c.bk / 32) == c.subgroupSize;
}

} // namespace

bool
coopmatQuantWordsFit(const CoopmatConfig& c,
                     uint32_t bType,
                     uint32_t k,
                     uint64_t ldb,
                     uint64_t offset,
                     uint64_t batchStride,
                     uint32_t batch)
{
    return (bType == kQ8_0 || bType == kQ4_0 || isGrouped(bType)) && quantWordsTile(c) && k % 64 == 0 && ldb % 64 == 0 &&
           offset % 64 == 0 && (batch <= 1 || batchStride % 64 == 0);
}

std::string
tiledProblem(const TiledConfig& c, uint32_t bType, const DeviceView& device)
{
    if ((c.tm != 4 && c.tm != 8) || (c.tn != 4 && c.tn != 8)) {
        return "TM and TN must be 4 or 8";
    }
    if (c.bm % c.tm || c.bn % c.tn || c.bk == 0) {
        return "BM, BN must be multiples of TM, TN";
    }
    uint32_t threads = c.threads();
    if (threads > device.maxInvocations) {
        return format("{} threads exceed maxComputeWorkGroupInvocations {}", threads, device.maxInvocations);
    }
    if ((c.bm * c.bk) % (4 * threads) || (c.bk * c.bn) % (4 * threads)) {
        return "the tiles are not whole 4-element chunks per thread";
    }
    if (isQuantized(bType) && (c.bk % 8 || (c.bk * c.bn / 4 / threads) % 2)) {
        return "quantized B needs whole 8-weight groups per thread";
    }
    if (tiledSharedBytes(c) > device.maxSharedBytes) {
        return format("{} bytes of shared memory exceed the device's {}", tiledSharedBytes(c), device.maxSharedBytes);
    }
    return {};
}

std::string
coopmatVariant(const CoopmatConfig& c)
{
    // src/kernels/Shaders.cmake builds these.
    static const char* const built[] = { "2x2", "2x4", "2x8", "4x2", "4x4", "4x8" };
    if (c.shape.m == 0 || c.shape.n == 0 || c.wm % c.shape.m || c.wn % c.shape.n) {
        return {};
    }
    std::string frags = std::to_string(c.wm / c.shape.m) + "x" + std::to_string(c.wn / c.shape.n);
    for (const char* name : built) {
        if (frags == name) {
            return "matmul_coopmat_" + frags;
        }
    }
    return {};
}

std::string
coopmatProblem(const CoopmatConfig& c, const DeviceView& device)
{
    const auto& s = c.shape;
    if (!s.m || !s.n || !s.k || s.m % 8 || s.n % 8 || s.k % 8) {
        return "the cooperative-matrix shape must be multiples of 8";
    }
    if (c.bm % c.wm || c.bn % c.wn || c.wm % s.m || c.wn % s.n || c.bk % s.k) {
        return "the tiles must be whole subgroup tiles and whole matrices";
    }
    if (coopmatVariant(c).empty()) {
        return "no built-in variant has that many fragments per subgroup";
    }
    if (c.loadAhead < 1 || c.loadAhead > 4) {
        return format("{} tiles of loads in flight: 1 to 4 are built", c.loadAhead);
    }
    uint32_t threads = c.threads();
    if (threads > device.maxInvocations) {
        return format("{} threads exceed maxComputeWorkGroupInvocations {}", threads, device.maxInvocations);
    }
    if (c.quantWords && !quantWordsTile(c)) {
        return "quantized B as words needs 64-deep tiles with 16 rows of B per subgroup of 32";
    }
    if ((c.bm * c.bk / 8) % threads || (c.bk * c.bn / 8) % threads) {
        return "the tiles are not whole 8-element chunks per thread";
    }
    uint32_t shared = std::max(coopmatSharedBytes(c, false, false), coopmatSharedBytes(c, true, true));
    if (shared > device.maxSharedBytes) {
        return format("{} bytes of shared memory exceed the device's {}", shared, device.maxSharedBytes);
    }
    return {};
}

std::string
matVecProblem(const MatVecConfig& c, const DeviceView& device, uint32_t wType)
{
    if (c.threads == 0 || c.threads > device.maxInvocations || c.threads > kMatVecPartials) {
        return format("{} threads per workgroup do not fit", c.threads);
    }
    uint32_t subgroups = ceilDiv(c.threads, std::max(device.subgroupSize, 1u));
    if (c.rows == 0 || subgroups * c.rows > kMatVecPartials) {
        return format("{} rows per workgroup of {} subgroups do not fit", c.rows, subgroups);
    }
    if (c.kSplit == 0 || c.threads % c.kSplit) {
        return "the threads must split k evenly";
    }
    if (c.interleave > 16) {
        return format("{} chunks at once exceed the interleaved loop's 16", c.interleave);
    }
    if (c.prefetch > 2) {
        return format("prefetch {} is not 0, 1 or 2", c.prefetch);
    }
    if (c.qxBlocks) {
        uint32_t perRow = c.threads / c.rows;
        if (c.staged || c.qxBlocks % 8 || c.threads % c.rows || (perRow & (perRow - 1)) != 0) {
            return "the quantized-x mode needs whole groups of 8 blocks and a power of two of threads per row";
        }
        if (matVecQxSharedBytes(c, wType) > device.maxSharedBytes) {
            return format("{} bytes of shared memory exceed the device's {}",
                          matVecQxSharedBytes(c, wType),
                          device.maxSharedBytes);
        }
    }
    if (c.staged) {
        uint32_t shared = c.rows * c.tileBlocks * 34 + kMatVecPartials * 4;
        if (c.tileBlocks == 0 || c.tileBlocks % 8 || shared > device.maxSharedBytes) {
            return "the staged step must be whole 16-byte chunks that fit in shared memory";
        }
    }
    return {};
}

TiledConfig
chooseTiled(const DeviceView& device, uint32_t m, uint32_t n, uint32_t batch, uint32_t bType)
{
    std::vector<TiledConfig> candidates;
    if (device.isCpu()) {
        candidates = { { 32, 32, 16, 4, 4 } };
    } else {
        if (tileCount(m, n, batch, 128, 128) >= fillingTiles(device)) {
            candidates.push_back({ 128, 128, 16, 8, 8 });
        }
        candidates.push_back({ 64, 64, 16, 4, 4 });
        candidates.push_back({ 64, 64, 32, 4, 4 });
        candidates.push_back({ 32, 32, 16, 4, 4 });
    }
    candidates.push_back({ 16, 16, 16, 4, 4 }); // 16 threads: any device
    for (const auto& c : candidates) {
        if (tiledProblem(c, bType, device).empty()) {
            return c;
        }
    }
    return candidates.back();
}

bool
chooseCoopmat(const DeviceView& device,
              const std::vector<CoopmatShape>& shapes,
              uint32_t m,
              uint32_t n,
              uint32_t batch,
              CoopmatConfig& config)
{
    // NVIDIA's native shape first (m16n8k16), then any of whole 8s.
    std::vector<CoopmatShape> ordered;
    for (const auto& s : shapes) {
        if (s.m == 16 && s.n == 8 && s.k == 16) {
            ordered.insert(ordered.begin(), s);
        } else if (s.m % 8 == 0 && s.n % 8 == 0 && s.k % 8 == 0 && s.m <= 32 && s.n <= 32) {
            ordered.push_back(s);
        }
    }
    for (const auto& shape : ordered) {
        // 128 x 128 tiles 64 deep, 64 x 32 per subgroup, one shared stage:
        // the fastest on every shape the probe's pipeline rows measured
        // (docs/matmul-tuning.md, 2026-12-05; H200 / H100, TFLOP/s): 8192^3
        // f16 188.6 / 192.0 against 181.3 / 181.8 on the 128 x 256 x 32
        // tiles (the choice before for many tiles) and 170 / 172.0 on 128 x
        // 128 x 32 in two stages (before for fewer); the LLM's 512 x 14336 x
        // 4096 f16 x f16^T 159.1 / 163.2 against 136.2 / 139.6 and 119.9 /
        // 123.6, with Q4_0 weights 87.7 against 83.6 and 83.0 (H100). Its
        // 16-byte loads cover whole 128-byte rows of a row-major operand
        // (32-deep tiles: half rows), which the loads alone showed (281 against
        // 169 TFLOP/s at 8192^3, H100). Then the tiles before, for devices
        // with less shared memory (the 64-deep tile takes 41 KB), and smaller
        // ones for products with too few tiles to fill the device. 128 x 128
        // tiles from three quarters of a wave (one workgroup per SM) on: the
        // LLM's 512 x 4096 products make 128 of them for 132 SMs, and ran at
        // 82.3 TFLOP/s there against 53.8 on 512 tiles of 64 x 64 (ffn_down's
        // shape, H200 probe of the eighth session).
        std::vector<CoopmatConfig> candidates;
        bool tiles128 = tileCount(m, n, batch, 128, 128) * 8 >= fillingTiles(device) * 3;
        if (tiles128) {
            candidates.push_back({ 128, 128, 64, 64, 32, shape, device.subgroupSize, false });
        }
        if (tileCount(m, n, batch, 128, 256) >= fillingTiles(device)) {
            candidates.push_back({ 128, 256, 32, 64, 64, shape, device.subgroupSize, false });
        }
        if (tiles128) {
            candidates.push_back({ 128, 128, 32, 64, 32, shape, device.subgroupSize, true });
        }
        candidates.push_back({ 64, 64, 32, 32, 32, shape, device.subgroupSize, true });
        candidates.push_back({ 64, 64, 32, 32, 32, shape, device.subgroupSize, false });
        for (const auto& c : candidates) {
            if (coopmatProblem(c, device).empty()) {
                config = c;
                return true;
            }
        }
    }
    return false;
}

uint32_t
matVecQxSharedBytes(const MatVecConfig& c, uint32_t wType)
{
    // MatVec.comp: per group of 8 blocks 17 uvec4 of int8 x and 9 vec2
    // scales (padded), beside the partial sums; staged, a group of weights
    // per thread (GROUP_U4 16-byte chunks).
    uint32_t groups = std::max(c.qxBlocks / 8, 1u);
    uint32_t groupChunks = wType == kQ8_0 || wType == kQ8_0X8 ? 17 : wType == kQ5_K ? 11 : 9;
    // (+ 64 floats: the sums of squares of a normalized x, MatVecVariant::norm)
    return groups * (17 * 16 + 9 * 8) + kMatVecPartials * 4 + 64 * 4 + (c.stage ? c.threads * groupChunks * 16 : 0);
}

bool
matVecStageable(uint32_t wType, uint32_t k, uint64_t ld, uint64_t offset, uint64_t batchStride, uint32_t batch)
{
    // Rows of whole 16-byte chunks: 8 blocks (34 * 8 and 18 * 8 bytes).
    const uint64_t eightBlocks = 8 * 32;
    if (wType == kQ4_K || wType == kQ5_K || isGrouped(wType)) {
        return true; // OpMatMul checks whole (super-)blocks of 256 weights
    }
    return hasUnitRowModes(wType) && k % eightBlocks == 0 && ld % eightBlocks == 0 && offset % eightBlocks == 0 &&
           (batch == 1 || batchStride % eightBlocks == 0);
}

MatVecConfig
chooseMatVec(const DeviceView& device,
             uint32_t outputs,
             uint32_t wType,
             bool columnMode,
             bool stageable,
             bool quantizedX,
             uint32_t k)
{
    MatVecConfig c;
    if (columnMode) {
        c.threads = std::min(256u, device.maxInvocations);
        c.kSplit = 8;
        c.rows = 1;
        return c;
    }
    if (quantizedX) {
        MatVecConfig qx;
        // The quantized-x row mode. GPUs: 256 threads, 16 rows (16 threads a
        // row) and x whole in shared memory up to 512 blocks (k = 16384). On
        // the H200, 128 threads and 32 rows ran 10-18% faster alone on 14336
        // x 4096 (Q4_0, Q4_K, Q5_K; Q8_0 best at 256 x 16) but 2% slower in
        // the Llama-8B decode step, so every type keeps 256 x 16
        // (docs/matmul-tuning.md). CPUs: small chunks.
        qx.threads = device.isCpu() ? 64 : 256;
        qx.rows = device.isCpu() ? 8 : 16;
        uint32_t rowGroups = ceilDiv(k, 256);
        qx.qxBlocks = 8 * std::max(1u, std::min(rowGroups, device.isCpu() ? 8u : 64u));
        while (ceilDiv(outputs, qx.rows) > device.maxGroupCount[0] && qx.rows < 64) {
            qx.rows *= 2;
        }
        while (!matVecProblem(qx, device, wType).empty() && qx.threads > qx.rows && qx.threads > device.subgroupSize) {
            qx.threads /= 2;
        }
        while (!matVecProblem(qx, device, wType).empty() && qx.qxBlocks > 8) {
            qx.qxBlocks /= 2;
            qx.qxBlocks -= qx.qxBlocks % 8;
        }
        // A grid of a few workgroups per multiprocessor, each looping over
        // row tiles (x quantized once per workgroup): GPUs whose
        // multiprocessors are known take kQxGroupsPerSm of them (the others
        // one workgroup per tile), CPUs 8 workgroups (their cores take a
        // workgroup at a time).
        qx.maxGroups = device.isCpu() ? 8 : device.smCount * kQxGroupsPerSm;
        // Grouped Q4_0: a row's threads on neighbouring chunks, 4 at once,
        // the next 4 loaded before the current ones' dot products (where x
        // is whole; the shader keeps a group a thread otherwise): H200
        // tg128 386.7 t/s against 363.3 with 8 at once and no prefetch,
        // 373.5 with 4 at once and no prefetch (one call; the H100 350.2
        // against 336.2), and before those 346.1 with 8 at once against
        // 340.2 with a group a thread and 339.1 on GGUF's layout. Grouped
        // Q8_0 (the runner stores it so only where KOMPUTE_ENV_GROUPED_BLOCKS
        // names it): 8 chunks at once with the prefetch, H100 tg128 222.3
        // t/s against 204.2 with a group a thread (211.2 with 4 at once;
        // Q8_0 as stored 203.8-209.9 in the same calls). Without the
        // prefetch the H200 had a group a thread ahead, 229.1 against
        // 216.4; with it the H200 is not measured yet (docs/matmul-tuning.md),
        // and a later H100 call had grouped Q8_0 1.6% behind Q8_0 as stored
        // (199.4 against 202.6; docs/performance.md).
        qx.interleave = wType == kQ4_0X8 ? 4 : (wType == kQ8_0X8 ? 8 : 0);
        qx.prefetch = isGrouped(wType) ? 1 : 0;
        if (matVecProblem(qx, device, wType).empty()) {
            return qx;
        }
    }
    c.threads = device.isCpu() ? 64 : 128;
    c.rows = isQuantized(wType) || device.isCpu() ? 4 : 2;
    if (stageable) {
        // One 4-byte unit per thread and row per step, 8 rows (the best of
        // the H200 probe's second call: docs/matmul-tuning.md).
        // Every device runs 128 invocations, so a step is whole 16-byte
        // chunks (a multiple of 8 blocks).
        c.threads = std::min(256u, device.maxInvocations);
        c.rows = 8;
        c.staged = true;
        c.tileBlocks = c.threads / (wType == kQ8_0 ? 8 : 4); // (never grouped: OpMatMul)
    }
    while (ceilDiv(outputs, c.rows) > device.maxGroupCount[0] && c.rows < 64) {
        c.rows *= 2;
    }
    while (!matVecProblem(c, device, wType).empty() && c.threads > device.subgroupSize) {
        c.threads /= 2;
    }
    if (c.staged && !matVecProblem(c, device, wType).empty()) {
        // Too little shared memory for the staged step: the plain row mode.
        return chooseMatVec(device, outputs, wType, columnMode, false, false, k);
    }
    return c;
}

} // namespace matmul
} // namespace kernels
} // namespace kp
