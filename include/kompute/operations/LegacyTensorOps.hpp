// SPDX-License-Identifier: Apache-2.0
// Kompute 0.9.0's operation names, deprecated aliases of the current ones:
// OpTensorSyncDevice (OpSyncDevice), OpTensorSyncLocal (OpSyncLocal) and
// OpTensorCopy (OpCopy). Their 0.9.0 headers (kompute/operations/
// OpTensorSyncDevice.hpp, ...) include this one.
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "kompute/LegacyTensorList.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/operations/OpCopy.hpp"
#include "kompute/operations/OpSyncDevice.hpp"
#include "kompute/operations/OpSyncLocal.hpp"

namespace kp {
namespace detail {

/** `Op` constructed from 0.9.0's list of tensors, or from the current list of
 * memory objects (which Sequence::record<Op>({ a, b }) passes). */
template<typename Op>
class LegacyTensorOp : public Op
{
  public:
    /** 0.9.0's constructor. */
    LegacyTensorOp(const std::vector<std::shared_ptr<Tensor>>& tensors)
      : Op(memoryList(tensors))
    {
    }
    /** The current constructor. (A template, so that a braced list of
     * tensors picks 0.9.0's constructor without ambiguity.) */
    template<typename List,
             typename = std::enable_if_t<
               std::is_same_v<List, std::vector<std::shared_ptr<Memory>>>>>
    LegacyTensorOp(const List& memObjects)
      : Op(memObjects)
    {
    }
};

} // namespace detail

/** Kompute 0.9.0's name of kp::OpSyncDevice (deprecated). */
class [[deprecated("Kompute 0.9.0 name: use kp::OpSyncDevice")]] OpTensorSyncDevice
  : public detail::LegacyTensorOp<OpSyncDevice>
{
  public:
    using LegacyTensorOp::LegacyTensorOp;
};

/** Kompute 0.9.0's name of kp::OpSyncLocal (deprecated). */
class [[deprecated("Kompute 0.9.0 name: use kp::OpSyncLocal")]] OpTensorSyncLocal
  : public detail::LegacyTensorOp<OpSyncLocal>
{
  public:
    using LegacyTensorOp::LegacyTensorOp;
};

/** Kompute 0.9.0's name of kp::OpCopy (deprecated). */
class [[deprecated("Kompute 0.9.0 name: use kp::OpCopy")]] OpTensorCopy
  : public detail::LegacyTensorOp<OpCopy>
{
  public:
    using LegacyTensorOp::LegacyTensorOp;
};

} // namespace kp
