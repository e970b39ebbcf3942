// SPDX-License-Identifier: Apache-2.0
// Cases (d), (e), (f), (g): transfers, tensor creation, algorithm creation
// with a warm pipeline cache, and a copy shader's bandwidth.
#include "../Harness.hpp"
#include "../RawVulkan.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace bench {
namespace {

std::vector<uint64_t>
transferSizes(bool quick)
{
    if (quick) {
        return { 1ull << 20 };
    }
    return { 1ull << 20, 16ull << 20, 256ull << 20, 1ull << 30 };
}

std::string
sizeName(uint64_t bytes)
{
    return bytes >= (1ull << 30) ? std::to_string(bytes >> 30) + "GiB"
                                 : std::to_string(bytes >> 20) + "MiB";
}

// memcpy split into `threads` equal slices, one per thread.
void
parallelCopy(void* target, const void* source, uint64_t bytes, unsigned threads)
{
    uint64_t slice = (bytes + threads - 1) / threads;
    std::vector<std::thread> workers;
    for (unsigned i = 1; i < threads; ++i) {
        uint64_t begin = std::min<uint64_t>(bytes, i * slice);
        uint64_t length = std::min<uint64_t>(slice, bytes - begin);
        workers.emplace_back([=] {
            std::memcpy(static_cast<char*>(target) + begin, static_cast<const char*>(source) + begin, length);
        });
    }
    std::memcpy(target, source, std::min<uint64_t>(slice, bytes));
    for (auto& worker : workers) {
        worker.join();
    }
}

const char* kCopyShader = R"(
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1) writeonly buffer Target { uvec4 target[]; };
layout(push_constant) uniform Count { uint count; };
void main()
{
    // Grid-stride loop: any grid covers any size.
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
        target[i] = source[i];
    }
}
)";

} // namespace

