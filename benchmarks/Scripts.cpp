// SPDX-License-Identifier: Apache-2.0
#include "Scripts.hpp"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace bench {

std::string
environmentOr(const char* name, const std::string& fallback)
{
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

// Single quotes keep every character but the quote itself literal in a
// POSIX shell; each quote becomes '\''.
std::string
shellQuote(const std::string& word)
{
    std::string quoted = "'";
    for (char c : word) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

std::string
pythonInterpreter()
{
    return environmentOr("KOMPUTE_BENCH_PYTHON", "python3");
}

std::string
scriptPath(const std::string& fileName, const std::string& sourcePath)
{
    namespace fs = std::filesystem;
    std::error_code error;
    // KOMPUTE_BENCH_DATA_DIR: the data folder relative to the program's
    // folder in the installed layout (CMake computes it from GNUInstallDirs).
    fs::path program = fs::read_symlink("/proc/self/exe", error);
    if (!error) {
        fs::path installed = program.parent_path() / KOMPUTE_BENCH_DATA_DIR / fileName;
        if (fs::is_regular_file(installed, error)) {
            return installed.lexically_normal().string();
        }
    }
    return sourcePath;
}

} // namespace bench
