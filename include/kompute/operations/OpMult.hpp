// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <vector>

#include "kompute/operations/OpAlgoDispatch.hpp"

namespace kp {

/** Element-wise multiply of two float tensors into a third: {a, b, out}.
 * Rebuilds the given algorithm with the built-in shader, as upstream. */
class OpMult : public OpAlgoDispatch
{
  public:
    /** Rebuilds `algorithm` (of the same Manager) with the built-in
     * multiply shader over `memObjects` = {a, b, out}: three float tensors
     * of one size (kp::Error otherwise). */
    OpMult(std::vector<std::shared_ptr<Memory>> memObjects,
           std::shared_ptr<Algorithm> algorithm);
    ~OpMult() override;

  private:
    static const std::shared_ptr<Algorithm>& prepare(
      const std::vector<std::shared_ptr<Memory>>& memObjects,
      const std::shared_ptr<Algorithm>& algorithm);
};

} // namespace kp
