// SPDX-License-Identifier: Apache-2.0
// OpReduce and OpSoftmax: one workgroup per row (shaders/Reduce.comp,
// shaders/Softmax.comp), reducing with subgroup operations where the device
// has them and through shared memory otherwise; the argmax of one long row
// takes many workgroups.
#include "kompute/kernels/Reduce.hpp"

#include <algorithm>

#include "kernels/KernelSupport.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

namespace {

// Argmax of one long row: values per invocation of each workgroup, and at
// most this many workgroups (the merge reads a few bests per invocation).
constexpr uint32_t kSplitValues = 4;
constexpr uint32_t kMaxSplitGroups = 1024;

} // namespace

OpReduce::OpReduce(const std::vector<std::shared_ptr<Memory>>& tensors, const ReduceParams& params)
  : KernelOp("OpReduce")
{
    Checker check("OpReduce", tensors, { "x", "y" });
    uint32_t op = static_cast<uint32_t>(params.op);
    check.require(op <= static_cast<uint32_t>(ReduceOp::eArgmax), format("unknown ReduceOp {}", op));
    bool argmax = params.op == ReduceOp::eArgmax;
    auto xType = check.storageType(0);
    check.dataType(1, { argmax ? Memory::DataTypes::eUnsignedInt : Memory::DataTypes::eFloat });
    check.require(params.rows > 0 && params.cols > 0,
                  format("rows and cols must be at least 1 ({} x {} given)", params.rows, params.cols));
    uint32_t stride = params.xRowStride == 0 ? params.cols : params.xRowStride;
    check.require(stride >= params.cols, format("xRowStride = {} is less than cols = {}", stride, params.cols));
    check.covers(0, params.xOffset, kernels::rowsExtent(params.rows, params.cols, stride),
                 format("{} rows of {} (row stride {})", params.rows, params.cols, stride));
    check.covers(1, params.yOffset, params.rows, format("{} rows", params.rows));
    struct
    {
        uint32_t rows, cols, xRowStride, xOffset, yOffset;
    } push{ params.rows, params.cols, stride, check.offset32(params.xOffset, "xOffset"),
            check.offset32(params.yOffset, "yOffset") };
    auto path = kernels::reductionPath(check.caps());
    uint32_t local = kernels::rowLocalSize(check.caps(), params.cols);
    check.require(params.argmaxGroups <= kMaxSplitGroups,
                  format("argmaxGroups = {} is more than {}", params.argmaxGroups, kMaxSplitGroups));
    check.require(params.argmaxGroups <= 1 || (argmax && params.rows == 1),
                  format("argmaxGroups = {} applies to the argmax of one row only (op {}, rows {} given)",
                         params.argmaxGroups, op, params.rows));
    // One long row (the logits of a decode step): one workgroup would read
    // it all alone, so many read a chunk each, and the last to finish
    // merges their bests (shaders/Reduce.comp's SPLIT).
    uint32_t groups = 1;
    if (argmax && params.rows == 1) {
        uint32_t most = (params.cols + kSplitValues * local - 1) / (kSplitValues * local);
        bool cpu = check.device()->properties().deviceType == vk::PhysicalDeviceType::eCpu;
        uint32_t wanted = params.argmaxGroups != 0 ? params.argmaxGroups : cpu ? 1 : kMaxSplitGroups;
        groups = std::min(wanted, most);
    }
    if (groups > 1) {
        uint32_t chunk = (params.cols + groups - 1) / groups;
        groups = (params.cols + chunk - 1) / chunk; // none empty
        struct
        {
            uint32_t rows, cols, xRowStride, xOffset, yOffset, chunk, groups;
        } splitPush{ push.rows, push.cols, push.xRowStride, push.xOffset, push.yOffset, chunk, groups };
        // Zero once here (uploaded at creation); each evaluation leaves the
        // count 0.
        auto scratch = std::make_shared<TensorT<uint32_t>>(
          check.device(), std::vector<uint32_t>(1 + 2 * size_t(groups), 0u), Memory::MemoryTypes::eStorage);
        std::string name = std::string("argmax_split_") + kernels::typeName(xType) + path.suffix;
        addDispatch(kernels::buildAlgorithm(check.device(), { tensors[0], tensors[1], scratch },
                                            kernels::builtinSpirv(name), kernels::grid(groups, check.caps(), "OpReduce"),
                                            { local, op }, splitPush));
        setPath(std::string("split-") + path.name);
        return;
    }
    std::string name = std::string(argmax ? "argmax_" : "reduce_") + kernels::typeName(xType) + path.suffix;
    addDispatch(kernels::buildAlgorithm(check.device(), tensors, kernels::builtinSpirv(name),
                                        kernels::grid(params.rows, check.caps(), "OpReduce"), { local, op }, push));
    setPath(path.name);
}

OpSoftmax::OpSoftmax(const std::vector<std::shared_ptr<Memory>>& tensors, const SoftmaxParams& params)
  : KernelOp("OpSoftmax")
{
    Checker check("OpSoftmax", tensors, { "x", "y" });
    auto type = check.storageType(0);
    check.storageType(1);
    check.sameDataType(0, 1);
    check.require(params.rows > 0 && params.cols > 0,
                  format("rows and cols must be at least 1 ({} x {} given)", params.rows, params.cols));
    uint32_t xStride = params.xRowStride == 0 ? params.cols : params.xRowStride;
    uint32_t yStride = params.yRowStride == 0 ? params.cols : params.yRowStride;
    check.require(xStride >= params.cols && yStride >= params.cols,
                  format("row strides ({}, {}) must be at least cols = {}", xStride, yStride, params.cols));
    uint32_t rowsPerMatrix = params.rowsPerMatrix == 0 ? params.rows : params.rowsPerMatrix;
    uint64_t xExtent = kernels::rowsExtent(params.rows, params.cols, xStride);
    uint64_t yExtent = kernels::rowsExtent(params.rows, params.cols, yStride);
    check.covers(0, params.xOffset, xExtent, format("{} rows of {} (row stride {})", params.rows, params.cols, xStride));
    check.covers(1, params.yOffset, yExtent, format("{} rows of {} (row stride {})", params.rows, params.cols, yStride));
    check.require(xStride == yStride || tensors[0] != tensors[1] || params.xOffset + xExtent <= params.yOffset ||
                    params.yOffset + yExtent <= params.xOffset,
                  "in place (x and y one tensor) needs equal row strides");
    check.aliasing(0, params.xOffset, xExtent, 1, params.yOffset, yExtent);
    struct
    {
        uint32_t rows, cols;
        float scale;
        uint32_t rowsPerMatrix, causalShift, xRowStride, yRowStride, xOffset, yOffset;
    } push{ params.rows,
            params.cols,
            params.scale,
            rowsPerMatrix,
            params.causalShift,
            xStride,
            yStride,
            check.offset32(params.xOffset, "xOffset"),
            check.offset32(params.yOffset, "yOffset") };
    auto path = kernels::reductionPath(check.caps());
    uint32_t local = kernels::rowLocalSize(check.caps(), params.cols);
    std::string name = std::string("softmax_") + kernels::typeName(type) + path.suffix;
    addDispatch(kernels::buildAlgorithm(check.device(), tensors, kernels::builtinSpirv(name),
                                        kernels::grid(params.rows, check.caps(), "OpSoftmax"),
                                        { local, params.causal ? 1u : 0u }, push));
    setPath(path.name);
}

} // namespace kp
