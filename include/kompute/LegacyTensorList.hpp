// SPDX-License-Identifier: Apache-2.0
// Kompute 0.9.0 compatibility: the released 0.9.0 took lists of kp::Tensor
// (std::vector<std::shared_ptr<kp::Tensor>>) where the current API takes
// lists of kp::Memory. The deprecated overloads of Manager::algorithm and
// Sequence::record / eval / evalAsync that accept them use these helpers.
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

namespace kp {

class Memory;
class Tensor;

namespace detail {

/** Whether `List` is 0.9.0's list of tensors. The overloads that take one
 * are templates constrained on it, so that a braced list ({ a, b }) still
 * picks the current std::vector<std::shared_ptr<Memory>> overload and
 * programs of the current API see no ambiguity. */
template<typename List>
inline constexpr bool isTensorList =
  std::is_same_v<std::decay_t<List>, std::vector<std::shared_ptr<Tensor>>>;

/** The same objects as a list of kp::Memory. (A template, so that Tensor
 * only needs to be complete where it is used.) */
template<typename List>
std::vector<std::shared_ptr<Memory>>
memoryList(const List& tensors)
{
    return std::vector<std::shared_ptr<Memory>>(tensors.begin(), tensors.end());
}

} // namespace detail
} // namespace kp
