// SPDX-License-Identifier: Apache-2.0
// OpRoPE: one invocation per pair of values (shaders/RoPE.comp); positions
// are read on the device, so a recorded sequence serves every step.
#include "kompute/kernels/RoPE.hpp"

#include <cmath>

#include "kernels/KernelSupport.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

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
    uint32_t mode = static_cast<uint32_t>(params.mode);
    check.require(mode <= 1, format("unknown RoPEMode {}", mode));
    check.require(params.rows > 0 && params.heads > 0 && params.headDim > 0,
                  format("rows, heads and headDim must be at least 1 ({}, {}, {} given)", params.rows,
                         params.heads, params.headDim));
    check.require(params.headDim % 2 == 0, format("headDim = {} must be even", params.headDim));
    uint32_t ropeDims = params.ropeDims == 0 ? params.headDim : params.ropeDims;
    check.require(ropeDims % 2 == 0 && ropeDims <= params.headDim,
                  format("ropeDims = {} must be even and at most headDim = {}", ropeDims, params.headDim));
    check.require(params.theta > 0.0f, format("theta must be positive ({} given)", params.theta));
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

} // namespace kp
