// SPDX-License-Identifier: Apache-2.0
// Asynchronous evaluation, GPU-side dependencies between sequences, queue
// selection and the thread-safety rules.
#include "DispatchTestHelpers.hpp"

#include <atomic>
#include <chrono>
#include <thread>

using namespace kp_test;

namespace {

// out[i] = i * factor + offset, with the factor and offset as push
// constants.
const char* kAffine = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Out { float values[]; };
layout(push_constant) uniform Params { float factor; float offset; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < values.length()) {
        values[i] = float(i) * factor + offset;
    }
}
)";

// values[i] = values[i] * factor + offset: reads what an earlier stage wrote.
const char* kUpdate = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(push_constant) uniform Params { float factor; float offset; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < values.length()) {
        values[i] = values[i] * factor + offset;
    }
}
)";

// Keeps the device busy for a while: each invocation runs a long dependent
// chain (under the 65,535-iteration loop limit of Mesa's lavapipe).
const char* kBusy = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(push_constant) uniform Work { uint iterations; };
void main()
{
    uint i = gl_GlobalInvocationID.x;
    float x = values[i];
    for (uint k = 0; k < iterations; ++k) {
        x = x * 0.9999 + 0.0001;
    }
    values[i] = x;
}
)";

struct Params
{
    float factor;
    float offset;
};

std::vector<float>
affine(uint32_t count, float factor, float offset)
{
    std::vector<float> values(count);
    for (uint32_t i = 0; i < count; ++i) {
        values[i] = float(i) * factor + offset;
    }
    return values;
}

class AsyncTest : public ValidatedTest<::testing::Test>
{
  protected:
    std::shared_ptr<kp::Algorithm> makeAlgorithm(const char* shader,
                                                 const std::shared_ptr<kp::TensorT<float>>& tensor,
                                                 Params params)
    {
        uint32_t groups = (tensor->size() + 63) / 64;
        return mgr().algorithm<float, Params>(
          { tensor }, kp::Shader::compileSource(shader), { groups, 1, 1 }, {}, { params });
    }

    // A sequence that keeps the device busy for a noticeable time.
    std::shared_ptr<kp::Sequence> busySequence()
    {
        auto values = mgr().tensorT<float>(std::vector<float>(64 * 64, 1.0f),
                                           kp::Memory::MemoryTypes::eStorage);
        auto algorithm = mgr().algorithm<float, uint32_t>(
          { values }, kp::Shader::compileSource(kBusy), { 64, 1, 1 }, {}, { 60000u });
        auto sequence = mgr().sequence();
        sequence->record<kp::OpAlgoDispatch>(algorithm);
        mKeepAlive.push_back(values);
        return sequence;
    }

    std::vector<std::shared_ptr<kp::Memory>> mKeepAlive;
};

} // namespace

TEST_F(AsyncTest, SeveralSequencesRunAsynchronouslyOnOneQueue)
{
    const uint32_t kCount = 1000;
    std::vector<std::shared_ptr<kp::TensorT<float>>> outputs;
    std::vector<std::shared_ptr<kp::Sequence>> sequences;
    for (int s = 0; s < 4; ++s) {
        auto out = mgr().tensor(std::vector<float>(kCount, -1.0f));
        auto algorithm = makeAlgorithm(kAffine, out, { float(s + 1), float(10 * s) });
        auto sequence = mgr().sequence();
        sequence->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out });
        outputs.push_back(out);
        sequences.push_back(sequence);
    }
    for (auto& sequence : sequences) {
        sequence->evalAsync();
        EXPECT_TRUE(sequence->isRunning());
    }
    // Awaited in reverse order: each await is independent of the others.
    for (auto it = sequences.rbegin(); it != sequences.rend(); ++it) {
        (*it)->evalAwait();
        EXPECT_FALSE((*it)->isRunning());
    }
    for (int s = 0; s < 4; ++s) {
        EXPECT_EQ(outputs[s]->vector(), affine(kCount, float(s + 1), float(10 * s))) << "sequence " << s;
    }
}

