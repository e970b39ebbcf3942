// SPDX-License-Identifier: Apache-2.0
// Cases (a), (b), (c): the cost of evaluating and of recording dispatches.
#include "../CallCounters.hpp"
#include "../Harness.hpp"
#include "../RawVulkan.hpp"
#include "Fixtures.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

namespace {

const char* strategyName(kp::WaitStrategy strategy)
{
    switch (strategy) {
        case kp::WaitStrategy::eSpin: return "spin";
        case kp::WaitStrategy::eBlock: return "block";
        default: return "auto";
    }
}

// Puts the Manager's wait strategy back when a case ends, however it ends.
struct RestoreWaitStrategy
{
    kp::Manager& mgr;
    kp::WaitStrategy strategy = mgr.getWaitStrategy();
    uint64_t limit = mgr.getAutoSpinLimitNs();
    ~RestoreWaitStrategy() { mgr.setWaitStrategy(strategy, limit); }
};

// Runs `work` `times` times (after one unmeasured run) and records what one
// run allocates on the heap, how many Vulkan objects it creates and how
// many descriptor-set writes it makes (CallCounters.hpp), as three
// measurements of `variant`. Any Vulkan creation or descriptor write fails
// the case, and with `noAllocation` any allocation too. Returns the
// allocations per run.
double
countCalls(Context& context,
           const std::string& caseName,
           const std::string& variant,
           int times,
           bool noAllocation,
           const std::function<void()>& work)
{
    work();
    CallCounts before = callCounts();
    for (int i = 0; i < times; ++i) {
        work();
    }
    CallCounts made = callCounts() - before;
    double allocations = static_cast<double>(made.allocations) / times;
    double objects = static_cast<double>(made.vulkanObjects) / times;
    double writes = static_cast<double>(made.descriptorWrites) / times;
    context.add(caseName, variant, "allocations_per_call", false).samples.push_back(allocations);
    context.add(caseName, variant, "vulkan_objects_per_call", false).samples.push_back(objects);
    context.add(caseName, variant, "descriptor_writes_per_call", false).samples.push_back(writes);
    if (objects > 0 || writes > 0 || (noAllocation && allocations > 0)) {
        throw std::runtime_error(caseName + ": once warm, one call made " + std::to_string(allocations) +
                                 " allocation(s), created " + std::to_string(objects) +
                                 " Vulkan object(s) and wrote " + std::to_string(writes) +
                                 " descriptor set(s)");
    }
    return allocations;
}

} // namespace

