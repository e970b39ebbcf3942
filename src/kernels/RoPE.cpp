// SPDX-License-Identifier: Apache-2.0
// OpRoPE and OpRoPECache: one invocation per pair of values
// (shaders/RoPE.comp); positions are read on the device, so a recorded
// sequence serves every step.
#include "kompute/kernels/RoPE.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/KernelSupport.hpp"
#include "kernels/RoPECache.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

namespace {

struct Rotation
{
    uint32_t mode; // RoPEMode, the shaders' NEOX
    uint32_t ropeDims; // 0 replaced by headDim
};

/** The checks of the rotation parameters OpRoPE and OpRoPECache share. */
Rotation
checkRotation(const Checker& check, RoPEMode roPEMode, uint32_t headDim, uint32_t ropeDims, float theta)
{
    uint32_t mode = static_cast<uint32_t>(roPEMode);
    check.require(mode <= 1, format("unknown RoPEMode {}", mode));
    check.require(headDim % 2 == 0, format("headDim = {} must be even", headDim));
    uint32_t dims = ropeDims == 0 ? headDim : ropeDims;
    check.require(dims % 2 == 0 && dims <= headDim,
                  format("ropeDims = {} must be even and at most headDim = {}", dims, headDim));
    check.require(theta > 0.0f, format("theta must be positive ({} given)", theta));
    return { mode, dims };
}

/** Rows of `cols` elements, `stride` apart from `offset`, that fit in a
 * tensor of `size` elements (at least one: the caller checked it). */
uint32_t
rowsThatFit(uint64_t size, uint64_t offset, uint64_t cols, uint64_t stride)
{
    return static_cast<uint32_t>(std::min<uint64_t>(UINT32_MAX, (size - offset - cols) / stride + 1));
}

} // namespace

namespace kernels {

RoPECacheResolved
resolveRoPECache(const Checker& check, const RoPECacheParams& params, const RoPECacheTensors& at)
{
    Memory& qkv = check.operand(at.qkv);
    Memory& keys = check.operand(at.keys);
    Memory& values = check.operand(at.values);
    auto type = check.storageType(at.qkv);
    check.require(type != StorageType::eBF16, "qkv must be f32 or f16 (eFloat or eHalf)");
    check.dataType(at.positions, { Memory::DataTypes::eUnsignedInt });
    auto cacheType = check.storageType(at.keys);
    check.storageType(at.values);
    check.sameDataType(at.keys, at.values);
    check.require(&qkv != &keys && &qkv != &values && &keys != &values,
                  "qkv, keyCache and valueCache must be three different tensors");
    check.require(params.rows > 0 && params.heads > 0 && params.kvHeads > 0 && params.headDim > 0,
                  format("rows, heads, kvHeads and headDim must be at least 1 ({}, {}, {}, {} given)", params.rows,
                         params.heads, params.kvHeads, params.headDim));
    Rotation rotation = checkRotation(check, params.mode, params.headDim, params.ropeDims, params.theta);
    uint64_t rowHeads = uint64_t(params.heads) + 2 * uint64_t(params.kvHeads);
    uint64_t rowWidth = rowHeads * params.headDim;
    uint64_t cacheWidth = uint64_t(params.kvHeads) * params.headDim;
    check.require(rowWidth <= UINT32_MAX, "(heads + 2 kvHeads) * headDim exceeds 2^32 - 1");
    uint32_t qkvStride = params.qkvRowStride == 0 ? static_cast<uint32_t>(rowWidth) : params.qkvRowStride;
    uint32_t cacheStride = params.cacheRowStride == 0 ? static_cast<uint32_t>(cacheWidth) : params.cacheRowStride;
    check.require(qkvStride >= rowWidth,
                  format("qkvRowStride = {} is less than (heads + 2 kvHeads) * headDim = {}", qkvStride, rowWidth));
    check.require(cacheStride >= cacheWidth,
                  format("cacheRowStride = {} is less than kvHeads * headDim = {}", cacheStride, cacheWidth));
    uint64_t qkvExtent = rowsExtent(params.rows, rowWidth, qkvStride);
    check.covers(at.qkv, params.qkvOffset, qkvExtent,
                 format("{} rows of {} + 2 x {} heads x {} (row stride {})", params.rows, params.heads,
                        params.kvHeads, params.headDim, qkvStride));
    check.covers(at.positions, params.positionsOffset, params.rows, format("{} rows", params.rows));
    std::string cacheRow = format("one row of {} heads x {}", params.kvHeads, params.headDim);
    check.covers(at.keys, params.cacheOffset, cacheWidth, cacheRow);
    check.covers(at.values, params.cacheOffset, cacheWidth, cacheRow);
    // Everything the caches may hold from cacheOffset on is written.
    uint64_t keyExtent = keys.size() - params.cacheOffset;
    uint64_t valueExtent = values.size() - params.cacheOffset;
    auto readOnly = [&](size_t index, uint64_t offset, uint64_t extent, const std::string& what) {
        check.covers(index, offset, extent, what);
        check.aliasing(index, offset, extent, at.qkv, params.qkvOffset, qkvExtent, false);
        check.aliasing(index, offset, extent, at.keys, params.cacheOffset, keyExtent, false);
        check.aliasing(index, offset, extent, at.values, params.cacheOffset, valueExtent, false);
    };
    if (params.hasFreqFactors) {
        check.dataType(at.factors, { Memory::DataTypes::eFloat });
        readOnly(at.factors, params.freqFactorsOffset, rotation.ropeDims / 2,
                 format("ropeDims / 2 = {}", rotation.ropeDims / 2));
    }
    if (params.hasBias) {
        check.dataType(at.bias, { Memory::DataTypes::eFloat });
        readOnly(at.bias, params.biasOffset, rowWidth, format("(heads + 2 kvHeads) * headDim = {}", rowWidth));
    }
    RoPECachePush push{ params.heads,
                        params.kvHeads,
                        params.headDim,
                        rotation.ropeDims,
                        static_cast<float>(std::log2(double(params.theta))),
                        params.freqScale,
                        cacheStride,
                        check.offset32(params.cacheOffset, "cacheOffset"),
                        rowsThatFit(keys.size(), params.cacheOffset, cacheWidth, cacheStride),
                        rowsThatFit(values.size(), params.cacheOffset, cacheWidth, cacheStride),
                        check.offset32(params.positionsOffset, "positionsOffset"),
                        check.offset32(params.hasFreqFactors ? params.freqFactorsOffset : 0, "freqFactorsOffset"),
                        check.offset32(params.hasBias ? params.biasOffset : 0, "biasOffset") };
    return { rotation.mode, qkvStride, rowWidth, qkvExtent, type, cacheType, push };
}

} // namespace kernels

