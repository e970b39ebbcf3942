// SPDX-License-Identifier: Apache-2.0
// OpRMSNorm and OpLayerNorm: one workgroup per row (shaders/Norm.comp),
// reducing with subgroup operations where the device has them and through
// shared memory otherwise.
#include "kompute/kernels/Norm.hpp"

#include "kernels/KernelSupport.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using kernels::Checker;
using logger::format;

namespace {

struct NormShape
{
    uint32_t rows, cols;
    float eps;
    uint32_t xRowStride, yRowStride;
    uint64_t xOffset, weightOffset, biasOffset, yOffset;
    uint32_t heads; // vectors of cols per row, each normalized on its own
    uint32_t weightHeadStride; // weights of vector h start h * this after weightOffset
};

/** Checks and builds the dispatch of either norm. `tensors` is the user's
 * list: {x, y}, {x, weight, y} or (LayerNorm) {x, weight, bias, y}. */
std::shared_ptr<Algorithm>
normAlgorithm(const char* opName,
              const std::vector<std::shared_ptr<Memory>>& tensors,
              const NormShape& shape,
              bool layer,
              std::string& pathName)
{
    size_t given = tensors.size();
    bool hasWeight = given >= 3;
    bool hasBias = layer && given == 4;
    std::vector<const char*> names;
    if (given == 4 && layer) {
        names = { "x", "weight", "bias", "y" };
    } else if (given == 3) {
        names = { "x", "weight", "y" };
    } else {
        names = { "x", "y" };
    }
    Checker check(opName, tensors, names);
    size_t out = given - 1;
    auto type = check.storageType(0);
    // y may hold another float type than x (a prefill step's f16 rows).
    auto yType = check.storageType(out);
    check.require(shape.rows > 0 && shape.cols > 0,
                  format("rows and cols must be at least 1 ({} x {} given)", shape.rows, shape.cols));
    check.require(shape.eps >= 0.0f, format("eps must not be negative ({} given)", shape.eps));
    check.require(shape.heads > 0, "heads must be at least 1");
    uint64_t width = uint64_t(shape.heads) * shape.cols; // elements of a row
    check.require(width <= UINT32_MAX && uint64_t(shape.rows) * shape.heads <= UINT32_MAX,
                  "rows * heads and heads * cols must fit 32 bits");
    uint32_t xStride = shape.xRowStride == 0 ? static_cast<uint32_t>(width) : shape.xRowStride;
    uint32_t yStride = shape.yRowStride == 0 ? static_cast<uint32_t>(width) : shape.yRowStride;
    check.require(xStride >= width && yStride >= width,
                  format("row strides ({}, {}) must be at least heads * cols = {}", xStride, yStride, width));
    uint64_t xExtent = kernels::rowsExtent(shape.rows, width, xStride);
    uint64_t yExtent = kernels::rowsExtent(shape.rows, width, yStride);
    check.covers(0, shape.xOffset, xExtent, format("{} rows of {} (row stride {})", shape.rows, width, xStride));
    check.covers(out, shape.yOffset, yExtent, format("{} rows of {} (row stride {})", shape.rows, width, yStride));
    check.aliasing(0, shape.xOffset, xExtent, out, shape.yOffset, yExtent);
    check.require(tensors[0] != tensors[out] || xStride == yStride || shape.xOffset + xExtent <= shape.yOffset ||
                    shape.yOffset + yExtent <= shape.xOffset,
                  "in place (x and y one tensor) needs equal row strides");
    if (hasWeight) {
        check.dataType(1, { Memory::DataTypes::eFloat });
        uint64_t wExtent = uint64_t(shape.heads - 1) * shape.weightHeadStride + shape.cols;
        check.covers(1, shape.weightOffset, wExtent,
                     shape.weightHeadStride == 0
                       ? format("cols = {}", shape.cols)
                       : format("{} heads of {} weights, {} apart", shape.heads, shape.cols, shape.weightHeadStride));
        check.aliasing(1, shape.weightOffset, wExtent, out, shape.yOffset, yExtent, false);
    }
    if (hasBias) {
        check.dataType(2, { Memory::DataTypes::eFloat });
        check.covers(2, shape.biasOffset, shape.cols, format("cols = {}", shape.cols));
        check.aliasing(2, shape.biasOffset, shape.cols, out, shape.yOffset, yExtent, false);
    }
    // The shader always has four bindings: x stands in for what is absent.
    std::vector<std::shared_ptr<Memory>> bound = { tensors[0],
                                                   hasWeight ? tensors[1] : tensors[0],
                                                   hasBias ? tensors[2] : tensors[0],
                                                   tensors[out] };
    struct
    {
        uint32_t rows, cols;
        float eps;
        uint32_t xRowStride, yRowStride, xOffset, wOffset, bOffset, yOffset, heads, wHeadStride;
    } push{ shape.rows,
            shape.cols,
            shape.eps,
            xStride,
            yStride,
            check.offset32(shape.xOffset, "xOffset"),
            check.offset32(hasWeight ? shape.weightOffset : 0, "weightOffset"),
            check.offset32(hasBias ? shape.biasOffset : 0, "biasOffset"),
            check.offset32(shape.yOffset, "yOffset"),
            shape.heads,
            hasWeight ? shape.weightHeadStride : 0 };
    auto path = kernels::reductionPath(check.caps());
    pathName = path.name;
    // Up to 1024 invocations: a row of up to 4 x 1024 values then sits in
    // registers, read once (Norm.comp's CACHED).
    uint32_t local = kernels::rowLocalSize(check.caps(), shape.cols, 1024);
    std::string name = std::string(layer ? "layernorm_" : "rmsnorm_") + kernels::typeName(type) + "_" +
                       kernels::typeName(yType) + path.suffix;
    return kernels::buildAlgorithm(check.device(), bound, kernels::builtinSpirv(name),
                                   kernels::grid(uint64_t(shape.rows) * shape.heads, check.caps(), opName),
                                   { local, hasWeight ? 1u : 0u, hasBias ? 1u : 0u }, push);
}

} // namespace

OpRMSNorm::OpRMSNorm(const std::vector<std::shared_ptr<Memory>>& tensors, const RMSNormParams& params)
  : KernelOp("OpRMSNorm")
{
    if (tensors.size() != 2 && tensors.size() != 3) {
        throw Error(format("OpRMSNorm: needs tensors {{x, weight, y}} or {{x, y}}, {} given", tensors.size()));
    }
    std::string path;
    addDispatch(normAlgorithm("OpRMSNorm",
                              tensors,
                              NormShape{ params.rows, params.cols, params.eps, params.xRowStride, params.yRowStride,
                                         params.xOffset, params.weightOffset, 0, params.yOffset, params.heads,
                                         params.weightHeadStride },
                              false,
                              path));
    setPath(path);
}

OpLayerNorm::OpLayerNorm(const std::vector<std::shared_ptr<Memory>>& tensors, const LayerNormParams& params)
  : KernelOp("OpLayerNorm")
{
    if (tensors.size() < 2 || tensors.size() > 4) {
        throw Error(format("OpLayerNorm: needs tensors {{x, weight, bias, y}}, {{x, weight, y}} or {{x, y}}, {} "
                           "given",
                           tensors.size()));
    }
    std::string path;
    addDispatch(normAlgorithm("OpLayerNorm",
                              tensors,
                              NormShape{ params.rows, params.cols, params.eps, params.xRowStride, params.yRowStride,
                                         params.xOffset, params.weightOffset, params.biasOffset, params.yOffset, 1, 0 },
                              true,
                              path));
    setPath(path);
}

} // namespace kp
