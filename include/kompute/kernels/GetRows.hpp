// SPDX-License-Identifier: Apache-2.0
// kp::OpGetRows: embedding lookup with dequantization.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kompute/Tensor.hpp"
#include "kompute/kernels/KernelOp.hpp"
#include "kompute/kernels/Quantization.hpp"

namespace kp {

/** out[i][c] = table[ids[i]][c] for i < rows, c < cols. Strides and offsets
 * count elements (weights for a quantized table, multiples of the format's
 * blockWeights); 0 means packed (cols). */
struct GetRowsParams
{
    uint32_t rows = 0; ///< ids looked up (rows of out)
    uint32_t cols = 0; ///< values per row
    /** eNone: the table holds elements of its data type; a block format
     * (eQ8_0, eQ4_K, ...): GGUF blocks, rows of whole blocks. */
    WeightFormat formatTable = WeightFormat::eNone;
    uint32_t tableStride = 0; ///< elements (weights) between rows of the table; 0: cols
    uint32_t outStride = 0; ///< elements between rows of out; 0: cols
    /** First element (weight) of the table, first id, first element of
     * out. */
    ///@{
    uint64_t tableOffset = 0, idsOffset = 0, outOffset = 0;
    ///@}
};

/**
 * Records out = table[ids] as f32: table is eFloat, eHalf or eBFloat16, or
 * an eUnsignedChar tensor of GGUF blocks (formatTable; rows of whole
 * blocks); ids is eUnsignedInt; out is eFloat. Shapes and sizes are checked
 * at construction. The ids are read on the device when the sequence runs, so
 * they may change between evaluations; an id past the table's last row
 * yields a row of NaN (it is never read outside the table).
 */
class OpGetRows : public KernelOp
{
  public:
    /** Checks the tensors against `params` (kp::Error naming what is
     * wrong) and builds the pipeline. */
    OpGetRows(std::shared_ptr<Tensor> table,
              std::shared_ptr<Tensor> ids,
              std::shared_ptr<Tensor> out,
              const GetRowsParams& params);
    /** The form Sequence::record<OpGetRows>({table, ids, out}, params) builds. */
    OpGetRows(const std::vector<std::shared_ptr<Memory>>& memObjects, const GetRowsParams& params);
    ~OpGetRows() override;
};

} // namespace kp
