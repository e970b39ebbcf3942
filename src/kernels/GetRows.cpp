// SPDX-License-Identifier: Apache-2.0
#include "kompute/kernels/GetRows.hpp"

#include <algorithm>
#include <limits>

#include "kernels/KernelSupport.hpp"
#include "kernels/MatMulConfig.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using logger::format;
using namespace kernels;
using namespace kernels::matmul;

namespace {

constexpr const char* kOp = "OpGetRows";
constexpr uint32_t kLocalSize = 256; // GetRows.comp

// GetRowsParams in GetRows.comp.
struct GetRowsPush
{
    uint32_t rows, cols, tableRows, tableStride, tableOffset, idsOffset, outStride, outOffset;
};

} // namespace

OpGetRows::OpGetRows(const std::vector<std::shared_ptr<Memory>>& memObjects, const GetRowsParams& params)
  : KernelOp(kOp)
{
    using DT = Memory::DataTypes;
    Checker checker(kOp, memObjects, { "table", "ids", "out" });
    const auto& device = checker.device();
    const auto& caps = checker.caps();
    Memory& table = *memObjects[0];
    Memory& ids = *memObjects[1];
    Memory& out = *memObjects[2];
    if (params.rows == 0 || params.cols == 0) {
        checker.fail(format("rows and cols must be at least 1 (rows = {}, cols = {})", params.rows, params.cols));
    }
    if (memObjects[2] == memObjects[0] || memObjects[2] == memObjects[1]) {
        checker.fail("out must be a tensor of its own, not the table or the ids");
    }
    bool quantized = params.formatTable != WeightFormat::eNone;
    uint32_t type = kF32;
    uint64_t tableElements = table.size();
    if (quantized) {
        if (table.dataType() != DT::eUnsignedChar) {
            checker.fail(format("formatTable is {}, so the table must be an eUnsignedChar tensor of GGUF "
                        "blocks, not {}",
                        toString(params.formatTable),
                        Memory::toString(table.dataType())));
        }
        uint32_t block = blockBytes(params.formatTable);
        if (table.memorySize() % block != 0) {
            checker.fail(format("the table holds {} bytes, not whole {} blocks of {} bytes",
                        table.memorySize(),
                        toString(params.formatTable),
                        block));
        }
        uint64_t stride = params.tableStride ? params.tableStride : params.cols;
        uint32_t weights = blockWeights(params.formatTable);
        if (params.cols % weights || stride % weights || params.tableOffset % weights) {
            checker.fail(format("cols, tableStride and tableOffset count weights of a {} table and must be "
                        "multiples of {} (whole blocks): cols = {}, tableStride = {}, tableOffset = {}",
                        toString(params.formatTable),
                        weights,
                        params.cols,
                        stride,
                        params.tableOffset));
        }
        type = quantElementType(params.formatTable);
        tableElements = uint64_t(table.memorySize() / block) * weights;
    } else {
        switch (table.dataType()) {
            case DT::eFloat: type = kF32; break;
            case DT::eHalf: type = kF16; break;
            case DT::eBFloat16: type = kBF16; break;
            default:
                checker.fail(format("the table holds {} elements; it must be eFloat, eHalf or eBFloat16 (or "
                            "GGUF blocks, with formatTable)",
                            Memory::toString(table.dataType())));
        }
    }
    if (ids.dataType() != DT::eUnsignedInt) {
        checker.fail(format("ids must be an eUnsignedInt tensor, not {}", Memory::toString(ids.dataType())));
    }
    if (out.dataType() != DT::eFloat) {
        checker.fail(format("out must be an eFloat tensor, not {}", Memory::toString(out.dataType())));
    }
    uint64_t tableStride = params.tableStride ? params.tableStride : params.cols;
    uint64_t outStride = params.outStride ? params.outStride : params.cols;
    if (tableStride < params.cols || outStride < params.cols) {
        checker.fail(format("tableStride ({}) and outStride ({}) must be at least cols ({})", tableStride, outStride, params.cols));
    }
    if (params.tableOffset + params.cols > tableElements) {
        checker.fail(format("the table holds {} {}, not even one row of {} from offset {}",
                    tableElements,
                    quantized ? "weights" : "elements",
                    params.cols,
                    params.tableOffset));
    }
    uint64_t tableRows = (tableElements - params.tableOffset - params.cols) / tableStride + 1;
    if (params.idsOffset + params.rows > ids.size()) {
        checker.fail(format("ids holds {} elements, fewer than offset {} + {} rows", ids.size(), params.idsOffset, params.rows));
    }
    uint64_t outNeeded = params.outOffset + (uint64_t(params.rows) - 1) * outStride + params.cols;
    if (outNeeded > out.size()) {
        checker.fail(format("out holds {} elements, but {} rows of {} (stride {}) from offset {} need {}",
                    out.size(),
                    params.rows,
                    params.cols,
                    outStride,
                    params.outOffset,
                    outNeeded));
    }
    uint64_t limit = std::numeric_limits<uint32_t>::max();
    if (tableRows > limit || tableStride > limit || params.tableOffset > limit || outNeeded > limit) {
        checker.fail("the shape addresses beyond the kernel's 32-bit indices");
    }

    if (!caps.storage16Bit) {
        checker.fail(format("the kernel needs the device feature storageBuffer16BitAccess, which '{}' lacks", caps.deviceName));
    }
    const auto& limits = device->properties().limits;
    uint32_t columnGroups = (params.cols + kLocalSize - 1) / kLocalSize;
    uint32_t rowGroups = std::min(params.rows, limits.maxComputeWorkGroupCount[1]);
    uint32_t layers = (params.rows + rowGroups - 1) / rowGroups;
    if (columnGroups > limits.maxComputeWorkGroupCount[0] || layers > limits.maxComputeWorkGroupCount[2]) {
        checker.fail("the lookup needs more workgroups than the device runs in one dispatch");
    }
    GetRowsPush push{ params.rows,
                      params.cols,
                      static_cast<uint32_t>(tableRows),
                      static_cast<uint32_t>(tableStride),
                      static_cast<uint32_t>(params.tableOffset),
                      static_cast<uint32_t>(params.idsOffset),
                      static_cast<uint32_t>(outStride),
                      static_cast<uint32_t>(params.outOffset) };
    addDispatch(buildAlgorithm(
      device, memObjects, builtinSpirv("getrows"), Workgroup{ columnGroups, rowGroups, layers }, { type }, push));
    setPath(quantized ? "dequantize" : "gather");
}

OpGetRows::OpGetRows(std::shared_ptr<Tensor> table,
                     std::shared_ptr<Tensor> ids,
                     std::shared_ptr<Tensor> out,
                     const GetRowsParams& params)
  : OpGetRows(std::vector<std::shared_ptr<Memory>>{ table, ids, out }, params)
{
}

OpGetRows::~OpGetRows() = default;

} // namespace kp
