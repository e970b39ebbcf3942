// SPDX-License-Identifier: Apache-2.0
// Cases (a), (b), (c): the cost of evaluating and of recording dispatches.
#include "../Harness.hpp"
#include "../RawVulkan.hpp"
#include "Fixtures.hpp"

#include <stdexcept>

namespace bench {

BENCH_CASE("a_eval_roundtrip", "eval() of a recorded sequence with one trivial dispatch")
{
    kp::Manager& mgr = context.manager();
    int iterations = evalIterations(context.quick());
    int warmup = evalWarmup(context.quick());

    Fixture fixture(mgr);
    auto sequence = mgr.sequence();
    sequence->record<kp::OpAlgoDispatch>(fixture.algorithm);

    RawVulkan raw(mgr);
    auto buffer = raw.createBuffer(4,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    auto pipeline = raw.createPipeline(fixture.spirv, { &buffer });
    VkCommandBuffer cmd = raw.allocateCommandBuffer();
    raw.begin(cmd);
    raw.barrier(cmd);
    raw.bindAndDispatch(cmd, pipeline, 1);
    raw.hostBarrier(cmd);
    raw.end(cmd);

    // Interleaved so that drift of the machine affects both alike.
    auto& kompute = context.add("a_eval_roundtrip", "kompute", "us_per_eval", false);
    auto& baseline = context.add("a_eval_roundtrip", "raw_vulkan", "us_per_eval", false);
    double scale = 1e6 / iterations;
    for (int r = 0; r < context.repetitions(); ++r) {
        sample(kompute, r == 0 ? warmup : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                sequence->eval();
            }
        });
        sample(baseline, r == 0 ? warmup : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                raw.submitAndWait(cmd);
            }
        });
    }
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

BENCH_CASE("b_one_liner", "mgr.sequence()->record<OpAlgoDispatch>(algo)->eval() each time")
{
    kp::Manager& mgr = context.manager();
    int iterations = oneLinerIterations(context.quick());
    Fixture fixture(mgr);

    RawVulkan raw(mgr);
    auto buffer = raw.createBuffer(4,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    auto pipeline = raw.createPipeline(fixture.spirv, { &buffer });
    VkCommandBuffer cmd = raw.allocateCommandBuffer();
    raw.begin(cmd);
    raw.barrier(cmd);
    raw.bindAndDispatch(cmd, pipeline, 1);
    raw.hostBarrier(cmd);
    raw.end(cmd);

    auto& kompute = context.add("b_one_liner", "kompute", "us_per_eval", false);
    auto& baseline = context.add("b_one_liner", "raw_vulkan", "us_per_eval", false);
    double scale = 1e6 / iterations;
    for (int r = 0; r < context.repetitions(); ++r) {
        sample(kompute, r == 0 ? 1 : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                mgr.sequence()->record<kp::OpAlgoDispatch>(fixture.algorithm)->eval();
            }
        });
        sample(baseline, r == 0 ? 1 : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                raw.submitAndWait(cmd);
            }
        });
    }
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

BENCH_CASE("c_dispatch_cost", "per-dispatch cost of 1000 dependent dispatches in one sequence")
{
    kp::Manager& mgr = context.manager();
    uint32_t dispatches = context.quick() ? 50 : 1000;
    Fixture fixture(mgr);
    auto sequence = mgr.sequence();
    for (uint32_t i = 0; i < dispatches; ++i) {
        sequence->record<kp::OpAlgoDispatch>(fixture.algorithm);
    }

    RawVulkan raw(mgr);
    auto buffer = raw.createBuffer(4,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    auto pipeline = raw.createPipeline(fixture.spirv, { &buffer });
    VkCommandBuffer cmd = raw.allocateCommandBuffer();
    raw.begin(cmd);
    // Each dispatch increments the counter the previous one wrote: a
    // barrier between them is needed in any correct program.
    for (uint32_t i = 0; i < dispatches; ++i) {
        raw.barrier(cmd);
        raw.bindAndDispatch(cmd, pipeline, 1);
    }
    raw.hostBarrier(cmd);
    raw.end(cmd);

    fixture.counter->data()[0] = 0;
    sequence->eval();
    if (fixture.counter->data()[0] != dispatches) {
        throw std::runtime_error("c_dispatch_cost: the counter is wrong after one evaluation");
    }

    auto& kompute = context.add("c_dispatch_cost", "kompute", "us_per_dispatch", false);
    auto& baseline = context.add("c_dispatch_cost", "raw_vulkan", "us_per_dispatch", false);
    double scale = 1e6 / dispatches;
    for (int r = 0; r < context.repetitions(); ++r) {
        sample(kompute, r == 0 ? 1 : 0, 1, scale, [&] { sequence->eval(); });
        sample(baseline, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(cmd); });
    }
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

} // namespace bench
