// SPDX-License-Identifier: Apache-2.0
// Case (h): parallelism through several queues, and GPU-side dependencies
// between sequences against host round trips.
#include "../Harness.hpp"
#include "Fixtures.hpp"

#include <iostream>
#include <stdexcept>

namespace bench {
namespace {

// A long dependent chain of multiply-adds per invocation, on few
// workgroups: one dispatch leaves most of a large GPU idle, so independent
// dispatches on several queues can run side by side.
const char* kHeavy = R"(
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(push_constant) uniform Work { uint iterations; };
void main()
{
    uint index = gl_GlobalInvocationID.x;
    float x = values[index];
    for (uint i = 0; i < iterations; ++i) {
        x = x * 0.999999 + 0.5;
    }
    values[index] = x;
}
)";

} // namespace

BENCH_CASE("h_queue_parallelism", "K independent heavy dispatches on 1 queue vs spread over 2 and 4 queues")
{
    const uint32_t kDispatches = 8;
    const uint32_t groups = context.quick() ? 1 : 16;
    const uint32_t iterations = context.quick() ? 1000 : (1u << 20);
    auto spirv = compile(kHeavy);

    double single = 0.0;
    for (uint32_t queues : { 1u, 2u, 4u }) {
        std::vector<uint32_t> families;
        try {
            families = kp::Manager::computeQueueFamilies(queues);
        } catch (const kp::Error& error) {
            std::cout << "  skipping " << queues << " queue(s): " << error.what() << "\n";
            continue;
        }
        kp::Manager mgr(0, families);
        std::vector<std::shared_ptr<kp::Sequence>> sequences;
        std::vector<std::shared_ptr<kp::TensorT<float>>> tensors;
        for (uint32_t k = 0; k < kDispatches; ++k) {
            auto tensor = mgr.tensorT<float>(std::vector<float>(groups * 256, 1.0f),
                                             kp::Memory::MemoryTypes::eStorage);
            auto algorithm = mgr.algorithm<float, uint32_t>(
              { tensor }, spirv, { groups, 1, 1 }, {}, { iterations });
            auto sequence = mgr.sequence(k % queues);
            sequence->record<kp::OpAlgoDispatch>(algorithm);
            sequences.push_back(sequence);
            tensors.push_back(tensor);
        }
        std::string variant = queues == 1 ? "kompute" : "kompute_" + std::to_string(queues) + "_queues";
        auto& measurement = context.add("h_queue_parallelism", variant, "ms_for_all", false);
        measurement.notes["queues"] = std::to_string(queues);
        measurement.notes["dispatches"] = std::to_string(kDispatches);
        measurement.notes["families"] = [&] {
            std::string text;
            for (auto f : families) text += std::to_string(f) + " ";
            return text;
        }();
        sample(measurement, 1, context.repetitions(), 1e3, [&] {
            for (auto& sequence : sequences) {
                sequence->evalAsync();
            }
            for (auto& sequence : sequences) {
                sequence->evalAwait();
            }
        });
        if (queues == 1) {
            single = measurement.median();
        } else if (single > 0) {
            std::cout << "  " << queues << " queues: speed-up " << single / measurement.median()
                      << "x over 1 queue\n";
        }
    }
}

BENCH_CASE("h_gpu_dependency", "a chain of 16 dependent sequences: GPU-side waits vs host waits")
{
    const uint32_t kStages = 16;
    std::vector<uint32_t> families;
    try {
        families = kp::Manager::computeQueueFamilies(2);
    } catch (const kp::Error&) {
        families = kp::Manager::computeQueueFamilies(1);
    }
    kp::Manager mgr(0, families);
    auto counter = mgr.tensorT<uint32_t>(std::vector<uint32_t>{ 0 }, kp::Memory::MemoryTypes::eDeviceAndHost);
    auto algorithm = mgr.algorithm({ counter }, compile(kIncrement), { 1, 1, 1 });

    // Stages alternate between the queues, so the dependency crosses queues
    // where the device has several.
    std::vector<std::shared_ptr<kp::Sequence>> hostChained;
    std::vector<std::shared_ptr<kp::Sequence>> gpuChained;
    for (uint32_t s = 0; s < kStages; ++s) {
        uint32_t queue = s % mgr.queueCount();
        hostChained.push_back(mgr.sequence(queue));
        hostChained.back()->record<kp::OpAlgoDispatch>(algorithm);
        gpuChained.push_back(mgr.sequence(queue));
        gpuChained.back()->record<kp::OpAlgoDispatch>(algorithm);
        if (s > 0) {
            gpuChained[s]->waitFor(gpuChained[s - 1]);
        }
    }

    auto check = [&](const char* variant) {
        if (counter->data()[0] != kStages) {
            throw std::runtime_error(std::string("h_gpu_dependency: wrong count with ") + variant);
        }
        counter->data()[0] = 0;
    };
    auto& host = context.add("h_gpu_dependency", "kompute", "us_per_chain", false);
    host.notes["waits"] = "host: eval() of each stage in turn";
    auto& gpu = context.add("h_gpu_dependency", "kompute_gpu_waits", "us_per_chain", false);
    gpu.notes["waits"] = "GPU: waitFor between stages, one host wait at the end";
    gpu.notes["queues"] = std::to_string(mgr.queueCount());
    counter->data()[0] = 0;
    for (int r = 0; r < context.repetitions() + 1; ++r) {
        double hostSeconds = secondsOf([&] {
            for (auto& sequence : hostChained) {
                sequence->eval();
            }
        });
        check("host waits");
        double gpuSeconds = secondsOf([&] {
            for (auto& sequence : gpuChained) {
                sequence->evalAsync();
            }
            for (auto& sequence : gpuChained) {
                sequence->evalAwait();
            }
        });
        check("GPU waits");
        if (r > 0) { // the first round is warm-up
            host.samples.push_back(hostSeconds * 1e6);
            gpu.samples.push_back(gpuSeconds * 1e6);
        }
    }
}

} // namespace bench
