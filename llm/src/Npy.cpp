// SPDX-License-Identifier: Apache-2.0
#include "kompute/llm/Npy.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "kompute/Errors.hpp"

namespace kp {
namespace llm {

void
writeNpy(const std::string& path, const float* values, size_t rows, size_t cols)
{
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                         ", " + std::to_string(cols) + "), }";
    // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');

    std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!file) {
        throw kp::Error(path + ": cannot write: " + std::strerror(errno));
    }
    const unsigned char preamble[8] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };
    uint16_t length = static_cast<uint16_t>(header.size());
    const unsigned char lengthBytes[2] = { static_cast<unsigned char>(length & 0xFF),
                                           static_cast<unsigned char>(length >> 8) };
    size_t count = rows * cols;
    bool ok = std::fwrite(preamble, 1, 8, file.get()) == 8 &&
              std::fwrite(lengthBytes, 1, 2, file.get()) == 2 &&
              std::fwrite(header.data(), 1, header.size(), file.get()) == header.size() &&
              std::fwrite(values, sizeof(float), count, file.get()) == count;
    FILE* raw = file.release();
    if (std::fclose(raw) != 0 || !ok) {
        throw kp::Error(path + ": writing failed: " + std::strerror(errno));
    }
}

} // namespace llm
} // namespace kp
