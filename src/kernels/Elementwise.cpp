// SPDX-License-Identifier: Apache-2.0
// OpUnary, OpBinary, OpFma, OpSwiGLU: one invocation per element
// (shaders/Unary.comp, shaders/Binary.comp). They are bound by memory
// bandwidth with scalar loads already, so there is one path.
#include "kompute/kernels/Elementwise.hpp"

#include "kernels/KernelSupport.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

namespace {

constexpr uint32_t kPreferredLocalSize = 256;

/** `count`, or all of operand `out` from `offset` when it is 0. */
uint32_t
elementCount(const Checker& check, uint32_t count, uint64_t offset, size_t out)
{
    if (count != 0) {
        return count;
    }
    uint64_t size = check.operand(out).size();
    check.require(offset < size,
                  format("count = 0 means 'all of the output from its offset', but the offset {} is "
                         "not below the output's {} elements",
                         offset,
                         size));
    return static_cast<uint32_t>(size - offset);
}

/** bCount (or cCount): 0 means count; otherwise it must divide count. */
uint32_t
broadcastCount(const Checker& check, uint32_t given, uint32_t count, const char* name)
{
    if (given == 0) {
        return count;
    }
    check.require(given <= count && count % given == 0,
                  format("{} = {} must divide count = {} (the operand is repeated over rows of {} "
                         "elements)",
                         name,
                         given,
                         count,
                         given));
    return given;
}

struct ElementwisePush
{
    uint32_t count, bCount, cCount, aOffset, bOffset, cOffset, yOffset;
    // OpSwiGLU's rows (0: one row): of cols elements, a's, b's and y's rows
    // aStride, bStride and yStride apart (Binary.comp).
    uint32_t cols = 0, aStride = 0, bStride = 0, yStride = 0;
};

/** Elements an operand's `count` elements span in rows of `cols` (0: one
 * row), `stride` apart. */
uint64_t
rowsExtent(uint32_t count, uint32_t cols, uint32_t stride)
{
    return cols == 0 || count <= cols ? count : uint64_t(count / cols - 1) * stride + cols;
}

} // namespace

OpUnary::OpUnary(const std::vector<std::shared_ptr<Memory>>& tensors, const UnaryParams& params)
  : KernelOp("OpUnary")
{
    Checker check("OpUnary", tensors, { "x", "y" });
    auto xType = check.storageType(0);
    auto yType = check.storageType(1);
    uint32_t op = static_cast<uint32_t>(params.op);
    check.require(op <= static_cast<uint32_t>(UnaryOp::eSquare), format("unknown UnaryOp {}", op));
    uint32_t count = elementCount(check, params.count, params.yOffset, 1);
    check.covers(0, params.xOffset, count, format("count = {}", count));
    check.covers(1, params.yOffset, count, format("count = {}", count));
    check.aliasing(0, params.xOffset, count, 1, params.yOffset, count);
    struct
    {
        uint32_t count, xOffset, yOffset;
        float scale;
    } push{ count, check.offset32(params.xOffset, "xOffset"), check.offset32(params.yOffset, "yOffset"), params.scale };
    uint32_t local = check.caps().localSize(kPreferredLocalSize);
    std::string name = std::string("unary_") + kernels::typeName(xType) + "_" + kernels::typeName(yType);
    addDispatch(kernels::buildAlgorithm(check.device(),
                                        tensors,
                                        kernels::builtinSpirv(name),
                                        kernels::grid((uint64_t(count) + local - 1) / local, check.caps(), "OpUnary"),
                                        { local, op },
                                        push));
    setPath("element-wise");
}

