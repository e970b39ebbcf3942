// SPDX-License-Identifier: Apache-2.0
// OpAttention: the decode path splits each row's context into chunks, as
// many as the length read on the device needs, the last workgroup of a row
// to finish merging them (shaders/AttentionDecode.comp on subgroup
// shuffles, else shaders/AttentionSplit.comp; one dispatch); the prefill
// path is a flash-attention kernel in SIMT (shaders/AttentionPrefill.comp),
// or, when the caller asks for one of its variants, on cooperative matrices
// where the device has f16 x f16 -> f32 ones at 16x16x16
// (shaders/AttentionCoopmat.comp).
#include "kompute/kernels/Attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "kernels/CoopmatRewrite.hpp"
#include "kernels/KernelSupport.hpp"
#include "kernels/MatMulDevice.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

namespace {

constexpr uint32_t kMaxHeadDim = 256;
constexpr uint32_t kAutoDecodeRows = 4;
// Workgroups the decode path aims for: about two per multiprocessor of a
// large GPU. On the H200 (132 SMs) 256 (chunks of 128 at context 4096)
// measured 999 GB/s against 846 GB/s for 512, 987 for 128: fewer chunks
// shorten the merge that the last workgroup does.
constexpr uint64_t kDecodeTargetGroups = 256;
// The subgroup decode kernel: each active workgroup takes at least this
// many positions (a context up to it runs one workgroup per row and KV
// head, which writes the output itself), and at most this many workgroups
// share a context (longer ones take more positions each). The grid is
// recorded for the cache's capacity, so a short context leaves most
// workgroups returning at once: with 256 positions (16 workgroups per row
// and KV head for a 4096-position cache) the H100 ran a context of 128 in
// 8.48 us against 9.79 with 128, and one of 4096 in 16.45 against 16.93
// (kompute-bench attention, one call); the H200 had 4096 at 987 GB/s
// against 999 (fifth session).
constexpr uint32_t kDecodeMinChunk = 256;
constexpr uint32_t kDecodeMaxSplits = 64;
// Prefills of at least this many rows take the cooperative-matrix kernel
// by default where it runs (16-row tiles; shorter ones stay in f32).
constexpr uint32_t kCoopmatPrefillMinRows = 64;

struct AttentionPush
{
    uint32_t rows, heads, kvHeads, kvCapacity;
    float scale;
    uint32_t kvRowStride, kvOffset, qRowStride, qOffset, positionsOffset;
};

/** A variant of the cooperative-matrix prefill kernel: `kvTile` cache
 * positions per tile, `subgroups` of 16 (row, head) pairs per workgroup. */
struct CoopmatPrefill
{
    uint32_t kvTile = 32, subgroups = 4;
    bool prefetch = false;
};

/** Bytes of shared memory AttentionCoopmat.comp declares (mirrors it). */
uint64_t
coopmatPrefillShared(const CoopmatPrefill& c, uint32_t headDim)
{
    uint64_t pairs = 16ull * c.subgroups;
    uint64_t kvRows = std::max<uint64_t>(2ull * c.kvTile, pairs);
    uint64_t scoreVectors = c.kvTile / 4 + 2;                  // SV
    uint64_t probWords = (c.kvTile / 4 + 13) / 16 * 16 + 2;    // SPW
    return kvRows * (headDim / 8 + 1) * 16 + pairs * scoreVectors * 16 + pairs * probWords * 8 + pairs * 16;
}

bool
hasShape16(const std::vector<kernels::matmul::CoopmatShape>& shapes)
{
    return std::any_of(shapes.begin(), shapes.end(), [](const auto& s) { return s.m == 16 && s.n == 16 && s.k == 16; });
}

uint32_t
floorPow2(uint64_t value)
{
    uint32_t result = 1;
    while (uint64_t(result) * 2 <= value && result < (1u << 30)) {
        result *= 2;
    }
    return result;
}

/** The decode kernels' push constants. */
struct DecodePush
{
    AttentionPush base;
    uint32_t splits, outRowStride, outOffset;
};

/** The decode paths' scratch: per (row, head, split) the partial output
 * and (max, sum), padded to whole vectors of 4; and a counter per (row, KV
 * head), zero once here (uploaded at creation), left 0 by each dispatch. */
std::pair<std::shared_ptr<Memory>, std::shared_ptr<Memory>>
decodeScratch(const Checker& check, const AttentionParams& p, uint32_t splits)
{
    uint64_t scratchElements = uint64_t(p.rows) * p.heads * splits * (p.headDim + 4);
    check.require(scratchElements * 4 <= check.device()->properties().limits.maxStorageBufferRange &&
                    scratchElements <= UINT32_MAX,
                  format("the decode path's partial results for {} rows ({} floats) exceed what one buffer "
                         "holds: use the prefill path for this many rows",
                         p.rows, scratchElements));
    return { std::make_shared<TensorT<float>>(check.device(), static_cast<size_t>(scratchElements),
                                              Memory::MemoryTypes::eStorage),
             std::make_shared<TensorT<uint32_t>>(check.device(), std::vector<uint32_t>(size_t(p.rows) * p.kvHeads, 0u),
                                                 Memory::MemoryTypes::eStorage) };
}

/** How shaders/AttentionDecode.comp runs a shape on a device. */
struct FlashDecode
{
    uint32_t local, lanes, vecsPerLane, rowsPerPass, subgroups, minChunk, splits;
    std::string variant;
};

// KOMPUTE_ENV_ATTENTION_DECODE=local:rowsPerPass replaces the subgroup
// decode kernel's local size and rows per row slot and pass (a tuning knob,
// so that kompute-bench and kompute-llm measure each without a rebuild). A
// value that does not parse or fit is reported and ignored.
void
overrideFlashDecode(uint32_t& local, uint32_t& rowsPerPass, const kernels::DeviceCaps& caps)
{
    const char* text = std::getenv("KOMPUTE_ENV_ATTENTION_DECODE");
    if (!text || !*text) {
        return;
    }
    unsigned l = 0, rpt = 0;
    char end = 0;
    if (std::sscanf(text, "%u:%u%c", &l, &rpt, &end) != 2 || l == 0 || l > caps.maxInvocations ||
        l % caps.subgroupSize != 0 || rpt == 0 || rpt > 16) {
        KP_LOG_WARN("KOMPUTE_ENV_ATTENTION_DECODE={} is ignored: expected local:rowsPerPass, the local size a multiple "
                    "of the subgroup size ({}) up to {}, 1-16 rows, e.g. 256:4",
                    text, caps.subgroupSize, caps.maxInvocations);
        return;
    }
    local = l;
    rowsPerPass = rpt;
}

/** The subgroup decode kernel's configuration, or nothing where it does
 * not run: without subgroup shuffles on full subgroups, where the lanes'
 * registers would not hold a group's queries and outputs (more than 32
 * vectors of each), where shared memory does not hold one subgroup's
 * results, or when KOMPUTE_ENV_DISABLE names attention-decode-flash (the
 * split kernel then runs, as before issue 19). */
std::optional<FlashDecode>
flashDecode(const Checker& check, const AttentionParams& p, kernels::StorageType kvType, uint64_t kvStride)
{
    const auto& caps = check.caps();
    FlashDecode f;
    // 256 invocations, 4 rows per row slot and pass (below): on the H100
    // kompute-bench's decode ran a context of 128 in 7.49 us against 8.35
    // with 128 invocations and 8 rows, one of 4096 in 15.01 against 16.38-16.61
    // (40.8% of the copy bandwidth against 37.4%), and tg128 Q4_0 363.6 t/s
    // against 356.3-357.2 (docs/performance.md, eleventh session); 256 x 8
    // was as fast at 128 and slower at 4096 (15.55), 512 x 4 no faster than
    // 128 x 8 at 128 (8.35).
    f.local = caps.localSize(256);
    uint32_t sg = caps.subgroupSize;
    if (!caps.useSubgroups() || !caps.subgroupShuffle || caps.isDisabled("attention-decode-flash") || sg < 1 ||
        sg > f.local || f.local % sg != 0) {
        return std::nullopt;
    }
    bool f16 = kvType == kernels::StorageType::eF16;
    uint32_t group = p.heads / p.kvHeads;
    uint32_t vecs = p.headDim / 4;
    // 16 bytes per lane and row where the subgroup is wide enough.
    uint32_t lanes = 1;
    while (lanes < sg && lanes * (f16 ? 8 : 4) < p.headDim) {
        lanes *= 2;
    }
    f.lanes = lanes;
    f.vecsPerLane = (vecs + lanes - 1) / lanes;
    bool wide = f16 && p.headDim % 8 == 0 && p.kvOffset % 8 == 0 && kvStride % 8 == 0 && f.vecsPerLane % 2 == 0;
    bool vector = p.kvOffset % 4 == 0 && kvStride % 4 == 0;
    if (group * f.vecsPerLane > 32) {
        return std::nullopt;
    }
    // At most 32 scores (rows x heads) per lane and pass, 4 rows.
    f.rowsPerPass = std::max(1u, std::min(4u, 32u / group));
    overrideFlashDecode(f.local, f.rowsPerPass, caps);
    // The final merge holds each subgroup's outputs in shared memory: fewer
    // subgroups where they do not fit.
    auto shared = [&] { return uint64_t(f.local / sg) * group * (vecs * 16 + 8) + 16; };
    while (f.local > sg && shared() > caps.maxSharedBytes) {
        f.local /= 2;
    }
    if (shared() > caps.maxSharedBytes) {
        return std::nullopt;
    }
    f.subgroups = f.local / sg;
    f.minChunk = p.decodeChunk != 0 ? p.decodeChunk : kDecodeMinChunk;
    f.splits = std::min<uint32_t>(kDecodeMaxSplits, (p.kvCapacity + f.minChunk - 1) / f.minChunk);
    f.variant = std::string("attention_decode_") + kernels::typeName(kvType) + (wide ? "_v8" : vector ? "_v4" : "");
    return f;
}

} // namespace

