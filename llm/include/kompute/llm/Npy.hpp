// SPDX-License-Identifier: Apache-2.0
// Writes NumPy .npy files (format 1.0), for --dump-logits.
#pragma once

#include <cstddef>
#include <string>

namespace kp {
namespace llm {

/** Writes a C-ordered float32 array of shape [rows, cols]; throws kp::Error
 * when the file cannot be written. */
void writeNpy(const std::string& path, const float* values, size_t rows, size_t cols);

} // namespace llm
} // namespace kp
