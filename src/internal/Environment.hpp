// SPDX-License-Identifier: Apache-2.0
// Reading Kompute's environment variables (the README's table lists them).
#pragma once

#include <string>
#include <vector>

namespace kp {
namespace internal {

/** A flag variable: unset or empty gives `fallback`, "0" false, else true. */
bool
environmentFlag(const char* name, bool fallback = false);

/** A list variable: its items, separated by commas or spaces (none when
 * unset). */
std::vector<std::string>
environmentList(const char* name);

/** The items of `text`, separated by commas or spaces. */
std::vector<std::string>
splitList(const char* text);

} // namespace internal
} // namespace kp