BENCH_CASE("d_sync_bandwidth", "OpSyncDevice / OpSyncLocal of eDevice tensors, the host copy included")
{
    kp::Manager& mgr = context.manager();
    RawVulkan raw(mgr);
    for (uint64_t bytes : transferSizes(context.quick())) {
        uint32_t count = static_cast<uint32_t>(bytes / 4);
        std::vector<float> user(count, 1.0f);
        std::vector<float> back(count, 0.0f);
        auto tensor = mgr.tensorT<float>(count);
        auto upload = mgr.sequence();
        upload->record<kp::OpSyncDevice>({ tensor });
        auto download = mgr.sequence();
        download->record<kp::OpSyncLocal>({ tensor });
        std::string name = "d_sync_" + sizeName(bytes);
        double gb = double(bytes) / 1e9;

        auto& up = context.add(name + "_to_device", "kompute", "GB/s", true);
        auto& down = context.add(name + "_to_host", "kompute", "GB/s", true);
        // The same syncs when the program reads and writes the host view in
        // place (data()), so that no copy of the user's is involved.
        auto& syncUp = context.add(name + "_to_device", "kompute_sync_only", "GB/s", true);
        auto& syncDown = context.add(name + "_to_host", "kompute_sync_only", "GB/s", true);
        // upload() / download(): the copy and the transfer overlapped.
        auto& fusedUp = context.add(name + "_to_device", "kompute_upload", "GB/s", true);
        auto& fusedDown = context.add(name + "_to_host", "kompute_download", "GB/s", true);
        for (int r = 0; r < context.repetitions() + 1; ++r) {
            // setData() is the API's copy into the host view (several
            // threads for large copies); out of the host view, a program
            // that does not use download() copies with memcpy.
            double t = secondsOf([&] {
                tensor->setData(user);
                upload->eval();
            });
            double u = secondsOf([&] {
                download->eval();
                std::memcpy(back.data(), tensor->data(), bytes);
            });
            double st = secondsOf([&] { upload->eval(); });
            double su = secondsOf([&] { download->eval(); });
            double ft = secondsOf([&] { tensor->upload(user); });
            double fu = secondsOf([&] { tensor->download(back.data(), bytes); });
            if (r > 0) {
                up.samples.push_back(gb / t);
                down.samples.push_back(gb / u);
                syncUp.samples.push_back(gb / st);
                syncDown.samples.push_back(gb / su);
                fusedUp.samples.push_back(gb / ft);
                fusedDown.samples.push_back(gb / fu);
            }
        }
        if (back != user) {
            throw std::runtime_error("d_sync_bandwidth: download() did not return what upload() sent");
        }
        up.notes["staging"] = tensor->getStagingBuffer() ? "yes" : "no";

        // The raw baseline: pinned (host-visible, cached) memory and a
        // device-local buffer, the copy pre-recorded; measured with and
        // without the user's memcpy.
        auto pinned = raw.createBuffer(bytes,
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                       VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
        auto device = raw.createBuffer(bytes,
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                       VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        VkCommandBuffer toDevice = raw.allocateCommandBuffer();
        VkCommandBuffer toHost = raw.allocateCommandBuffer();
        VkBufferCopy region{ 0, 0, bytes };
        raw.begin(toDevice);
        vkCmdCopyBuffer(toDevice, pinned.buffer, device.buffer, 1, &region);
        raw.end(toDevice);
        raw.begin(toHost);
        vkCmdCopyBuffer(toHost, device.buffer, pinned.buffer, 1, &region);
        raw.hostBarrier(toHost);
        raw.end(toHost);
        auto& rawUp = context.add(name + "_to_device", "raw_vulkan", "GB/s", true);
        auto& rawDown = context.add(name + "_to_host", "raw_vulkan", "GB/s", true);
        auto& dmaUp = context.add(name + "_to_device", "raw_vulkan_dma_only", "GB/s", true);
        auto& dmaDown = context.add(name + "_to_host", "raw_vulkan_dma_only", "GB/s", true);
        for (int r = 0; r < context.repetitions() + 1; ++r) {
            double t = secondsOf([&] {
                std::memcpy(pinned.mapped, user.data(), bytes);
                raw.submitAndWait(toDevice);
            });
            double u = secondsOf([&] {
                raw.submitAndWait(toHost);
                std::memcpy(back.data(), pinned.mapped, bytes);
            });
            double dt = secondsOf([&] { raw.submitAndWait(toDevice); });
            double du = secondsOf([&] { raw.submitAndWait(toHost); });
            if (r > 0) {
                rawUp.samples.push_back(gb / t);
                rawDown.samples.push_back(gb / u);
                dmaUp.samples.push_back(gb / dt);
                dmaDown.samples.push_back(gb / du);
            }
        }
        // The host's own ceiling for the copy into pinned memory, by
        // threads: no transfer that includes this copy can beat it.
        if (!context.quick() && bytes == transferSizes(false).back()) {
            unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
            for (unsigned threads : { 1u, 4u, 8u, 16u }) {
                if (threads > hardware) {
                    break;
                }
                auto& copy = context.add(name + "_to_device",
                                         "host_copy_" + std::to_string(threads) + "_threads",
                                         "GB/s",
                                         true);
                copy.notes["what"] = "memcpy of the user's buffer into pinned memory only, no transfer";
                for (int r = 0; r < context.repetitions() + 1; ++r) {
                    double t = secondsOf([&] { parallelCopy(pinned.mapped, user.data(), bytes, threads); });
                    if (r > 0) {
                        copy.samples.push_back(gb / t);
                    }
                }
            }
        }
        raw.destroy(pinned);
        raw.destroy(device);
        tensor->destroy();
    }
}

BENCH_CASE("e_tensor_create_destroy", "create and destroy 10,000 tensors of 256 floats")
{
    kp::Manager& mgr = context.manager();
    const uint32_t count = context.quick() ? 500 : 10000;
    std::vector<float> data(256, 1.0f);
    auto& kompute = context.add("e_tensor_create_destroy", "kompute", "us_per_tensor", false);
    kompute.notes["memory"] = "eDevice, with data";
    sample(kompute, 1, context.repetitions(), 1e6 / count, [&] {
        std::vector<std::shared_ptr<kp::TensorT<float>>> tensors;
        tensors.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
            tensors.push_back(mgr.tensorT<float>(data));
        }
        tensors.clear();
    });

    // Raw: one buffer and one VkDeviceMemory per tensor, as a program
    // without a sub-allocator does.
    RawVulkan raw(mgr);
    auto& baseline = context.add("e_tensor_create_destroy", "raw_vulkan", "us_per_tensor", false);
    baseline.notes["memory"] = "one VkDeviceMemory per buffer, host-visible";
    sample(baseline, 1, context.repetitions(), 1e6 / count, [&] {
        std::vector<RawVulkan::Buffer> buffers;
        buffers.reserve(count);
        for (uint32_t i = 0; i < count; ++i) {
            buffers.push_back(raw.createBuffer(1024,
                                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT));
            std::memcpy(buffers.back().mapped, data.data(), 1024);
        }
        for (auto& buffer : buffers) {
            raw.destroy(buffer);
        }
    });
}

BENCH_CASE("f_algorithm_create",
           "algorithm creation with a warm pipeline cache vs a cold one, and with the SPIR-V of an "
           "existing algorithm (shared pipeline)")
{
    kp::Manager& mgr = context.manager();
    auto a = mgr.tensorT<uint32_t>(std::vector<uint32_t>(256, 1));
    auto b = mgr.tensorT<uint32_t>(std::vector<uint32_t>(256, 0));
    int count = context.quick() ? 3 : 20;
    // Each cold build gets a shader the cache has never seen: a define that
    // changes the code.
    auto& cold = context.add("f_algorithm_create", "kompute_cold_cache", "us_per_algorithm", false);
    auto& warm = context.add("f_algorithm_create", "kompute", "us_per_algorithm", false);
    // The same SPIR-V, constants and layout as an algorithm that is alive:
    // it shares that one's pipeline, so only a descriptor set is made.
    auto& same = context.add("f_algorithm_create", "kompute_same_spirv", "us_per_algorithm", false);
    static int generation = 0;
    for (int r = 0; r < context.repetitions(); ++r) {
        std::vector<std::vector<uint32_t>> shaders;
        for (int i = 0; i < count; ++i) {
            std::string source = std::string(kCopyShader);
            source.replace(source.find("target[i] = source[i];"),
                           std::string("target[i] = source[i];").size(),
                           "target[i] = source[i] + uvec4(" + std::to_string(++generation) + ");");
            shaders.push_back(kp::Shader::compileSource(source));
        }
        double coldSeconds = secondsOf([&] {
            for (const auto& spirv : shaders) {
                mgr.algorithm<float, uint32_t>({ a, b }, spirv, { 1, 1, 1 }, {}, { 64u });
            }
        });
        double warmSeconds = secondsOf([&] {
            for (const auto& spirv : shaders) {
                mgr.algorithm<float, uint32_t>({ a, b }, spirv, { 1, 1, 1 }, {}, { 64u });
            }
        });
        auto existing = mgr.algorithm<float, uint32_t>({ a, b }, shaders[0], { 1, 1, 1 }, {}, { 64u });
        uint64_t pipelines = mgr.pipelineStats().pipelinesCreated;
        double sameSeconds = secondsOf([&] {
            for (int i = 0; i < count; ++i) {
                mgr.algorithm<float, uint32_t>({ a, b }, shaders[0], { 1, 1, 1 }, {}, { 64u });
            }
        });
        same.notes["pipelines_created"] = std::to_string(mgr.pipelineStats().pipelinesCreated - pipelines);
        cold.samples.push_back(coldSeconds * 1e6 / count);
        warm.samples.push_back(warmSeconds * 1e6 / count);
        same.samples.push_back(sameSeconds * 1e6 / count);
    }
}

BENCH_CASE("g_copy_shader_bandwidth", "a copy shader over 1 GiB (bytes read + written)")
{
    kp::Manager& mgr = context.manager();
    uint64_t bytes = context.quick() ? (16ull << 20) : (1ull << 30);
    const auto& limits = mgr.getDeviceProperties().limits;
    if (bytes > limits.maxStorageBufferRange) {
        bytes = uint64_t(limits.maxStorageBufferRange) / 16 * 16;
    }
    const uint32_t kBack = 5; // back-to-back operations per evaluation

    // Times each of kBack back-to-back operations with GPU timestamps (and,
    // for the first variant, the whole evaluation with the host clock as a
    // cross-check).
    auto measureOn = [&](kp::Manager& on,
                         const std::string& variant,
                         const std::shared_ptr<kp::OpBase>& op,
                         double movedGB,
                         const std::string& what,
                         bool hostClockToo = false) {
        auto sequence = on.sequence(0, kBack);
        for (uint32_t i = 0; i < kBack; ++i) {
            sequence->record(op);
        }
        auto& m = context.add("g_copy_shader_bandwidth", variant, "GB/s", true);
        m.notes["moved"] = what;
        m.notes["timing"] = "GPU timestamps around each of 5 back-to-back operations";
        Measurement* wall = nullptr;
        if (hostClockToo) {
            wall = &context.add("g_copy_shader_bandwidth", variant + "_host_clock", "GB/s", true);
        }
        // Warm-up: a GPU coming from light work (the transfers of case d)
        // stays at its idle clock (345 MHz on the H200, against 1980 under
        // load) for up to about a second of heavy work, which halved the
        // figures of runs without it. The first variant warms up for 1.5 s,
        // the next ones, run back to back, for 0.25 s.
        static bool firstVariant = true;
        double warmUp = context.quick() ? 0.0 : (firstVariant ? 1.5 : 0.25);
        firstVariant = false;
        double warmSeconds = 0.0;
        do {
            warmSeconds += secondsOf([&] { sequence->eval(); });
        } while (warmSeconds < warmUp);
        for (int r = 0; r < context.repetitions(); ++r) {
            double seconds = secondsOf([&] { sequence->eval(); });
            if (wall != nullptr) {
                wall->samples.push_back(kBack * movedGB / seconds);
            }
            auto ns = sequence->getTimestampsNs();
            for (uint32_t i = 1; i <= kBack; ++i) {
                m.samples.push_back(movedGB / ((ns[i] - ns[i - 1]) * 1e-9));
            }
        }
    };
    auto measure = [&](const std::string& variant,
                       const std::shared_ptr<kp::OpBase>& op,
                       double movedGB,
                       const std::string& what,
                       bool hostClockToo = false) {
        measureOn(mgr, variant, op, movedGB, what, hostClockToo);
    };

    uint32_t vec4s = static_cast<uint32_t>(bytes / 16);
    auto source = mgr.tensorT<uint32_t>(vec4s * 4, kp::Memory::MemoryTypes::eStorage);
    auto target = mgr.tensorT<uint32_t>(vec4s * 4, kp::Memory::MemoryTypes::eStorage);
    std::vector<std::shared_ptr<kp::Memory>> pair{ source, target };
    double moved = 2.0 * double(bytes) / 1e9;
    std::string both = std::to_string(bytes) + " bytes read + written";
    std::string once = std::to_string(bytes) + " bytes";

    // One uvec4 per invocation over a 2D grid (x at most 32768 groups).
    uint32_t groups = (vec4s + 255) / 256;
    kp::Workgroup grid{ std::min<uint32_t>(groups, 32768), (groups + 32767) / 32768, 1 };
    auto dispatchOf = [&](const std::vector<std::shared_ptr<kp::Memory>>& objects, const std::string& body) {
        std::string glsl = R"(#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) restrict buffer Source { uvec4 source[]; };
)" + std::string(objects.size() > 1 ? "layout(set = 0, binding = 1) restrict buffer Target { uvec4 target[]; };\n" : "") +
                           R"(layout(push_constant) uniform Count { uint count; };
void main()
{
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
    if (i < count) {
        )" + body + R"(
    }
}
)";
        return std::make_shared<kp::OpAlgoDispatch>(
          mgr.algorithm<float, uint32_t>(objects, compile(glsl), grid, {}, { vec4s }));
    };
    auto copy = dispatchOf(pair, "target[i] = source[i];");

    mgr.sequence()->eval(dispatchOf({ source }, "source[i] = uvec4(i, i ^ 0x5555u, i * 3u, ~i);"));

    measure("kompute", copy, moved, both, true);
    // The grid-stride form: fewer invocations, each copying several vectors.
    uint32_t strideGroups = std::min<uint32_t>(groups, 65535);
    measure("kompute_grid_stride",
            std::make_shared<kp::OpAlgoDispatch>(
              mgr.algorithm<float, uint32_t>(pair, compile(kCopyShader), { strideGroups, 1, 1 }, {}, { vec4s })),
            moved,
            both);
    if (!context.quick()) {
        // One direction at a time: the device's read and write ceilings.
        measure("kompute_write_only", dispatchOf({ target }, "source[i] = uvec4(i);"), moved / 2, once + " written");
        measure("kompute_read_only",
                dispatchOf(pair, "uvec4 v = source[i]; if (v.x == 0xdeadbeefu && v.w == 0xdeadbeefu) { target[0] = v; }"),
                moved / 2,
                once + " read (the condition never holds for the data written above)");
    }
    // OpCopy: a copy shader on devices where it beats the copy command
    // (NVIDIA), vkCmdCopyBuffer elsewhere; and the copy command itself, on
    // a Manager made with shader copies turned off.
    measure("kompute_opcopy", std::make_shared<kp::OpCopy>(pair), moved, both);
    if (!context.quick()) {
        const char* name = "KOMPUTE_ENV_SHADER_COPY";
        const char* previous = std::getenv(name);
        std::string saved = previous != nullptr ? previous : "";
        setenv(name, "0", 1);
        kp::Manager plain(0);
        previous != nullptr ? setenv(name, saved.c_str(), 1) : unsetenv(name);
        // With data, like the source of the other variants.
        auto a = plain.tensorT<uint32_t>(std::vector<uint32_t>(size_t(vec4s) * 4, 0x12345678u),
                                         kp::Memory::MemoryTypes::eStorage);
        auto b = plain.tensorT<uint32_t>(vec4s * 4, kp::Memory::MemoryTypes::eStorage);
        measureOn(plain,
                  "kompute_opcopy_copy_command",
                  std::make_shared<kp::OpCopy>(std::vector<std::shared_ptr<kp::Memory>>{ a, b }),
                  moved,
                  both + ", by vkCmdCopyBuffer (KOMPUTE_ENV_SHADER_COPY=0)");
    }
}

} // namespace bench