OpRoPE::OpRoPE(const std::vector<std::shared_ptr<Memory>>& tensors, const RoPEParams& params)
  : KernelOp("OpRoPE")
{
    if (tensors.size() != 3 && tensors.size() != 4) {
        throw Error(format("OpRoPE: needs tensors {{x, positions, y}} or {{x, positions, y, freqFactors}}, {} given",
                           tensors.size()));
    }
    const bool hasFactors = tensors.size() == 4;
    Checker check("OpRoPE", tensors,
                  hasFactors ? std::vector<const char*>{ "x", "positions", "y", "freqFactors" }
                             : std::vector<const char*>{ "x", "positions", "y" });
    auto type = check.storageType(0);
    check.storageType(2);
    check.sameDataType(0, 2);
    check.require(type != kernels::StorageType::eBF16, "x and y must be f32 or f16 (eFloat or eHalf)");
    check.dataType(1, { Memory::DataTypes::eUnsignedInt });
    check.require(params.rows > 0 && params.heads > 0 && params.headDim > 0,
                  format("rows, heads and headDim must be at least 1 ({}, {}, {} given)", params.rows,
                         params.heads, params.headDim));
    Rotation rotation = checkRotation(check, params.mode, params.headDim, params.ropeDims, params.theta);
    uint32_t mode = rotation.mode;
    uint32_t ropeDims = rotation.ropeDims;
    uint64_t rowWidth = uint64_t(params.heads) * params.headDim;
    check.require(rowWidth <= UINT32_MAX, "heads * headDim exceeds 2^32 - 1");
    uint32_t xStride = params.xRowStride == 0 ? static_cast<uint32_t>(rowWidth) : params.xRowStride;
    uint32_t yStride = params.yRowStride == 0 ? static_cast<uint32_t>(rowWidth) : params.yRowStride;
    check.require(xStride >= rowWidth && yStride >= rowWidth,
                  format("row strides ({}, {}) must be at least heads * headDim = {}", xStride, yStride, rowWidth));
    uint64_t xExtent = kernels::rowsExtent(params.rows, rowWidth, xStride);
    uint64_t yExtent = kernels::rowsExtent(params.rows, rowWidth, yStride);
    std::string shape = format("{} rows of {} heads x {} (row stride {})", params.rows, params.heads, params.headDim,
                               xStride);
    check.covers(0, params.xOffset, xExtent, shape);
    check.covers(2, params.yOffset, yExtent, shape);
    check.covers(1, params.positionsOffset, params.rows, format("{} rows", params.rows));
    check.aliasing(0, params.xOffset, xExtent, 2, params.yOffset, yExtent);
    check.require(tensors[0] != tensors[2] || xStride == yStride || params.xOffset + xExtent <= params.yOffset ||
                    params.yOffset + yExtent <= params.xOffset,
                  "in place (x and y one tensor) needs equal row strides");
    if (hasFactors) {
        check.dataType(3, { Memory::DataTypes::eFloat });
        check.covers(3, params.freqFactorsOffset, ropeDims / 2, format("ropeDims / 2 = {}", ropeDims / 2));
        check.aliasing(3, params.freqFactorsOffset, ropeDims / 2, 2, params.yOffset, yExtent, false);
    }
    struct
    {
        uint32_t rows, heads, headDim, ropeDims;
        float log2Theta, freqScale;
        uint32_t xRowStride, yRowStride, xOffset, yOffset, positionsOffset, factorsOffset;
    } push{ params.rows,
            params.heads,
            params.headDim,
            ropeDims,
            static_cast<float>(std::log2(double(params.theta))),
            params.freqScale,
            xStride,
            yStride,
            check.offset32(params.xOffset, "xOffset"),
            check.offset32(params.yOffset, "yOffset"),
            check.offset32(params.positionsOffset, "positionsOffset"),
            check.offset32(hasFactors ? params.freqFactorsOffset : 0, "freqFactorsOffset") };
    uint64_t invocations = uint64_t(params.rows) * rowWidth / 2;
    check.require(invocations <= UINT32_MAX, "rows * heads * headDim / 2 exceeds 2^32 - 1");
    uint32_t local = check.caps().localSize(256);
    // The shader always has four bindings: x stands in for absent factors.
    std::vector<std::shared_ptr<Memory>> bound = { tensors[0], tensors[1], tensors[2],
                                                   hasFactors ? tensors[3] : tensors[0] };
    addDispatch(kernels::buildAlgorithm(check.device(), bound,
                                        kernels::builtinSpirv(std::string("rope_") + kernels::typeName(type)),
                                        kernels::grid((invocations + local - 1) / local, check.caps(), "OpRoPE"),
                                        { local, mode, hasFactors ? 1u : 0u }, push));
    setPath("element-wise");
}