BENCH_CASE("a_eval_roundtrip", "eval() of a recorded sequence with one trivial dispatch")
{
    kp::Manager& mgr = context.manager();
    RestoreWaitStrategy restore{ mgr };
    int iterations = evalIterations(context.quick());
    int warmup = evalWarmup(context.quick());
    double scale = 1e6 / iterations;

    Fixture fixture(mgr);
    RawVulkan raw(mgr);
    auto buffer = raw.createBuffer(4,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    auto word = raw.createBuffer(4,
                                 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                 VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    auto pipeline = raw.createPipeline(fixture.spirv, { &buffer });
    // What Kompute records: a barrier after earlier work, the dispatch, and
    // a barrier that makes its writes visible to the host.
    VkCommandBuffer cmd = raw.allocateCommandBuffer();
    raw.begin(cmd);
    raw.barrier(cmd);
    raw.bindAndDispatch(cmd, pipeline, 1);
    raw.hostBarrier(cmd);
    raw.end(cmd);
    // The dispatch alone: what the barriers cost on the device.
    VkCommandBuffer bare = raw.allocateCommandBuffer();
    raw.begin(bare);
    raw.bindAndDispatch(bare, pipeline, 1);
    raw.end(bare);
    // Without the leading barrier: what ordering after earlier
    // submissions costs on the device.
    VkCommandBuffer hostBarrierOnly = raw.allocateCommandBuffer();
    raw.begin(hostBarrierOnly);
    raw.bindAndDispatch(hostBarrierOnly, pipeline, 1);
    raw.hostBarrier(hostBarrierOnly);
    raw.end(hostBarrierOnly);
    // The same as `cmd`, then a word in host memory written after the
    // dispatch, which the host polls instead of the fence.
    VkCommandBuffer withWord = raw.allocateCommandBuffer();
    raw.begin(withWord);
    raw.barrier(withWord);
    raw.bindAndDispatch(withWord, pipeline, 1);
    raw.barrierToTransfer(withWord);
    vkCmdFillBuffer(withWord, word.buffer, 0, 4, 1u);
    raw.hostBarrier(withWord);
    raw.end(withWord);
    auto* wordValue = static_cast<volatile uint32_t*>(word.mapped);
    bool timelines = mgr.sequence()->getTimelineSemaphore() ? true : false;
    VkSemaphore timeline = timelines ? raw.createTimeline() : VK_NULL_HANDLE;
    uint64_t timelineValue = 0;

    struct Variant
    {
        std::string name;
        std::function<void()> once; // empty: measured by its own loop below
        Measurement* wall = nullptr;
        Measurement* cpu = nullptr;
    };
    std::vector<Variant> variants;
    // Kompute with the Manager's strategy, then with each of the others,
    // each on its own sequence (eAuto learns from its sequence's history).
    kp::WaitStrategy configured = mgr.getWaitStrategy();
    for (kp::WaitStrategy strategy : { configured, kp::WaitStrategy::eSpin, kp::WaitStrategy::eBlock }) {
        auto sequence = mgr.sequence();
        sequence->record<kp::OpAlgoDispatch>(fixture.algorithm);
        variants.push_back({ variants.empty() ? "kompute" : std::string("kompute_") + strategyName(strategy),
                             [&mgr, sequence, strategy] {
                                 mgr.setWaitStrategy(strategy);
                                 sequence->eval();
                             } });
    }
    // Raw Vulkan: the blocking fence wait first (the baseline), then the
    // ways of seeing completion sooner.
    variants.push_back({ "raw_vulkan", [&] { raw.submitAndWait(cmd); } });
    variants.push_back({ "raw_vulkan_fence_spin", [&] {
                            raw.submit(cmd);
                            raw.spinFence();
                        } });
    variants.push_back({ "raw_vulkan_host_barrier_only_fence_spin", [&] {
                            raw.submit(hostBarrierOnly);
                            raw.spinFence();
                        } });
    variants.push_back({ "raw_vulkan_no_barriers_fence_spin", [&] {
                            raw.submit(bare);
                            raw.spinFence();
                        } });
    if (timelines) {
        variants.push_back({ "raw_vulkan_timeline_spin", [&] {
                                raw.submit(cmd, timeline, ++timelineValue);
                                raw.spinTimeline(timeline, timelineValue);
                            } });
    }
    variants.push_back({ "raw_vulkan_word_spin", {} });
    variants.push_back({ "raw_vulkan_submit_call", {} });
    for (auto& variant : variants) {
        bool submitCall = variant.name == "raw_vulkan_submit_call";
        variant.wall = &context.add(
          "a_eval_roundtrip", variant.name, submitCall ? "us_per_submit" : "us_per_eval", false);
        if (variant.once) {
            variant.cpu = &context.add("a_eval_roundtrip", variant.name, "cpu_us_per_eval", false);
        }
    }
    variants[0].wall->notes["wait_strategy"] = strategyName(configured);
    Measurement* wordTime = variants[variants.size() - 2].wall;
    Measurement* submitCall = variants.back().wall;
    wordTime->notes["what"] =
      "submit to the host seeing a word the device writes after the dispatch; the fence is "
      "waited after, outside the figure";
    submitCall->notes["what"] = "time inside vkQueueSubmit, in a raw_vulkan_fence_spin loop";

    // Interleaved so that drift of the machine affects every variant alike,
    // each repetition starting at the next variant, so that none is always
    // first after the blocking waits that end a repetition.
    for (int r = 0; r < context.repetitions(); ++r) {
        for (size_t k = 0; k < variants.size(); ++k) {
            auto& variant = variants[(k + static_cast<size_t>(r)) % variants.size()];
            if (!variant.once) {
                continue;
            }
            sampleWithCpu(*variant.wall, *variant.cpu, r == 0 ? warmup : 0, scale, [&] {
                for (int i = 0; i < iterations; ++i) {
                    variant.once();
                }
            });
        }
        double seen = 0;
        for (int i = 0; i < iterations + (r == 0 ? iterations : 0); ++i) {
            *wordValue = 0;
            auto start = std::chrono::steady_clock::now();
            raw.submit(withWord);
            while (*wordValue == 0) {
            }
            auto end = std::chrono::steady_clock::now();
            raw.waitFence();
            if (i >= (r == 0 ? iterations : 0)) {
                seen += std::chrono::duration<double>(end - start).count();
            }
        }
        wordTime->samples.push_back(seen * scale);
        double submitSeconds = 0;
        for (int i = 0; i < iterations; ++i) {
            submitSeconds += raw.submit(cmd);
            raw.spinFence();
        }
        submitCall->samples.push_back(submitSeconds * scale);
    }
    if (fixture.counter->data()[0] == 0) {
        throw std::runtime_error("a_eval_roundtrip: the dispatches did not run");
    }
    mgr.setWaitStrategy(configured);
    // Allocations are counted per thread in operator new, which layers and
    // drivers loaded into the process call too: the Khronos validation
    // layer allocates in every vkQueueSubmit and wait. Kompute's eval() is
    // held to zero where the raw Vulkan round trips allocate nothing, and
    // only reported where they do (the figure then includes the layer's).
    bool belowAllocates = false;
    for (const auto& variant : variants) {
        if (variant.once && variant.name.rfind("raw_vulkan", 0) == 0) {
            belowAllocates |= countCalls(context, "a_eval_roundtrip", variant.name, iterations, false, variant.once) > 0;
        }
    }
    if (belowAllocates) {
        std::cout << "  allocations of eval() not checked: the raw Vulkan round trips allocate too (a layer "
                     "or the driver), so the count includes theirs\n";
    }
    countCalls(context, "a_eval_roundtrip", "kompute", iterations, !belowAllocates, variants[0].once);
    if (timeline != VK_NULL_HANDLE) {
        raw.destroy(timeline);
    }
    raw.destroy(pipeline);
    raw.destroy(word);
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
    auto& komputeCpu = context.add("b_one_liner", "kompute", "cpu_us_per_eval", false);
    auto& baseline = context.add("b_one_liner", "raw_vulkan", "us_per_eval", false);
    auto& spinning = context.add("b_one_liner", "raw_vulkan_fence_spin", "us_per_eval", false);
    kompute.notes["wait_strategy"] = strategyName(mgr.getWaitStrategy());
    auto oneLiner = [&] { mgr.sequence()->record<kp::OpAlgoDispatch>(fixture.algorithm)->eval(); };
    double scale = 1e6 / iterations;
    for (int r = 0; r < context.repetitions(); ++r) {
        sampleWithCpu(kompute, komputeCpu, r == 0 ? 1 : 0, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                oneLiner();
            }
        });
        sample(baseline, r == 0 ? 1 : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                raw.submitAndWait(cmd);
            }
        });
        sample(spinning, r == 0 ? 1 : 0, 1, scale, [&] {
            for (int i = 0; i < iterations; ++i) {
                raw.submit(cmd);
                raw.spinFence();
            }
        });
    }
    // The sequence and the operation that the expression itself makes are
    // allocations; Vulkan objects come from recycled sequences.
    countCalls(context, "b_one_liner", "kompute", iterations, false, oneLiner);
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