TEST_F(AsyncTest, EvalAsyncReturnsWhileTheDeviceIsStillWorking)
{
    auto sequence = busySequence();
    sequence->eval(); // compiles and warms up
    sequence->evalAsync();
    // A zero timeout only polls: the work (tens of milliseconds on lavapipe)
    // cannot be done yet, so the sequence must still be running.
    sequence->evalAwait(0);
    bool stillRunning = sequence->isRunning();
    int hostWork = 0;
    while (sequence->isRunning() && hostWork < 1000000) {
        ++hostWork; // the host is free while the device works
        sequence->evalAwait(1000);
    }
    sequence->evalAwait();
    EXPECT_TRUE(stillRunning);
    EXPECT_GT(hostWork, 0);
    EXPECT_FALSE(sequence->isRunning());
}

TEST_F(AsyncTest, GpuSideDependenciesOrderAChainOfSequences)
{
    const uint32_t kCount = 512;
    auto values = mgr().tensor(std::vector<float>(kCount, 0.0f));
    auto first = makeAlgorithm(kAffine, values, { 1.0f, 0.0f });  // i
    auto second = makeAlgorithm(kUpdate, values, { 3.0f, 1.0f }); // 3i + 1
    auto third = makeAlgorithm(kUpdate, values, { 0.5f, 2.0f });  // 1.5i + 2.5

    auto a = mgr().sequence();
    a->record<kp::OpAlgoDispatch>(first);
    auto b = mgr().sequence();
    b->record<kp::OpAlgoDispatch>(second);
    auto c = mgr().sequence();
    c->record<kp::OpAlgoDispatch>(third)->record<kp::OpSyncLocal>({ values });
    b->waitFor(a);
    c->waitFor(b);

    std::vector<float> expected(kCount);
    for (uint32_t i = 0; i < kCount; ++i) {
        expected[i] = (float(i) * 3.0f + 1.0f) * 0.5f + 2.0f;
    }
    for (int round = 0; round < 3; ++round) {
        a->evalAsync();
        b->evalAsync();
        c->evalAsync();
        // Only the last one is awaited by the host before reading.
        c->evalAwait();
        EXPECT_EQ(values->vector(), expected) << "round " << round;
        a->evalAwait();
        b->evalAwait();
    }
    EXPECT_EQ(a->submissionCount(), 3u);
    EXPECT_EQ(c->submissionCount(), 3u);
}

TEST_F(AsyncTest, WaitingForASequenceThatNeverRanDoesNotBlock)
{
    auto values = mgr().tensor(std::vector<float>(64, 0.0f));
    auto algorithm = makeAlgorithm(kAffine, values, { 2.0f, 1.0f });
    auto idle = mgr().sequence();
    auto worker = mgr().sequence();
    worker->waitFor(idle);
    worker->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ values })->eval();
    EXPECT_EQ(values->vector(), affine(64, 2.0f, 1.0f));
}

TEST_F(AsyncTest, WaitingForAReleasedSequenceIsHarmless)
{
    auto values = mgr().tensor(std::vector<float>(64, 0.0f));
    auto algorithm = makeAlgorithm(kAffine, values, { 1.0f, 5.0f });
    auto worker = mgr().sequence();
    {
        auto gone = mgr().sequence();
        gone->record<kp::OpAlgoDispatch>(algorithm)->eval();
        worker->waitFor(gone);
    }
    worker->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ values })->eval();
    EXPECT_EQ(values->vector(), affine(64, 1.0f, 5.0f));
}

TEST_F(AsyncTest, WaitForRejectsItselfNullAndOtherManagers)
{
    auto sequence = mgr().sequence();
    EXPECT_THROW(sequence->waitFor(sequence), kp::Error);
    EXPECT_THROW(sequence->waitFor(nullptr), kp::Error);
    auto other = makeManager();
    auto foreign = other->sequence();
    EXPECT_THROW(sequence->waitFor(foreign), kp::Error);
    foreign.reset();
    other.reset();
    sequence->clearWaits();
}

