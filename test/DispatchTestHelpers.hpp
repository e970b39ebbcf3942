// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the algorithm and dispatch suites (test_algorithm,
// test_shader, test_dispatch, test_constants, test_datatypes_shader,
// test_workgroups, test_legacy). The validation fixtures come from support/TestSupport.hpp.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

#include <unistd.h>

#include <spirv-tools/libspirv.hpp>

#include "TestSupport.hpp"

namespace kp_test {

/** The seed's example shader (upstream's README): out_a += in_a * in_b,
 * out_b += spec constant 0 x push constant. */
inline const char* const kArrayMultiplicationShader = R"(
#version 450
layout (local_size_x = 1) in;
layout(set = 0, binding = 0) buffer buf_in_a { float in_a[]; };
layout(set = 0, binding = 1) buffer buf_in_b { float in_b[]; };
layout(set = 0, binding = 2) buffer buf_out_a { uint out_a[]; };
layout(set = 0, binding = 3) buffer buf_out_b { uint out_b[]; };
layout(push_constant) uniform PushConstants { float val; } push_const;
layout(constant_id = 0) const float const_one = 0;
void main() {
    uint index = gl_GlobalInvocationID.x;
    out_a[index] += uint( in_a[index] * in_b[index] );
    out_b[index] += uint( const_one * push_const.val );
}
)";

/** GLSL compute source compiled in the process (kp::Shader::compileSource). */
inline std::vector<uint32_t>
compile(const std::string& source, const std::map<std::string, std::string>& defines = {})
{
    return kp::Shader::compileSource(source, defines);
}

/**
 * Runs `action`, which must throw an exception of type E (or a subclass)
 * whose message contains every one of `fragments`. Any other outcome
 * (no exception, another exception type, a message missing a fragment) is a
 * failure that shows the message.
 */
template<typename E = kp::Error, typename F>
::testing::AssertionResult
throwsWith(F&& action, std::initializer_list<std::string> fragments)
{
    try {
        action();
    } catch (const E& error) {
        std::string message = error.what();
        for (const auto& fragment : fragments) {
            if (message.find(fragment) == std::string::npos) {
                return ::testing::AssertionFailure()
                       << "the message does not contain \"" << fragment << "\": " << message;
            }
        }
        return ::testing::AssertionSuccess() << message;
    } catch (const std::exception& error) {
        return ::testing::AssertionFailure()
               << "threw " << typeid(error).name() << " instead of " << typeid(E).name() << ": "
               << error.what();
    } catch (...) {
        return ::testing::AssertionFailure() << "threw something that is not a std::exception";
    }
    return ::testing::AssertionFailure() << "nothing was thrown";
}

// --- Hand-made SPIR-V ------------------------------------------------------

constexpr uint32_t kOpCapability = 17;
constexpr uint32_t kOpExtension = 10;

inline size_t
afterLastCapability(const std::vector<uint32_t>& spirv)
{
    size_t position = 5;
    size_t after = 5;
    while (position < spirv.size()) {
        uint32_t count = spirv[position] >> 16;
        uint32_t op = spirv[position] & 0xFFFF;
        if (op == kOpCapability) {
            after = position + count;
        } else if (op != kOpExtension) {
            break;
        }
        position += count;
    }
    return after;
}

/** `spirv` with an OpCapability (and, if given, an OpExtension) added: a
 * module that declares what the test wants checked. */
inline std::vector<uint32_t>
withCapability(std::vector<uint32_t> spirv, uint32_t capability, const std::string& extension = "")
{
    size_t at = afterLastCapability(spirv);
    if (!extension.empty()) {
        std::vector<uint32_t> words((extension.size() + 4) / 4, 0);
        std::memcpy(words.data(), extension.data(), extension.size());
        words.insert(words.begin(), (static_cast<uint32_t>(words.size() + 1) << 16) | kOpExtension);
        spirv.insert(spirv.begin() + static_cast<std::ptrdiff_t>(at), words.begin(), words.end());
    }
    spirv.insert(spirv.begin() + 5, { (2u << 16) | kOpCapability, capability });
    return spirv;
}

/** SPIR-V assembly (for modules GLSL cannot express) as words. */
inline std::vector<uint32_t>
assemble(const std::string& text)
{
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
    std::string errors;
    tools.SetMessageConsumer(
      [&](spv_message_level_t, const char*, const spv_position_t&, const char* m) { errors += m; });
    std::vector<uint32_t> binary;
    if (!tools.Assemble(text, &binary)) {
        throw std::runtime_error("test SPIR-V does not assemble: " + errors);
    }
    return binary;
}

/** Evaluates OpSyncDevice(uploads), the dispatch, OpSyncLocal(downloads)
 * in one sequence (the empty lists are left out). */
inline void
dispatchOnce(kp::Manager& mgr,
             const std::shared_ptr<kp::Algorithm>& algorithm,
             const std::vector<std::shared_ptr<kp::Memory>>& uploads,
             const std::vector<std::shared_ptr<kp::Memory>>& downloads)
{
    auto sequence = mgr.sequence();
    if (!uploads.empty()) {
        sequence->record<kp::OpSyncDevice>(uploads);
    }
    sequence->record<kp::OpAlgoDispatch>(algorithm);
    if (!downloads.empty()) {
        sequence->record<kp::OpSyncLocal>(downloads);
    }
    sequence->eval();
}

/** A file path in the temporary directory, removed when this goes away. */
class TempFile
{
  public:
    explicit TempFile(const std::string& stem)
    {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string test = info != nullptr ? std::string(info->name()) : std::string("test");
        for (char& c : test) {
            if (c == '/') {
                c = '_';
            }
        }
        mPath = (std::filesystem::temp_directory_path() /
                 ("kompute-" + std::to_string(::getpid()) + "-" + test + "-" + stem))
                  .string();
    }
    ~TempFile()
    {
        std::error_code ignored;
        std::filesystem::remove(mPath, ignored);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    const std::string& path() const { return mPath; }

    void write(const void* data, size_t bytes) const
    {
        std::ofstream file(mPath, std::ios::binary | std::ios::trunc);
        file.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
        ASSERT_TRUE(file.good()) << "cannot write " << mPath;
    }
    void write(const std::string& text) const { write(text.data(), text.size()); }
    void write(const std::vector<uint32_t>& words) const
    {
        write(words.data(), words.size() * sizeof(uint32_t));
    }

    size_t size() const
    {
        std::error_code error;
        auto bytes = std::filesystem::file_size(mPath, error);
        return error ? 0 : static_cast<size_t>(bytes);
    }

  private:
    std::string mPath;
};

/** Copies the device data of the tensors to their host views and waits. */
inline void
syncLocal(kp::Manager& manager, const std::vector<std::shared_ptr<kp::Memory>>& memObjects)
{
    manager.sequence()->eval<kp::OpSyncLocal>(memObjects);
}

} // namespace kp_test
