// SPDX-License-Identifier: Apache-2.0
// OpSetRows: one invocation per element (shaders/SetRows.comp), the
// destination row read on the device.
#include "kompute/kernels/SetRows.hpp"

#include "kernels/KernelSupport.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

OpSetRows::OpSetRows(const std::vector<std::shared_ptr<Memory>>& tensors, const SetRowsParams& params)
  : KernelOp("OpSetRows")
{
    Checker check("OpSetRows", tensors, { "src", "dst", "positions" });
    auto srcType = check.storageType(0);
    auto dstType = check.storageType(1);
    check.require(srcType != kernels::StorageType::eBF16, "src must be f32 or f16 (eFloat or eHalf)");
    check.dataType(2, { Memory::DataTypes::eUnsignedInt });
    check.require(params.rows > 0 && params.cols > 0,
                  format("rows and cols must be at least 1 ({} x {} given)", params.rows, params.cols));
    uint32_t srcStride = params.srcRowStride == 0 ? params.cols : params.srcRowStride;
    uint32_t dstStride = params.dstRowStride == 0 ? params.cols : params.dstRowStride;
    check.require(srcStride >= params.cols && dstStride >= params.cols,
                  format("row strides (src {}, dst {}) must be at least cols = {}", srcStride, dstStride, params.cols));
    check.require(tensors[0] != tensors[1], "src and dst must be different tensors");
    check.covers(0, params.srcOffset, kernels::rowsExtent(params.rows, params.cols, srcStride),
                 format("{} rows of {} (row stride {})", params.rows, params.cols, srcStride));
    check.covers(1, params.dstOffset, params.cols, format("one row of {}", params.cols));
    check.covers(2, params.positionsOffset, params.rows, format("{} rows", params.rows));
    uint64_t dstRows = (tensors[1]->size() - params.dstOffset - params.cols) / dstStride + 1;
    struct
    {
        uint32_t rows, cols, srcRowStride, srcOffset, dstRowStride, dstOffset, dstRows, positionsOffset;
    } push{ params.rows,
            params.cols,
            srcStride,
            check.offset32(params.srcOffset, "srcOffset"),
            dstStride,
            check.offset32(params.dstOffset, "dstOffset"),
            static_cast<uint32_t>(dstRows),
            check.offset32(params.positionsOffset, "positionsOffset") };
    uint64_t invocations = uint64_t(params.rows) * params.cols;
    check.require(invocations <= UINT32_MAX, "rows * cols exceeds 2^32 - 1");
    uint32_t local = check.caps().localSize(256);
    std::string name = std::string("setrows_") + kernels::typeName(srcType) + "_" + kernels::typeName(dstType);
    addDispatch(kernels::buildAlgorithm(check.device(), tensors, kernels::builtinSpirv(name),
                                        kernels::grid((invocations + local - 1) / local, check.caps(), "OpSetRows"),
                                        { local }, push));
    setPath("element-wise");
}

} // namespace kp