BENCH_CASE("c_dispatch_dependent", "per-dispatch cost of 1000 dependent dispatches in one sequence")
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
    // Each dispatch increments the counter the previous one wrote: a
    // barrier between them is needed in any correct program. Three forms:
    // compute and transfer on both sides (what a program that also copies
    // needs), compute only, and a buffer barrier on the counter alone.
    auto chain = [&](int form) {
        VkCommandBuffer cmd = raw.allocateCommandBuffer();
        raw.begin(cmd);
        for (uint32_t i = 0; i < dispatches; ++i) {
            if (form == 0) {
                raw.barrier(cmd);
            } else {
                raw.computeBarrier(cmd, form == 2 ? &buffer : nullptr);
            }
            raw.bindAndDispatch(cmd, pipeline, 1);
        }
        raw.hostBarrier(cmd);
        raw.end(cmd);
        return cmd;
    };
    VkCommandBuffer globalBarriers = chain(0);
    VkCommandBuffer computeBarriers = chain(1);
    VkCommandBuffer bufferBarriers = chain(2);

    fixture.counter->data()[0] = 0;
    sequence->eval();
    if (fixture.counter->data()[0] != dispatches) {
        throw std::runtime_error("c_dispatch_dependent: the counter is wrong after one evaluation");
    }
    // One barrier between each dispatch and the next, as the raw chain has.
    if (sequence->recordedBarrierCount() != dispatches - 1) {
        throw std::runtime_error("c_dispatch_dependent: the sequence recorded " +
                                 std::to_string(sequence->recordedBarrierCount()) + " barriers, not " +
                                 std::to_string(dispatches - 1));
    }

    auto& kompute = context.add("c_dispatch_dependent", "kompute", "us_per_dispatch", false);
    kompute.notes["barriers"] = std::to_string(sequence->recordedBarrierCount()) +
                                " between the dispatches (each compute -> compute on the counter)";
    auto& baseline = context.add("c_dispatch_dependent", "raw_vulkan", "us_per_dispatch", false);
    auto& computeOnly = context.add("c_dispatch_dependent", "raw_vulkan_compute_barriers", "us_per_dispatch", false);
    auto& perBuffer = context.add("c_dispatch_dependent", "raw_vulkan_buffer_barriers", "us_per_dispatch", false);
    baseline.notes["barriers"] = "global, compute+transfer -> compute+transfer, one per dispatch";
    computeOnly.notes["barriers"] = "global, compute -> compute, one per dispatch";
    perBuffer.notes["barriers"] = "one buffer memory barrier (the counter), compute -> compute, per dispatch";
    double scale = 1e6 / dispatches;
    for (int r = 0; r < context.repetitions(); ++r) {
        sample(kompute, r == 0 ? 1 : 0, 1, scale, [&] { sequence->eval(); });
        sample(baseline, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(globalBarriers); });
        sample(computeOnly, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(computeBarriers); });
        sample(perBuffer, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(bufferBarriers); });
    }
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