TEST_F(AsyncTest, TimelineSemaphoreIsExposedWhereSupported)
{
    auto sequence = mgr().sequence();
    // lavapipe supports timeline semaphores; the handle is for host code.
    EXPECT_TRUE(static_cast<bool>(sequence->getTimelineSemaphore()));
    EXPECT_EQ(sequence->submissionCount(), 0u);
    sequence->eval();
    EXPECT_EQ(sequence->submissionCount(), 1u);
}

TEST(QueueSelection, ComputeQueueFamiliesNamesComputeFamilies)
{
    auto families = kp::Manager::computeQueueFamilies(1);
    ASSERT_EQ(families.size(), 1u);
    auto manager = makeManager();
    auto properties = (*manager->getVkPhysicalDevice()).getQueueFamilyProperties();
    ASSERT_LT(families[0], properties.size());
    EXPECT_TRUE(properties[families[0]].queueFlags & vk::QueueFlagBits::eCompute);
}

TEST(QueueSelection, AskingForMoreComputeQueuesThanExistThrows)
{
    EXPECT_TRUE(throwsWith<kp::Error>([] { kp::Manager::computeQueueFamilies(10000); },
                                      { "10000 compute queue(s)" }));
    EXPECT_THROW(kp::Manager::computeQueueFamilies(0), kp::Error);
    EXPECT_THROW(kp::Manager::computeQueueFamilies(1, 99), kp::Error);
}

// One Manager used from 8 threads at once: each creates its own tensors,
// algorithm and sequence, and evaluates repeatedly.
TEST_F(AsyncTest, OneManagerFromEightThreads)
{
    auto spirv = kp::Shader::compileSource(kAffine);
    // The fixture creates its Manager lazily: do it once, before the threads.
    kp::Manager& manager = mgr();
    std::atomic<int> failures{ 0 };
    std::vector<std::string> errors(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            try {
                for (int round = 0; round < 5; ++round) {
                    uint32_t count = 256 + 64 * t;
                    auto out = manager.tensor(std::vector<float>(count, -1.0f));
                    auto scratch = manager.tensorT<uint32_t>(std::vector<uint32_t>(16, 7));
                    auto algorithm = manager.algorithm<float, Params>(
                      { out }, spirv, { (count + 63) / 64, 1, 1 }, {}, { Params{ float(t), float(round) } });
                    auto sequence = manager.sequence();
                    sequence->record<kp::OpAlgoDispatch>(algorithm)->record<kp::OpSyncLocal>({ out });
                    for (int e = 0; e < 3; ++e) {
                        sequence->eval();
                    }
                    if (out->vector() != affine(count, float(t), float(round))) {
                        throw std::runtime_error("wrong result");
                    }
                    scratch->destroy();
                }
            } catch (const std::exception& error) {
                errors[t] = error.what();
                failures.fetch_add(1);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    for (int t = 0; t < 8; ++t) {
        EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    }
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(AsyncTest, OneSequenceFromTwoThreadsAtOnceThrowsInsteadOfCorrupting)
{
    auto sequence = busySequence();
    sequence->eval();
    std::atomic<bool> started{ false };
    std::atomic<bool> otherThreadRejected{ false };
    std::atomic<bool> userDone{ false };
    std::thread user([&] {
        started = true;
        // Keeps the sequence busy for a while. The main thread may hold the
        // sequence for a moment when this starts: then this call is the one
        // refused, and it tries again.
        for (;;) {
            try {
                sequence->eval();
                break;
            } catch (const kp::Error&) {
                std::this_thread::yield();
            }
        }
        userDone = true;
    });
    while (!started) {
        std::this_thread::yield();
    }
    // Try while the first thread is (very likely) inside eval(); either the
    // call is rejected, or it came after eval() returned and succeeded.
    for (int attempt = 0; attempt < 200 && !otherThreadRejected && !userDone; ++attempt) {
        try {
            sequence->isRunning();
            sequence->evalAwait(0);
        } catch (const kp::Error& error) {
            otherThreadRejected = std::string(error.what()).find("two threads") != std::string::npos;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    user.join();
    EXPECT_TRUE(otherThreadRejected);
    // The sequence is intact afterwards.
    sequence->eval();
    EXPECT_FALSE(sequence->isRunning());
}