OpRoPECache::OpRoPECache(const std::vector<std::shared_ptr<Memory>>& tensors, const RoPECacheParams& params)
  : KernelOp("OpRoPECache")
{
    std::vector<const char*> names = { "qkv", "positions", "keyCache", "valueCache" };
    size_t factorsIndex = names.size();
    if (params.hasFreqFactors) {
        names.push_back("freqFactors");
    }
    size_t biasIndex = names.size();
    if (params.hasBias) {
        names.push_back("bias");
    }
    if (tensors.size() != names.size()) {
        throw Error(format("OpRoPECache: needs tensors {{qkv, positions, keyCache, valueCache{}{}}} (hasFreqFactors "
                           "{}, hasBias {}), {} given",
                           params.hasFreqFactors ? ", freqFactors" : "", params.hasBias ? ", bias" : "",
                           params.hasFreqFactors ? "true" : "false", params.hasBias ? "true" : "false",
                           tensors.size()));
    }
    Checker check("OpRoPECache", tensors, names);
    kernels::RoPECacheResolved r =
      kernels::resolveRoPECache(check, params, { 0, 1, 2, 3, factorsIndex, biasIndex });
    struct
    {
        uint32_t rows, qkvRowStride, qkvOffset;
        kernels::RoPECachePush rope;
    } push{ params.rows, r.qkvStride, check.offset32(params.qkvOffset, "qkvOffset"), r.push };
    uint64_t invocations = uint64_t(params.rows) * r.rowWidth / 2;
    check.require(invocations <= UINT32_MAX && r.qkvExtent + params.qkvOffset <= UINT32_MAX,
                  "rows * (heads + 2 kvHeads) * headDim exceeds 2^32 - 1");
    uint32_t local = check.caps().localSize(256);
    // The shader always has six bindings: qkv stands in for what is absent.
    std::vector<std::shared_ptr<Memory>> bound = { tensors[0],
                                                   tensors[1],
                                                   tensors[2],
                                                   tensors[3],
                                                   params.hasFreqFactors ? tensors[factorsIndex] : tensors[0],
                                                   params.hasBias ? tensors[biasIndex] : tensors[0] };
    std::string name =
      std::string("rope_cache_") + kernels::typeName(r.qkvType) + "_" + kernels::typeName(r.cacheType);
    addDispatch(kernels::buildAlgorithm(check.device(), bound, kernels::builtinSpirv(name),
                                        kernels::grid((invocations + local - 1) / local, check.caps(), "OpRoPECache"),
                                        { local, r.mode, params.hasFreqFactors ? 1u : 0u,
                                          params.hasBias ? 1u : 0u },
                                        push));
    setPath("element-wise");
}

} // namespace kp