BENCH_CASE("c_dispatch_independent", "per-dispatch cost of 1000 independent dispatches (each its own tensor) in one sequence")
{
    kp::Manager& mgr = context.manager();
    uint32_t dispatches = context.quick() ? 50 : 1000;
    std::vector<uint32_t> spirv = compile(kIncrement);
    std::vector<std::shared_ptr<kp::TensorT<uint32_t>>> counters;
    std::vector<std::shared_ptr<kp::Memory>> memories;
    auto sequence = mgr.sequence();
    for (uint32_t i = 0; i < dispatches; ++i) {
        counters.push_back(mgr.tensorT<uint32_t>(std::vector<uint32_t>{ 0 }));
        memories.push_back(counters.back());
        sequence->record<kp::OpAlgoDispatch>(mgr.algorithm({ counters.back() }, spirv, { 1, 1, 1 }));
    }

    RawVulkan raw(mgr);
    VkDeviceSize stride = std::max<VkDeviceSize>(raw.storageOffsetAlignment(), 4);
    auto buffer = raw.createBuffer(stride * dispatches,
                                   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                   VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    auto pipeline = raw.createPipeline(spirv, { &buffer });
    std::vector<VkDescriptorSet> sets = raw.createSets(pipeline, buffer, dispatches, stride);
    auto record = [&](bool barriers) {
        VkCommandBuffer cmd = raw.allocateCommandBuffer();
        raw.begin(cmd);
        for (uint32_t i = 0; i < dispatches; ++i) {
            if (barriers) {
                raw.barrier(cmd);
            }
            raw.bindAndDispatch(cmd, pipeline, sets[i]);
        }
        raw.hostBarrier(cmd);
        raw.end(cmd);
        return cmd;
    };
    VkCommandBuffer independent = record(false);
    VkCommandBuffer serialised = record(true);

    mgr.sequence()->eval<kp::OpSyncDevice>(memories);
    sequence->eval();
    mgr.sequence()->eval<kp::OpSyncLocal>(memories);
    std::memset(buffer.mapped, 0, stride * dispatches);
    raw.submitAndWait(independent);
    for (uint32_t i = 0; i < dispatches; ++i) {
        uint32_t rawValue = *reinterpret_cast<const uint32_t*>(static_cast<const char*>(buffer.mapped) + i * stride);
        if (counters[i]->data()[0] != 1 || rawValue != 1) {
            throw std::runtime_error("c_dispatch_independent: counter " + std::to_string(i) + " is " +
                                     std::to_string(counters[i]->data()[0]) + " through Kompute and " +
                                     std::to_string(rawValue) + " through raw Vulkan after one "
                                     "evaluation, not 1");
        }
    }

    // Each dispatch touches its own tensor: nothing to order.
    if (sequence->recordedBarrierCount() != 0) {
        throw std::runtime_error("c_dispatch_independent: the sequence recorded " +
                                 std::to_string(sequence->recordedBarrierCount()) +
                                 " barriers between independent dispatches, not 0");
    }

    auto& kompute = context.add("c_dispatch_independent", "kompute", "us_per_dispatch", false);
    kompute.notes["barriers"] = std::to_string(sequence->recordedBarrierCount());
    auto& baseline = context.add("c_dispatch_independent", "raw_vulkan", "us_per_dispatch", false);
    auto& withBarriers = context.add("c_dispatch_independent", "raw_vulkan_with_barriers", "us_per_dispatch", false);
    baseline.notes["barriers"] = "none: one pipeline, a descriptor set per counter";
    withBarriers.notes["barriers"] = "a global barrier before each dispatch (not needed)";
    double scale = 1e6 / dispatches;
    for (int r = 0; r < context.repetitions(); ++r) {
        sample(kompute, r == 0 ? 1 : 0, 1, scale, [&] { sequence->eval(); });
        sample(baseline, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(independent); });
        sample(withBarriers, r == 0 ? 1 : 0, 1, scale, [&] { raw.submitAndWait(serialised); });
    }
    raw.destroy(pipeline);
    raw.destroy(buffer);
}

} // namespace bench