OpAttention::OpAttention(const std::vector<std::shared_ptr<Memory>>& tensors, const AttentionParams& params)
  : KernelOp("OpAttention")
{
    Checker check("OpAttention", tensors, { "q", "kCache", "vCache", "positions", "out" });
    check.dataType(0, { Memory::DataTypes::eFloat });
    check.dataType(4, { Memory::DataTypes::eFloat, Memory::DataTypes::eHalf });
    check.dataType(1, { Memory::DataTypes::eFloat, Memory::DataTypes::eHalf });
    auto kvType = check.storageType(1);
    // An f16 output (half the bytes for the product that reads it) comes
    // from the kernels of f16 caches only: those of f32 caches keep clear of
    // 16-bit storage.
    const uint32_t outHalf = check.storageType(4) == kernels::StorageType::eF16 ? 1u : 0u;
    check.require(!outHalf || kvType == kernels::StorageType::eF16,
                  "an f16 out needs f16 caches (kCache and vCache are f32)");
    check.sameDataType(1, 2);
    check.dataType(3, { Memory::DataTypes::eUnsignedInt });
    const auto& p = params;
    check.require(p.rows > 0 && p.heads > 0 && p.kvHeads > 0 && p.kvCapacity > 0,
                  format("rows, heads, kvHeads and kvCapacity must be at least 1 ({}, {}, {}, {} given)", p.rows,
                         p.heads, p.kvHeads, p.kvCapacity));
    check.require(p.heads % p.kvHeads == 0, format("kvHeads = {} must divide heads = {}", p.kvHeads, p.heads));
    check.require(p.headDim > 0 && p.headDim % 4 == 0 && p.headDim <= kMaxHeadDim,
                  format("headDim = {} must be a multiple of 4 from 4 to {}", p.headDim, kMaxHeadDim));
    uint32_t path = static_cast<uint32_t>(p.path);
    check.require(path <= 2, format("unknown AttentionPath {}", path));
    check.require(p.prefillKvTile == 0 || p.prefillKvTile == 32 || p.prefillKvTile == 64,
                  format("prefillKvTile = {} must be 0, 32 or 64", p.prefillKvTile));
    check.require(p.prefillSubgroups == 0 || p.prefillSubgroups == 1 || p.prefillSubgroups == 2 ||
                    p.prefillSubgroups == 4 || p.prefillSubgroups == 8,
                  format("prefillSubgroups = {} must be 0, 1, 2, 4 or 8", p.prefillSubgroups));
    uint32_t group = p.heads / p.kvHeads;
    uint64_t qWidth = uint64_t(p.heads) * p.headDim;
    uint64_t kvWidth = uint64_t(p.kvHeads) * p.headDim;
    uint64_t qStride = p.qRowStride == 0 ? qWidth : p.qRowStride;
    uint64_t outStride = p.outRowStride == 0 ? qWidth : p.outRowStride;
    uint64_t kvStride = p.kvRowStride == 0 ? kvWidth : p.kvRowStride;
    check.require(qStride >= qWidth && outStride >= qWidth,
                  format("qRowStride and outRowStride ({}, {}) must be at least heads * headDim = {}", qStride,
                         outStride, qWidth));
    check.require(kvStride >= kvWidth,
                  format("kvRowStride = {} must be at least kvHeads * headDim = {}", kvStride, kvWidth));
    uint64_t qExtent = kernels::rowsExtent(p.rows, qWidth, qStride);
    uint64_t outExtent = kernels::rowsExtent(p.rows, qWidth, outStride);
    uint64_t kvExtent = kernels::rowsExtent(p.kvCapacity, kvWidth, kvStride);
    check.covers(0, p.qOffset, qExtent, format("{} rows of {} heads x {}", p.rows, p.heads, p.headDim));
    check.covers(4, p.outOffset, outExtent, format("{} rows of {} heads x {}", p.rows, p.heads, p.headDim));
    std::string cacheShape = format("a cache of {} positions x {} KV heads x {} (row stride {})", p.kvCapacity,
                                    p.kvHeads, p.headDim, kvStride);
    check.covers(1, p.kvOffset, kvExtent, cacheShape);
    check.covers(2, p.kvOffset, kvExtent, cacheShape);
    check.covers(3, p.positionsOffset, p.rows, format("{} rows", p.rows));
    check.aliasing(0, p.qOffset, qExtent, 4, p.outOffset, outExtent);
    check.require(tensors[0] != tensors[4] || qStride == outStride || p.qOffset + qExtent <= p.outOffset ||
                    p.outOffset + outExtent <= p.qOffset,
                  "in place (q and out one tensor) needs equal row strides");
    check.require(tensors[4] != tensors[1] && tensors[4] != tensors[2], "out must not be a cache");
    check.require(kvStride <= UINT32_MAX && qStride <= UINT32_MAX && outStride <= UINT32_MAX,
                  "row strides exceed 2^32 - 1");

    float scale = p.scale != 0.0f ? p.scale : static_cast<float>(1.0 / std::sqrt(double(p.headDim)));
    AttentionPush push{ p.rows,
                        p.heads,
                        p.kvHeads,
                        p.kvCapacity,
                        scale,
                        static_cast<uint32_t>(kvStride),
                        check.offset32(p.kvOffset, "kvOffset"),
                        static_cast<uint32_t>(qStride),
                        check.offset32(p.qOffset, "qOffset"),
                        check.offset32(p.positionsOffset, "positionsOffset") };
    uint32_t outOffset = check.offset32(p.outOffset, "outOffset");
    const auto& caps = check.caps();
    uint32_t causal = p.causal ? 1u : 0u;
    bool decode = p.path == AttentionPath::eDecode || (p.path == AttentionPath::eAuto && p.rows <= kAutoDecodeRows);
    std::string kv = kernels::typeName(kvType);

    check.require(!decode || p.decodeChunk == 0 ||
                    (p.decodeChunk >= 16 && p.decodeChunk <= 256 && (p.decodeChunk & (p.decodeChunk - 1)) == 0),
                  format("decodeChunk = {} must be 0 or a power of two from 16 to 256", p.decodeChunk));
    std::optional<FlashDecode> flash = decode ? flashDecode(check, p, kvType, kvStride) : std::nullopt;
    if (flash) {
        std::tie(mScratch, mCounters) = decodeScratch(check, p, flash->splits);
        DecodePush decodePush{ push, flash->splits, static_cast<uint32_t>(outStride), outOffset };
        std::vector<std::shared_ptr<Memory>> decodeTensors = { tensors[0], tensors[1], tensors[2], tensors[3],
                                                               tensors[4], mScratch, mCounters };
        addDispatch(kernels::buildAlgorithm(
          check.device(), decodeTensors, kernels::builtinSpirv(flash->variant),
          kernels::grid(uint64_t(p.rows) * p.kvHeads * flash->splits, caps, "OpAttention"),
          { flash->local, p.headDim, group, flash->minChunk, causal, flash->lanes, flash->vecsPerLane,
            flash->rowsPerPass, flash->subgroups, outHalf, caps.isDisabled("attention-decode-ahead") ? 0u : 1u },
          decodePush));
        setPath("decode-flash-subgroup");
        return;
    }
    if (decode) {
        // One workgroup of 128 invocations (every device runs 128) per
        // (row, KV head, chunk); see shaders/AttentionSplit.comp.
        uint32_t local = caps.localSize(128);
        uint32_t vecs = p.headDim / 4;
        uint64_t wanted = uint64_t(p.kvCapacity) * p.rows * p.kvHeads / kDecodeTargetGroups;
        uint32_t chunk = std::min<uint32_t>(256, std::max<uint32_t>(16, floorPow2(std::max<uint64_t>(wanted, 1))));
        auto sharedBytes = [&](uint32_t c) {
            return (uint64_t(group) * p.headDim + uint64_t(group) * c + 2 * uint64_t(local)) * 4 + 16;
        };
        if (p.decodeChunk != 0) {
            chunk = p.decodeChunk;
        }
        while (chunk > 16 && sharedBytes(chunk) > caps.maxSharedBytes) {
            chunk /= 2;
        }
        check.require(local >= vecs && sharedBytes(chunk) <= caps.maxSharedBytes,
                      format("heads / kvHeads = {} query heads of {} values need more shared memory than '{}' has "
                             "({} bytes)",
                             group, p.headDim, caps.deviceName, caps.maxSharedBytes));
        uint32_t splits = (p.kvCapacity + chunk - 1) / chunk;
        std::tie(mScratch, mCounters) = decodeScratch(check, p, splits);

        // Subgroup lanes per K row where shuffles work on full subgroups,
        // else one invocation per row.
        bool subgroups = caps.useSubgroups() && caps.subgroupShuffle && caps.subgroupSize >= 2 &&
                         caps.subgroupSize <= local && local % caps.subgroupSize == 0;
        uint32_t kLanes = subgroups ? std::min({ 8u, caps.subgroupSize, floorPow2(vecs) }) : 1;
        // Up to 16 K loads in flight per invocation: kBatch vectors of
        // kRows rows, no more rows per pass than the chunk holds, and at
        // most 32 dot products (kRows x group) accumulated per invocation.
        uint32_t kVecs = (vecs + kLanes - 1) / kLanes;
        uint32_t kBatch = std::min(kVecs, 16u);
        uint32_t kRows = std::max(1u, 16u / kVecs);
        while (kRows > 1 && ((local / kLanes) * kRows > chunk || kRows * group > 32)) { // accumulators
            kRows /= 2;
        }
        uint32_t vSlots = local / vecs;
        // Vector loads where every row starts at a multiple of 4 elements.
        bool vectorLoads = p.kvOffset % 4 == 0 && kvStride % 4 == 0;
        std::string variant = "attention_split_" + kv + (subgroups ? "_sg" : "_sh") + (vectorLoads ? "_v4" : "");
        DecodePush decodePush{ push, splits, static_cast<uint32_t>(outStride), outOffset };
        std::vector<std::shared_ptr<Memory>> decodeTensors = { tensors[0], tensors[1], tensors[2], tensors[3],
                                                               tensors[4], mScratch, mCounters };
        addDispatch(kernels::buildAlgorithm(check.device(), decodeTensors, kernels::builtinSpirv(variant),
                                            kernels::grid(uint64_t(p.rows) * p.kvHeads * splits, caps, "OpAttention"),
                                            { local, p.headDim, group, chunk, causal, kLanes, kVecs, kBatch, kRows,
                                              vSlots, outHalf },
                                            decodePush));
        setPath(std::string("decode-split-") + (subgroups ? "subgroup" : "shared-memory"));
        return;
    }

    struct
    {
        AttentionPush base;
        uint32_t outRowStride, outOffset;
    } prefillPush{ push, static_cast<uint32_t>(outStride), outOffset };

    // Prefill on cooperative matrices: f16 caches, head sizes of 64 or 128,
    // 16x16x16 f16 x f16 -> f32 subgroup matrices and shuffles to combine
    // the lanes of a row. Taken when the caller asks for one of its variants
    // (prefillKvTile or prefillSubgroups), and by default where it has been
    // checked and timed: NVIDIA devices (the NV form, below) for prompts of
    // at least kCoopmatPrefillMinRows rows. On the H200, 32 heads of 128 (8
    // KV heads), causal from position 0, 32 positions per tile and 4
    // subgroups: 40.2 TFLOP/s at 512 rows and 63.6 at 4096, against 0.90
    // and 1.02 for the SIMT kernel (docs/performance.md); on the H100 since
    // S^T = K Q^T and the softmax in vectors of 4 (seventeenth session) 47.6
    // and 81.6 (41.2 and 63.9 before, in the same call). Shorter prompts
    // keep the SIMT kernel (f32 q and weights).
    bool asked = p.prefillKvTile != 0 || p.prefillSubgroups != 0;
    kernels::matmul::DeviceView view = kernels::matmul::matMulDevice(*check.device(), caps);
    bool khr = view.coopmatKHR && !caps.isDisabled("coopmat-khr") && hasShape16(view.khrF16Shapes);
    bool nv = view.coopmatNV && !caps.isDisabled("coopmat-nv") && hasShape16(view.nvF16Shapes);
    // NVIDIA's driver (580.159.04, H200) crashes compiling the KHR form of
    // this module (a segmentation fault in libnvidia-glvkspirv under
    // vkCreateComputePipelines, with or without the validation layer): its
    // devices take the NV form, which the module is written in, and one
    // without NV cooperative matrices does not take the kernel at all.
    if (view.isNvidia()) {
        khr = false;
    }
    // The module's own NV form wherever the device has it.
    bool khrForm = khr && !nv;
    uint32_t subgroupSize = caps.subgroupSize;
    bool byDefault = !asked && nv && view.isNvidia() && p.rows >= kCoopmatPrefillMinRows;
    bool coopmat = (asked || byDefault) && (khr || nv) && !caps.isDisabled("coopmat") && !caps.isDisabled("attention-coopmat") &&
                   kvType == kernels::StorageType::eF16 && (p.headDim == 64 || p.headDim == 128) &&
                   caps.subgroupShuffle && subgroupSize >= 4 && subgroupSize <= 128 &&
                   (subgroupSize & (subgroupSize - 1)) == 0;
    if (coopmat) {
        CoopmatPrefill config;
        // 32 positions per tile: the H200's best at head size 128 (64 was
        // half as fast with 1 or 2 subgroups; with 4 it does not fit 48 KB of
        // shared memory). Head size 64 was not timed.
        config.kvTile = p.prefillKvTile != 0 ? p.prefillKvTile : 32;
        config.subgroups = p.prefillSubgroups != 0 ? p.prefillSubgroups : 4;
        config.prefetch = p.prefillPrefetch;
        auto problem = [&](const CoopmatPrefill& c) -> std::string {
            uint32_t local = c.subgroups * subgroupSize;
            if (local > caps.maxInvocations) {
                return format("{} invocations exceed the device's {}", local, caps.maxInvocations);
            }
            if ((c.kvTile * p.headDim / 8) % local != 0) {
                return format("{} invocations do not divide a tile's {} chunks", local, c.kvTile * p.headDim / 8);
            }
            if (coopmatPrefillShared(c, p.headDim) > caps.maxSharedBytes) {
                return format("{} bytes of shared memory exceed the device's {}", coopmatPrefillShared(c, p.headDim),
                              caps.maxSharedBytes);
            }
            return "";
        };
        // Without an explicit count, 4 subgroups, fewer where they do not
        // fit. (More workgroups do not pay: at 512 rows of Llama-8B, 256
        // workgroups of 4 subgroups ran 1.8 times as fast as 512 of 2 on the
        // H200's 132 multiprocessors.)
        while (p.prefillSubgroups == 0 && config.subgroups > 1 && !problem(config).empty()) {
            config.subgroups /= 2;
        }
        auto workgroups = [&](uint32_t subgroups) {
            return (uint64_t(p.rows) * group + 16 * subgroups - 1) / (16 * subgroups) * p.kvHeads;
        };
        std::string why = problem(config);
        // An explicit variant that does not fit is a clear error, not a
        // silent fallback.
        check.require(why.empty(), format("the cooperative-matrix prefill with prefillKvTile = {} and "
                                          "prefillSubgroups = {} does not fit '{}': {}",
                                          config.kvTile, config.subgroups, caps.deviceName, why));
        uint32_t local = config.subgroups * subgroupSize;
        bool vectorLoads = p.kvOffset % 8 == 0 && kvStride % 8 == 0;
        std::vector<uint32_t> spirv = kernels::builtinSpirv(
          format("attention_coopmat_d{}_c{}", p.headDim, config.kvTile));
        // The module is written with NV cooperative matrices and rewritten
        // into the KHR form where the device has only that (as for OpMatMul,
        // the driver and the validation layer judge the rewritten module).
        if (khrForm) {
            spirv = internal::coopmatNvToKhr(spirv);
        }
        addDispatch(kernels::buildAlgorithm(check.device(), tensors, spirv,
                                            kernels::grid(workgroups(config.subgroups), caps, "OpAttention"),
                                            { local, config.subgroups, group, causal, 16, 16, 16,
                                              std::max(1u, subgroupSize / 16), vectorLoads ? 1u : 0u,
                                              config.prefetch ? 1u : 0u, outHalf },
                                            prefillPush));
        setPath(format("prefill-coopmat-{}-c{}-s{}{}", khrForm ? "khr" : "nv", config.kvTile, config.subgroups,
                       config.prefetch ? "-prefetch" : ""));
        return;
    }

    // Prefill in SIMT: tiles of 16 x 16 (8 x 8 where shared memory is
    // short), four invocations per row of the query tile.
    uint32_t tile = 16;
    auto sharedBytes = [&](uint32_t t) {
        return (uint64_t(t) * p.headDim * 3 + uint64_t(t) * t + 4 * uint64_t(t) + 1) * 4;
    };
    if (sharedBytes(tile) > caps.maxSharedBytes) {
        tile = 8;
    }
    check.require(sharedBytes(tile) <= caps.maxSharedBytes,
                  format("headDim = {} needs more shared memory than '{}' has ({} bytes)", p.headDim,
                         caps.deviceName, caps.maxSharedBytes));
    uint32_t local = tile * 4;
    uint32_t outputs = tile * p.headDim / local;
    uint64_t tiles = (uint64_t(p.rows) + tile - 1) / tile;
    addDispatch(kernels::buildAlgorithm(check.device(), tensors, kernels::builtinSpirv("attention_prefill_" + kv),
                                        kernels::grid(tiles * p.heads, caps, "OpAttention"),
                                        { local, p.headDim, group, tile, tile, causal, outputs, outHalf },
                                        prefillPush));
    setPath("prefill-tiled");
}

} // namespace kp
