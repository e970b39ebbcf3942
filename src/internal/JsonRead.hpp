// SPDX-License-Identifier: Apache-2.0
// JSON text into kp::JsonValue (which writes JSON but does not read it):
// for the files the library reads at run time, the kernels' tuning tables.
#pragma once

#include <string>

#include "kompute/DeviceInfo.hpp"

namespace kp {
namespace internal {

/** Parses JSON text (RFC 8259: one value, whitespace around it). Integers
 * become int64 or uint64 values, other numbers doubles; objects keep their
 * members' order (a repeated name: the last one wins). Throws kp::Error
 * "`what`: line L, column C: ..." saying what was expected where; nesting
 * deeper than 64 levels is refused too. */
JsonValue
parseJson(const std::string& text, const std::string& what);

} // namespace internal
} // namespace kp
