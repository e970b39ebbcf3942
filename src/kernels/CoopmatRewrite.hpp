// SPDX-License-Identifier: Apache-2.0
// A SPIR-V pass of our own: rewrites a module that uses
// SPV_NV_cooperative_matrix (what glslang 12 writes) into its
// SPV_KHR_cooperative_matrix form, which every vendor's driver takes, and
// optionally makes the A and B matrices bfloat16 (SPV_KHR_bfloat16). Needed
// because our toolchain (glslang 12, SPIRV-Tools 2023.1) predates both KHR
// extensions.
//
// What changes:
//   OpCapability CooperativeMatrixNV      -> CooperativeMatrixKHR (+ bf16 ones)
//   OpExtension "SPV_NV_cooperative_matrix" -> "SPV_KHR_cooperative_matrix"
//   OpTypeCooperativeMatrixNV             -> OpTypeCooperativeMatrixKHR with a
//                                            Use operand: MatrixA for a type
//                                            used as A of a multiply-add,
//                                            MatrixB as B, else Accumulator
//   OpCooperativeMatrixLoad/StoreNV       -> the KHR forms (layout constant
//                                            before the stride)
//   OpCooperativeMatrixMulAddNV           -> KHR (signedness operands for
//                                            integer matrices)
//   OpCooperativeMatrixLengthNV           -> KHR (also inside OpSpecConstantOp)
// New ids (constants, the bf16 type) are numbered from the old bound. A type
// that the module uses in two roles (say as A and as B of multiply-adds) has
// no KHR form: the pass throws kp::Error; shaders avoid it by giving A (lM x
// lK), B (lK x lN) and accumulators (lM x lN) dimensions from distinct
// specialization constants. Column-major flags must be constant booleans.
#pragma once

#include <cstdint>
#include <vector>

namespace kp {
namespace internal {

std::vector<uint32_t>
coopmatNvToKhr(const std::vector<uint32_t>& module, bool bf16Operands = false);

} // namespace internal
} // namespace kp