namespace {

/** The dispatch of shaders/Binary.comp shared by OpBinary, OpSwiGLU, OpFma:
 * operands {a, b, (c)} of one type, y of any float type. */
std::shared_ptr<Algorithm>
binaryAlgorithm(const Checker& check,
                const char* opName,
                const std::vector<std::shared_ptr<Memory>>& tensors,
                uint32_t op,
                ElementwisePush push,
                bool ternary)
{
    size_t out = tensors.size() - 1;
    auto type = check.storageType(0);
    for (size_t i = 1; i < out; ++i) {
        check.storageType(i);
        check.sameDataType(0, i);
    }
    auto yType = check.storageType(out);
    // (Rows: only where b is not broadcast, bCount = count.)
    uint64_t aExtent = rowsExtent(push.count, push.cols, push.aStride);
    uint64_t bExtent = push.bCount == push.count ? rowsExtent(push.count, push.cols, push.bStride) : push.bCount;
    uint64_t yExtent = rowsExtent(push.count, push.cols, push.yStride);
    std::string rows = push.cols != 0 && push.cols < push.count ? format(" in rows of {}", push.cols) : std::string();
    check.covers(0, push.aOffset, aExtent, format("count = {}{}", push.count, rows));
    check.covers(1, push.bOffset, bExtent, format("{} elements{}", push.bCount, rows));
    if (ternary) {
        check.covers(2, push.cOffset, push.cCount, format("{} elements", push.cCount));
    }
    check.covers(out, push.yOffset, yExtent, format("count = {}{}", push.count, rows));
    // In place only element for element: the same range and row stride.
    check.aliasing(0, push.aOffset, aExtent, out, push.yOffset, yExtent, push.aStride == push.yStride);
    check.aliasing(1, push.bOffset, bExtent, out, push.yOffset, yExtent,
                   push.bCount == push.count && push.bStride == push.yStride);
    if (ternary) {
        check.aliasing(2, push.cOffset, push.cCount, out, push.yOffset, push.count, push.cCount == push.count);
    }
    uint32_t local = check.caps().localSize(kPreferredLocalSize);
    std::string name = std::string(ternary ? "fma_" : "binary_") + kernels::typeName(type) + "_" + kernels::typeName(yType);
    return kernels::buildAlgorithm(check.device(),
                                   tensors,
                                   kernels::builtinSpirv(name),
                                   kernels::grid((uint64_t(push.count) + local - 1) / local, check.caps(), opName),
                                   { local, op },
                                   push);
}

constexpr uint32_t kSwiGLUCode = 4; // Binary.comp's OP for silu(a) * b

} // namespace

OpBinary::OpBinary(const std::vector<std::shared_ptr<Memory>>& tensors, const BinaryParams& params)
  : KernelOp("OpBinary")
{
    Checker check("OpBinary", tensors, { "a", "b", "y" });
    uint32_t op = static_cast<uint32_t>(params.op);
    check.require(op <= static_cast<uint32_t>(BinaryOp::eDiv), format("unknown BinaryOp {}", op));
    uint32_t count = elementCount(check, params.count, params.yOffset, 2);
    ElementwisePush push{ count,
                          broadcastCount(check, params.bCount, count, "bCount"),
                          0,
                          check.offset32(params.aOffset, "aOffset"),
                          check.offset32(params.bOffset, "bOffset"),
                          0,
                          check.offset32(params.yOffset, "yOffset") };
    addDispatch(binaryAlgorithm(check, "OpBinary", tensors, op, push, false));
    setPath("element-wise");
}

OpSwiGLU::OpSwiGLU(const std::vector<std::shared_ptr<Memory>>& tensors, const SwiGLUParams& params)
  : KernelOp("OpSwiGLU")
{
    Checker check("OpSwiGLU", tensors, { "gate", "up", "y" });
    uint32_t cols = params.cols;
    check.require(cols != 0 || (params.gateRowStride == 0 && params.upRowStride == 0 && params.yRowStride == 0),
                  "row strides need cols (the elements of a row)");
    check.require(cols == 0 || params.count != 0, "with cols, count must be given (rows x cols)");
    uint32_t count = elementCount(check, params.count, params.yOffset, 2);
    check.require(cols == 0 || count % cols == 0,
                  format("count = {} is not whole rows of cols = {}", count, cols));
    auto stride = [&](uint32_t given, const char* name) {
        uint32_t s = given == 0 ? cols : given;
        check.require(s >= cols, format("{} = {} is shorter than a row (cols = {}): rows would overlap", name, given, cols));
        return s;
    };
    ElementwisePush push{ count,
                          count,
                          0,
                          check.offset32(params.gateOffset, "gateOffset"),
                          check.offset32(params.upOffset, "upOffset"),
                          0,
                          check.offset32(params.yOffset, "yOffset"),
                          cols,
                          stride(params.gateRowStride, "gateRowStride"),
                          stride(params.upRowStride, "upRowStride"),
                          stride(params.yRowStride, "yRowStride") };
    addDispatch(binaryAlgorithm(check, "OpSwiGLU", tensors, kSwiGLUCode, push, false));
    setPath("element-wise");
}

OpFma::OpFma(const std::vector<std::shared_ptr<Memory>>& tensors, const FmaParams& params)
  : KernelOp("OpFma")
{
    Checker check("OpFma", tensors, { "a", "b", "c", "y" });
    uint32_t count = elementCount(check, params.count, params.yOffset, 3);
    ElementwisePush push{ count,
                          broadcastCount(check, params.bCount, count, "bCount"),
                          broadcastCount(check, params.cCount, count, "cCount"),
                          check.offset32(params.aOffset, "aOffset"),
                          check.offset32(params.bOffset, "bOffset"),
                          check.offset32(params.cOffset, "cOffset"),
                          check.offset32(params.yOffset, "yOffset") };
    addDispatch(binaryAlgorithm(check, "OpFma", tensors, 0, push, true));
    setPath("element-wise");
}

} // namespace kp
