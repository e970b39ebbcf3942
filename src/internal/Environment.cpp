// SPDX-License-Identifier: Apache-2.0
#include "internal/Environment.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace kp {
namespace internal {

bool
environmentFlag(const char* name, bool fallback)
{
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') {
        return fallback;
    }
    return std::strcmp(value, "0") != 0;
}

std::vector<std::string>
splitList(const char* text)
{
    std::vector<std::string> items;
    if (text == nullptr) {
        return items;
    }
    std::string copy(text);
    std::replace(copy.begin(), copy.end(), ',', ' ');
    std::istringstream words(copy);
    std::string word;
    while (words >> word) {
        items.push_back(word);
    }
    return items;
}

std::vector<std::string>
environmentList(const char* name)
{
    return splitList(std::getenv(name));
}

} // namespace internal
} // namespace kp
