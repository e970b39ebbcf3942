// SPDX-License-Identifier: Apache-2.0
// Lifetimes: destroying objects in any order, objects held only by recorded
// operations, destroying while work is in flight (also from other threads),
// and a long randomized run of create / record / evaluate / destroy.
//
// Destroying an object never waits for the device: its Vulkan objects go to
// the device's retire list and are freed once the submissions that may use
// them have completed. Manager::destroy() waits for the device once and
// leaves what the user still holds inert (any use throws DestroyedError).
#include "DispatchTestHelpers.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>

using namespace kp_test;

namespace {

// values[i] += pixel i of the image (a 2 x 2 image for 4 values).
const char* kAddImage = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(set = 0, binding = 1, r32f) uniform image2D pixels;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    values[i] += imageLoad(pixels, ivec2(i % 2, i / 2)).r;
}
)";

// values[i] += amount (a push constant).
const char* kAdd = R"(
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Values { float values[]; };
layout(push_constant) uniform Push { float amount; };
void main()
{
    values[gl_GlobalInvocationID.x] += amount;
}
)";

// Keeps the device busy until the host writes a non-zero value into `go`.
// Lavapipe stops an invocation after 65,535 loop iterations in all, so the
// dispatch has millions of invocations (minutes of work), each of which
// leaves at once when it sees the flag. Bounded all the same: on a GPU each
// check reads host memory (about a microsecond), so 12 million checks an
// invocation end the dispatch within minutes even if the flag were never
// seen (with 'volatile coherent', invalid SPIR-V, the H200 ran it for hours).
const char* kWaitForHost = R"(
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) volatile buffer Flag { uint go; }; // volatile: Coherent too
void main()
{
    for (uint i = 0; i < 200u; ++i) {
        for (uint j = 0; j < 60000u; ++j) {
            if (go != 0u) {
                return;
            }
        }
    }
}
)";

const std::vector<uint32_t>&
addImageSpirv()
{
    static const std::vector<uint32_t> spirv = compile(kAddImage);
    return spirv;
}

const std::vector<uint32_t>&
addSpirv()
{
    static const std::vector<uint32_t> spirv = compile(kAdd);
    return spirv;
}

/**
 * Work that stays in flight until release(): a dispatch that spins until the
 * host writes a flag. Lets a test destroy things while the device is
 * certainly busy, and prove that destroying them did not wait for it.
 */
class BlockedDevice
{
  public:
    explicit BlockedDevice(kp::Manager& manager)
    {
        static const std::vector<uint32_t> spirv = compile(kWaitForHost);
        mFlag = manager.tensorT<uint32_t>(std::vector<uint32_t>{ 0u }, kp::Memory::MemoryTypes::eHost);
        // The flag must stay writable even when destroy() runs under us.
        mFlag->keepHostViewUntilDeleted();
        mGo = mFlag->data();
        mSequence = manager.sequence();
        mSequence->record<kp::OpAlgoDispatch>(manager.algorithm({ mFlag }, spirv, { 65535, 1, 1 }));
        mSequence->evalAsync();
    }
    ~BlockedDevice() { release(); }

    void release() { __atomic_store_n(mGo, 1u, __ATOMIC_SEQ_CST); } // the device polls it
    /** The sequence that runs the blocking dispatch. */
    kp::Sequence& sequence() { return *mSequence; }

  private:
    std::shared_ptr<kp::TensorT<uint32_t>> mFlag;
    uint32_t* mGo = nullptr;
    std::shared_ptr<kp::Sequence> mSequence;
};

/** Runs `action` on another thread; fails (after unblocking the device with
 * `blocked`) if it does not return within 20 s, i.e. if it waited for the
 * device. */
::testing::AssertionResult
returnsWithoutWaitingForTheDevice(const std::function<void()>& action, BlockedDevice& blocked)
{
    std::atomic<bool> done{ false };
    std::thread worker([&] {
        action();
        done = true;
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bool returned = done;
    if (!returned) {
        blocked.release();
    }
    worker.join();
    if (returned) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "it only returned once the device was idle";
}

/** Waits (bounded) until the manager's memory in use is back to `bytes`:
 * memory of dropped objects is freed once the device is done with it. */
::testing::AssertionResult
memoryReturnsTo(kp::Manager& manager, uint64_t bytes)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    uint64_t used = manager.memoryStats().usedBytes();
    while (used != bytes && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        used = manager.memoryStats().usedBytes();
    }
    if (used == bytes) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << used << " bytes still in use, expected " << bytes;
}

class LifetimeTest : public KomputeTest
{
};

// --- The hang of issue 11 -----------------------------------------------------

TEST_F(LifetimeTest, DestroyReturnsWhenARecordedOperationHoldsTheLastTensor)
{
    kp::Manager manager;
    auto sequence = manager.sequence();
    {
        auto tensor = manager.tensor({ 1.f, 2.f, 3.f });
        sequence->record<kp::OpSyncDevice>({ tensor }); // the op now holds the last reference
    }
    manager.destroy();
    EXPECT_FALSE(sequence->isInit());
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
}

TEST_F(LifetimeTest, ManagerDestructorReturnsWhenARecordedOperationHoldsTheLastReferences)
{
    std::shared_ptr<kp::Sequence> sequence;
    {
        kp::Manager manager;
        sequence = manager.sequence();
        auto tensor = manager.tensor({ 1.f, 2.f, 3.f, 4.f });
        auto image = manager.image(std::vector<float>{ 1.f, 2.f, 3.f, 4.f }, 2, 2, 1);
        auto algorithm = manager.algorithm({ tensor, image }, addImageSpirv(), { 4, 1, 1 });
        sequence->record<kp::OpSyncDevice>({ tensor })
          ->record<kp::OpAlgoDispatch>(algorithm)
          ->record<kp::OpSyncLocal>({ tensor })
          ->eval();
        EXPECT_EQ(tensor->vector(), (std::vector<float>{ 2.f, 4.f, 6.f, 8.f }));
    } // ~Manager with the operations holding the tensor, image and algorithm
    EXPECT_FALSE(sequence->isInit());
    EXPECT_THROW(sequence->eval(), kp::DestroyedError);
}

TEST_F(LifetimeTest, AnAlgorithmHeldOnlyByItsDispatchKeepsWorking)
{
    auto tensor = mgr().tensor({ 1.f, 2.f });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ tensor })
      ->record<kp::OpAlgoDispatch>(
        mgr().algorithm<float, float>({ tensor }, addSpirv(), { 2, 1, 1 }, {}, { 10.f }))
      ->record<kp::OpSyncLocal>({ tensor });
    sequence->eval()->eval();
    EXPECT_EQ(tensor->vector(), (std::vector<float>{ 21.f, 22.f }));
    uint64_t used = mgr().memoryStats().usedBytes();
    sequence.reset(); // the algorithm goes with the operation
    EXPECT_TRUE(memoryReturnsTo(mgr(), used));
}

// A memory object whose last reference also owns the Manager, as in Python,
// where each tensor keeps its Manager alive: dropping it destroys the Manager,
// from inside the destructor of whatever held that reference.
struct ManagerAndTensor
{
    std::unique_ptr<kp::Manager> manager = std::make_unique<kp::Manager>();
    std::shared_ptr<kp::TensorT<float>> tensor = manager->tensorT<float>({ 1.f, 2.f });
    ~ManagerAndTensor()
    {
        tensor.reset();
        manager.reset();
    }
};

std::shared_ptr<kp::Memory>
tensorOwningItsManager(std::shared_ptr<ManagerAndTensor>& both)
{
    both = std::make_shared<ManagerAndTensor>();
    return std::shared_ptr<kp::Memory>(both, both->tensor.get());
}

TEST_F(LifetimeTest, AnAlgorithmWhoseTensorOwnsTheManagerCanBeDestroyed)
{
    std::shared_ptr<ManagerAndTensor> both;
    auto tensor = tensorOwningItsManager(both);
    auto algorithm = both->manager->algorithm<float, float>({ tensor }, addSpirv(), { 2, 1, 1 }, {}, { 10.f });
    both->manager->sequence()->record<kp::OpAlgoDispatch>(algorithm)->eval();
    both.reset();
    tensor.reset(); // the algorithm holds the last reference of the Manager
    algorithm.reset(); // ~Algorithm destroys the Manager on its way out (it used to hang here)
    SUCCEED();
}

TEST_F(LifetimeTest, ASequenceWhoseOperationOwnsTheManagerCanBeDestroyed)
{
    std::shared_ptr<ManagerAndTensor> both;
    auto tensor = tensorOwningItsManager(both);
    auto sequence = both->manager->sequence();
    sequence->record<kp::OpSyncDevice>({ tensor })->record<kp::OpSyncLocal>({ tensor })->eval();
    EXPECT_EQ(both->tensor->vector(), (std::vector<float>{ 1.f, 2.f }));
    both.reset();
    tensor.reset(); // the sequence's operations hold the last reference of the Manager
    sequence.reset(); // ~Sequence destroys the Manager as its operations go
    SUCCEED();
}

// --- Destroying never waits for the device ------------------------------------

TEST_F(LifetimeTest, DestroyingObjectsWhileTheDeviceIsBusyDoesNotWaitForIt)
{
    uint64_t before = mgr().memoryStats().usedBytes();
    auto tensor = mgr().tensor({ 1.f, 2.f, 3.f, 4.f });
    auto image = mgr().image(std::vector<float>{ 1.f, 2.f, 3.f, 4.f }, 2, 2, 1);
    auto algorithm = mgr().algorithm({ tensor, image }, addImageSpirv(), { 4, 1, 1 });
    auto idle = mgr().sequence();
    idle->eval<kp::OpAlgoDispatch>(algorithm);
    auto copy = std::make_shared<kp::OpCopy>(std::vector<std::shared_ptr<kp::Memory>>{
      tensor, mgr().tensor({ 0.f, 0.f, 0.f, 0.f }) });

    uint64_t created = mgr().memoryStats().usedBytes();
    BlockedDevice blocked(mgr());
    uint64_t busy = mgr().memoryStats().usedBytes();
    uint64_t blockedBytes = busy - created;
    EXPECT_TRUE(returnsWithoutWaitingForTheDevice(
      [&] {
          tensor->destroy();
          image.reset();
          algorithm->destroy();
          idle->destroy();
          copy.reset();
      },
      blocked));
    // The device may still be using them: their memory is only freed once
    // the submission in flight has completed.
    EXPECT_TRUE(blocked.sequence().isRunning());
    EXPECT_EQ(mgr().memoryStats().usedBytes(), busy);
    blocked.release();
    blocked.sequence().evalAwait();
    EXPECT_TRUE(memoryReturnsTo(mgr(), before + blockedBytes));
}

TEST_F(LifetimeTest, SetMemObjectsDoesNotWaitForTheDevice)
{
    auto a = mgr().tensor({ 1.f, 2.f });
    auto b = mgr().tensor({ 5.f, 6.f });
    auto algorithm = mgr().algorithm<float, float>({ a }, addSpirv(), { 2, 1, 1 }, {}, { 1.f });
    auto sequence = mgr().sequence();
    sequence->record<kp::OpSyncDevice>({ a, b })
      ->record<kp::OpAlgoDispatch>(algorithm)
      ->record<kp::OpSyncLocal>({ a, b })
      ->eval();
    BlockedDevice blocked(mgr());
    EXPECT_TRUE(returnsWithoutWaitingForTheDevice([&] { algorithm->setMemObjects({ b }); }, blocked));
    blocked.release();
    blocked.sequence().evalAwait();
    sequence->eval(); // re-records with the new binding
    EXPECT_EQ(a->vector(), (std::vector<float>{ 2.f, 3.f }));
    EXPECT_EQ(b->vector(), (std::vector<float>{ 6.f, 7.f }));
}

TEST_F(LifetimeTest, ASequenceDestroyedWhileRunningFreesItsObjectsOnceTheDeviceIsDone)
{
    uint64_t before = mgr().memoryStats().usedBytes();
    {
        BlockedDevice blocked(mgr());
        auto sequence = mgr().sequence();
        sequence->record<kp::OpSyncDevice>({ mgr().tensor({ 1.f, 2.f }) })->evalAsync();
        EXPECT_TRUE(returnsWithoutWaitingForTheDevice([&] { sequence.reset(); }, blocked));
    } // released: the blocking sequence and its flag are dropped too, still running
    EXPECT_TRUE(memoryReturnsTo(mgr(), before));
}

TEST_F(LifetimeTest, TheManagerIsDestroyedFromAnotherThreadWhileWorkIsInFlight)
{
    auto manager = std::make_unique<kp::Manager>();
    auto tensor = manager->tensor({ 1.f, 2.f });
    auto sequence = manager->sequence();
    sequence->record<kp::OpSyncDevice>({ tensor })->record<kp::OpSyncLocal>({ tensor });
    auto blocked = std::make_unique<BlockedDevice>(*manager);
    sequence->evalAsync();
    std::thread destroyer([&] { manager->destroy(); }); // waits for the device, once
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    blocked->release();
    destroyer.join();
    EXPECT_THROW(sequence->evalAwait(), kp::DestroyedError);
    EXPECT_THROW(blocked->sequence().evalAwait(), kp::DestroyedError);
    EXPECT_THROW(tensor->vector(), kp::DestroyedError);
    blocked.reset();
    sequence.reset();
    tensor.reset();
    manager.reset();
}

TEST_F(LifetimeTest, ObjectsDroppedOnOtherThreadsWhileTheManagerIsDestroyed)
{
    constexpr int kRounds = 10;
    constexpr int kThreads = 4;
    for (int round = 0; round < kRounds; ++round) {
        auto manager = std::make_unique<kp::Manager>();
        struct Objects
        {
            std::vector<std::shared_ptr<kp::Sequence>> sequences;
            std::vector<std::shared_ptr<kp::Memory>> memory;
            std::vector<std::shared_ptr<kp::Algorithm>> algorithms;
        };
        std::vector<Objects> perThread(kThreads);
        for (auto& objects : perThread) {
            for (int i = 0; i < 4; ++i) {
                auto tensor = manager->tensor({ float(i), 1.f });
                auto algorithm =
                  manager->algorithm<float, float>({ tensor }, addSpirv(), { 2, 1, 1 }, {}, { 1.f });
                auto sequence = manager->sequence();
                sequence->record<kp::OpSyncDevice>({ tensor })
                  ->record<kp::OpAlgoDispatch>(algorithm)
                  ->record<kp::OpSyncLocal>({ tensor });
                if (i % 2 == 0) {
                    sequence->evalAsync();
                }
                objects.sequences.push_back(sequence);
                objects.memory.push_back(tensor);
                objects.algorithms.push_back(algorithm);
            }
        }
        std::atomic<int> ready{ 0 };
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                Objects objects = std::move(perThread[t]);
                ready.fetch_add(1);
                while (ready.load() <= kThreads) {
                }
                // Drop in an order that differs between threads.
                if (t % 2 == 0) {
                    objects.sequences.clear();
                    objects.algorithms.clear();
                    objects.memory.clear();
                } else {
                    objects.memory.clear();
                    objects.algorithms.clear();
                    objects.sequences.clear();
                }
            });
        }
        while (ready.load() < kThreads) {
        }
        ready.fetch_add(1);
        manager->destroy();
        for (auto& thread : threads) {
            thread.join();
        }
        manager.reset();
    }
}

// --- Every destruction order ----------------------------------------------------

enum class Part
{
    eManager,
    eSequence,
    eAlgorithm,
    eTensor,
    eImage,
    eOperation,
};

const char*
partName(Part part)
{
    switch (part) {
        case Part::eManager: return "manager";
        case Part::eSequence: return "sequence";
        case Part::eAlgorithm: return "algorithm";
        case Part::eTensor: return "tensor";
        case Part::eImage: return "image";
        case Part::eOperation: return "operation";
    }
    return "?";
}

/** How an object ends: its last handle dropped, or destroy() called on it
 * (the handle is kept, and must then refuse every use). */
enum class Ending
{
    eDrop,
    eDestroy,
};

/** A manager with one of each kind of object, the dispatch recorded into
 * the sequence and submitted, still running. */
struct Scene
{
    std::unique_ptr<kp::Manager> manager;
    bool managerDestroyed = false;
    std::shared_ptr<kp::Sequence> sequence;
    std::shared_ptr<kp::Algorithm> algorithm;
    std::shared_ptr<kp::TensorT<float>> tensor;
    std::shared_ptr<kp::ImageT<float>> image;
    std::shared_ptr<kp::OpBase> operation;
    // Objects whose destroy() was called (their handles are kept).
    bool destroyed[6] = {};

    Scene()
    {
        manager = std::make_unique<kp::Manager>();
        tensor = manager->tensorT<float>({ 1.f, 2.f, 3.f, 4.f });
        image = manager->imageT<float>(std::vector<float>{ 1.f, 2.f, 3.f, 4.f }, 2, 2, 1);
        algorithm = manager->algorithm({ tensor, image }, addImageSpirv(), { 4, 1, 1 });
        operation = std::make_shared<kp::OpAlgoDispatch>(algorithm);
        sequence = manager->sequence();
        sequence->record<kp::OpSyncDevice>({ tensor })
          ->record(operation)
          ->record<kp::OpSyncLocal>({ tensor })
          ->eval();
        EXPECT_EQ(tensor->vector(), (std::vector<float>{ 2.f, 4.f, 6.f, 8.f }));
        sequence->evalAsync(); // in flight while the objects go
    }

    bool dead() const { return !manager || managerDestroyed; }

    void end(Part part, Ending ending)
    {
        bool drop = ending == Ending::eDrop;
        destroyed[static_cast<int>(part)] = !drop;
        switch (part) {
            case Part::eManager:
                if (drop) {
                    manager.reset();
                } else {
                    manager->destroy();
                    managerDestroyed = true;
                }
                break;
            case Part::eSequence:
                // Its OpSyncLocal writes the host views that checkSurvivors
                // reads: awaited first, or that read races with the device
                // (destroying a running sequence itself is covered by
                // ASequenceDestroyedWhileRunningFreesItsObjectsOnceTheDeviceIsDone).
                if (sequence->isRunning()) {
                    sequence->evalAwait();
                }
                drop ? sequence.reset() : sequence->destroy();
                break;
            case Part::eAlgorithm:
                drop ? algorithm.reset() : algorithm->destroy();
                break;
            case Part::eTensor:
                drop ? tensor.reset() : tensor->destroy();
                break;
            case Part::eImage:
                drop ? image.reset() : image->destroy();
                break;
            case Part::eOperation:
                operation.reset(); // operations have no destroy()
                break;
        }
    }

    bool isDestroyed(Part part) const { return destroyed[static_cast<int>(part)]; }

    /** What the objects still held must do now. */
    void checkSurvivors()
    {
        if (dead()) {
            // Everything left is inert.
            if (sequence) {
                EXPECT_FALSE(sequence->isInit());
                EXPECT_THROW(sequence->eval(), kp::DestroyedError);
                EXPECT_THROW(sequence->evalAwait(), kp::DestroyedError);
            }
            if (tensor) {
                EXPECT_FALSE(tensor->isInit());
                EXPECT_THROW(tensor->vector(), kp::DestroyedError);
            }
            if (image) {
                EXPECT_FALSE(image->isInit());
                EXPECT_THROW(image->vector(), kp::DestroyedError);
            }
            if (algorithm) {
                EXPECT_FALSE(algorithm->isInit());
                EXPECT_THROW(algorithm->checkUsable("a test"), kp::DestroyedError);
            }
            if (manager) {
                EXPECT_THROW(manager->sequence(), kp::DestroyedError);
            }
            return;
        }
        bool relaunch = false;
        if (sequence && !isDestroyed(Part::eSequence)) {
            sequence->evalAwait();
            bool usesDestroyed = isDestroyed(Part::eTensor) || isDestroyed(Part::eImage) ||
                                 isDestroyed(Part::eAlgorithm);
            if (usesDestroyed) {
                EXPECT_THROW(sequence->eval(), kp::DestroyedError);
            } else {
                // Every recorded object is still there (the operations hold
                // what the user dropped): the batch runs again.
                EXPECT_NO_THROW(sequence->eval());
                // Left in flight for the next step, once the host views
                // below are read (its OpSyncLocal writes them).
                relaunch = true;
            }
        } else if (sequence) {
            EXPECT_THROW(sequence->eval(), kp::DestroyedError);
        }
        if (tensor && !isDestroyed(Part::eTensor)) {
            EXPECT_EQ(tensor->vector().size(), 4u);
        } else if (tensor) {
            EXPECT_THROW(tensor->vector(), kp::DestroyedError);
        }
        if (image && !isDestroyed(Part::eImage)) {
            EXPECT_EQ(image->vector(), (std::vector<float>{ 1.f, 2.f, 3.f, 4.f }));
        }
        if (relaunch) {
            sequence->evalAsync();
        }
    }
};

class DestructionOrderTest : public ValidatedTest<::testing::TestWithParam<Ending>>
{
};

/**
 * Orders of ending `n` parts that between them take every step there is:
 * ending part x when exactly the parts of set S have ended, for every S and
 * every x outside it (n * 2^(n-1) steps). What a step does depends on S and
 * x only (each step's check leaves the scene in the same state whatever the
 * order so far), so these orders do everything that all n! orders do. For 6
 * parts: 192 steps in 60 orders (the fewest possible: 60 steps lead from 2
 * ended parts to 3), where all 720 orders took 720 Managers, about 12
 * minutes on the H200 with the validation layer. Each order is built
 * greedily: a step not yet taken where there is one, towards the parts
 * with the most steps not yet taken.
 */
std::vector<std::vector<int>>
ordersTakingEveryStep(int n)
{
    const uint32_t all = (1u << n) - 1;
    std::vector<std::vector<bool>> taken(all + 1, std::vector<bool>(n, false));
    size_t left = size_t(n) << (n - 1);
    auto untakenFrom = [&](uint32_t set) { // steps not yet taken from `set` or later sets
        size_t count = 0;
        for (uint32_t later = set; later <= all; ++later) {
            if ((later & set) == set) {
                for (int x = 0; x < n; ++x) {
                    count += !(later >> x & 1u) && !taken[later][x];
                }
            }
        }
        return count;
    };
    std::vector<std::vector<int>> orders;
    while (left > 0) {
        std::vector<int> order;
        for (uint32_t set = 0; set != all;) {
            int best = -1;
            std::pair<bool, size_t> bestScore{ false, 0 };
            for (int x = 0; x < n; ++x) {
                if (set >> x & 1u) {
                    continue;
                }
                std::pair<bool, size_t> score{ !taken[set][x], untakenFrom(set | 1u << x) };
                if (best < 0 || score > bestScore) {
                    best = x;
                    bestScore = score;
                }
            }
            left -= !taken[set][best];
            taken[set][best] = true;
            order.push_back(best);
            set |= 1u << best;
        }
        orders.push_back(order);
    }
    return orders;
}

TEST_P(DestructionOrderTest, EveryOrderOfManagerSequenceAlgorithmTensorImageAndOperation)
{
    const std::vector<std::vector<int>> orders = ordersTakingEveryStep(6);
    ASSERT_EQ(orders.size(), 60u);
    std::set<std::pair<uint32_t, int>> steps; // (parts ended before, part ended)
    for (const auto& order : orders) {
        std::string name;
        for (int part : order) {
            name += std::string(name.empty() ? "" : ", ") + partName(static_cast<Part>(part));
        }
        SCOPED_TRACE("destruction order: " + name);
        Scene scene;
        uint32_t ended = 0;
        for (int part : order) {
            steps.insert({ ended, part });
            scene.end(static_cast<Part>(part), GetParam());
            scene.checkSurvivors();
            ended |= 1u << part;
        }
        if (HasFailure()) {
            return; // one order's failures are enough to read
        }
    }
    EXPECT_EQ(steps.size(), 6u * 32u) << "every step of every order was taken";
}

INSTANTIATE_TEST_SUITE_P(Endings,
                         DestructionOrderTest,
                         ::testing::Values(Ending::eDrop, Ending::eDestroy),
                         [](const auto& info) {
                             return info.param == Ending::eDrop ? "LastHandleDropped"
                                                                : "DestroyCalled";
                         });

// --- A long randomized run -------------------------------------------------------
//
// Thousands of random steps (fixed seed) of creating tensors, algorithms and
// sequences, recording operations, evaluating (synchronously and not),
// reading results, and destroying or dropping objects in any state, with the
// Manager itself destroyed now and then while objects are still held. A
// model on the host says what every tensor must hold and which calls must
// throw kp::DestroyedError. Runs under the validation layer (CTest) and
// under ThreadSanitizer (scripts/test-tsan.sh).

class RandomLifetimes
{
  public:
    explicit RandomLifetimes(uint32_t seed)
      : mRandom(seed)
    {
        mManager = std::make_unique<kp::Manager>();
    }

    void run(int steps)
    {
        for (int step = 0; step < steps && !::testing::Test::HasFatalFailure(); ++step) {
            SCOPED_TRACE("step " + std::to_string(step));
            this->step();
            if (::testing::Test::HasFailure()) {
                return;
            }
        }
        finish();
    }

  private:
    struct TensorState
    {
        std::shared_ptr<kp::TensorT<float>> handle; // the user's; null once dropped
        std::weak_ptr<kp::TensorT<float>> object;
        float host = 0;
        float device = 0;
        bool direct = false;    // host view is the device memory
        bool destroyed = false;    // destroy() was called
        bool unknownHost = false;   // the host view's value is not known
        bool unknownDevice = false; // the device memory's value is not known
        bool unsettled = false;     // a sequence dropped while running may still write it
        int generation = 0;         // the Manager it belongs to
    };
    using Tensor = std::shared_ptr<TensorState>;

    struct AlgorithmState
    {
        std::shared_ptr<kp::Algorithm> handle;
        Tensor tensor;
        float amount = 0;
        bool destroyed = false;
        int generation = 0;
    };
    using Algorithm = std::shared_ptr<AlgorithmState>;

    enum class OpKind
    {
        eSyncDevice,
        eSyncLocal,
        eCopy,
        eDispatch,
    };
    struct Op
    {
        OpKind kind;
        std::vector<Tensor> tensors;
        Algorithm algorithm;
    };

    struct SequenceState
    {
        std::shared_ptr<kp::Sequence> handle;
        std::vector<Op> ops;
        bool evaluated = false; // the next record starts a new batch
        bool running = false;
        bool destroyed = false;
        int generation = 0;
    };
    using Sequence = std::shared_ptr<SequenceState>;

    template<typename T>
    T pick(const std::vector<T>& items)
    {
        return items[std::uniform_int_distribution<size_t>(0, items.size() - 1)(mRandom)];
    }
    int roll(int sides) { return std::uniform_int_distribution<int>(0, sides - 1)(mRandom); }

    bool current(int generation) const { return generation == mGeneration; }
    bool usable(const Tensor& t) const { return current(t->generation) && !t->destroyed; }
    bool usable(const Algorithm& a) const
    {
        return current(a->generation) && !a->destroyed && usable(a->tensor);
    }

    /** Tensors the user holds and may use. */
    std::vector<Tensor> usableTensors() const
    {
        std::vector<Tensor> result;
        for (const auto& t : mTensors) {
            if (t->handle && usable(t)) {
                result.push_back(t);
            }
        }
        return result;
    }

    void step()
    {
        int action = roll(100);
        if (action < 12) {
            createTensor();
        } else if (action < 18) {
            createAlgorithm();
        } else if (action < 23) {
            createSequence();
        } else if (action < 45) {
            record();
        } else if (action < 58) {
            evaluate(false);
        } else if (action < 64) {
            evaluate(true);
        } else if (action < 68) {
            awaitRunning();
        } else if (action < 76) {
            readTensor();
        } else if (action < 80) {
            writeTensor();
        } else if (action < 96) {
            destroySomething();
        } else if (action < 99) {
            useSomethingDead();
        } else if (roll(4) == 0) {
            destroyManager();
        }
    }

    void createTensor()
    {
        auto state = std::make_shared<TensorState>();
        state->host = state->device = float(roll(50));
        auto type = roll(3) == 0 ? kp::Memory::MemoryTypes::eHost : kp::Memory::MemoryTypes::eDevice;
        state->handle = mManager->tensorT<float>(std::vector<float>(8, state->host), type);
        state->object = state->handle;
        state->direct = state->handle->isHostViewDirect();
        if (!state->direct) {
            // Data given at creation is in the host view only (eDevice, as
            // upstream): the device memory is not yet defined.
            state->unknownDevice = true;
        }
        state->generation = mGeneration;
        mTensors.push_back(state);
    }

    void createAlgorithm()
    {
        auto tensors = usableTensors();
        if (tensors.empty()) {
            return;
        }
        auto state = std::make_shared<AlgorithmState>();
        state->tensor = pick(tensors);
        state->amount = float(1 + roll(5));
        state->handle = mManager->algorithm<float, float>(
          { state->tensor->handle }, addSpirv(), { 8, 1, 1 }, {}, { state->amount });
        state->generation = mGeneration;
        mAlgorithms.push_back(state);
    }

    void createSequence()
    {
        auto state = std::make_shared<SequenceState>();
        state->handle = mManager->sequence();
        state->generation = mGeneration;
        mSequences.push_back(state);
    }

    std::vector<Sequence> idleSequences() const
    {
        std::vector<Sequence> result;
        for (const auto& s : mSequences) {
            if (s->handle && current(s->generation) && !s->destroyed && !s->running) {
                result.push_back(s);
            }
        }
        return result;
    }

    void record()
    {
        auto sequences = idleSequences();
        auto tensors = usableTensors();
        // Also through operations' own references: tensors the user dropped.
        for (const auto& t : mTensors) {
            if (!t->handle && usable(t) && !t->object.expired() && roll(2) == 0) {
                tensors.push_back(t);
            }
        }
        if (sequences.empty() || tensors.empty()) {
            return;
        }
        Sequence sequence = pick(sequences);
        Op op;
        op.kind = static_cast<OpKind>(roll(4));
        std::shared_ptr<kp::OpBase> recorded;
        auto objects = [](const std::vector<Tensor>& list) {
            std::vector<std::shared_ptr<kp::Memory>> result;
            for (const auto& t : list) {
                result.push_back(t->object.lock());
            }
            return result;
        };
        switch (op.kind) {
            case OpKind::eSyncDevice:
            case OpKind::eSyncLocal: {
                op.tensors = { pick(tensors) };
                if (roll(2) == 0) {
                    Tensor second = pick(tensors);
                    if (second != op.tensors[0]) {
                        op.tensors.push_back(second);
                    }
                }
                if (op.kind == OpKind::eSyncDevice) {
                    recorded = std::make_shared<kp::OpSyncDevice>(objects(op.tensors));
                } else {
                    recorded = std::make_shared<kp::OpSyncLocal>(objects(op.tensors));
                }
                break;
            }
            case OpKind::eCopy: {
                Tensor source = pick(tensors);
                Tensor target = pick(tensors);
                if (source == target) {
                    return;
                }
                op.tensors = { source, target };
                recorded = std::make_shared<kp::OpCopy>(objects(op.tensors));
                break;
            }
            case OpKind::eDispatch: {
                std::vector<Algorithm> algorithms;
                for (const auto& a : mAlgorithms) {
                    if (a->handle && usable(a)) {
                        algorithms.push_back(a);
                    }
                }
                if (algorithms.empty()) {
                    return;
                }
                op.algorithm = pick(algorithms);
                op.tensors = { op.algorithm->tensor };
                recorded = std::make_shared<kp::OpAlgoDispatch>(op.algorithm->handle);
                break;
            }
        }
        if (sequence->evaluated) {
            sequence->ops.clear();
            sequence->evaluated = false;
        }
        sequence->handle->record(recorded);
        sequence->ops.push_back(op);
    }

    /** Applies a recorded batch to the model. */
    void apply(const std::vector<Op>& ops)
    {
        for (const Op& op : ops) {
            switch (op.kind) {
                case OpKind::eSyncDevice:
                    for (const auto& t : op.tensors) {
                        if (!t->direct) {
                            t->device = t->host;
                            t->unknownDevice = t->unknownHost;
                        }
                    }
                    break;
                case OpKind::eSyncLocal:
                    for (const auto& t : op.tensors) {
                        if (!t->direct) {
                            t->host = t->device;
                            t->unknownHost = t->unknownDevice;
                        }
                    }
                    break;
                case OpKind::eCopy: {
                    const Tensor& source = op.tensors[0];
                    const Tensor& target = op.tensors[1];
                    float value = source->direct ? source->host : source->device;
                    bool unknown = source->direct ? source->unknownHost : source->unknownDevice;
                    // OpCopy fills the destination's host view too.
                    target->host = target->device = value;
                    target->unknownHost = target->unknownDevice = unknown;
                    break;
                }
                case OpKind::eDispatch: {
                    const Tensor& t = op.algorithm->tensor;
                    if (t->direct) {
                        t->host += op.algorithm->amount;
                    } else {
                        t->device += op.algorithm->amount;
                    }
                    break;
                }
            }
        }
    }

    bool batchUsable(const SequenceState& sequence) const
    {
        for (const Op& op : sequence.ops) {
            for (const auto& t : op.tensors) {
                if (t->destroyed) {
                    return false;
                }
            }
            if (op.algorithm && op.algorithm->destroyed) {
                return false;
            }
        }
        return true;
    }

    void evaluate(bool async)
    {
        auto sequences = idleSequences();
        if (sequences.empty()) {
            return;
        }
        Sequence sequence = pick(sequences);
        awaitRunning(); // one submission in flight at a time keeps the model simple
        // Recording after an evaluation, failed or not, starts a new batch.
        sequence->evaluated = true;
        ++mEvaluations;
        if (!batchUsable(*sequence)) {
            EXPECT_THROW(async ? sequence->handle->evalAsync() : sequence->handle->eval(),
                         kp::DestroyedError);
            ++mRefused;
            return;
        }
        if (async) {
            sequence->handle->evalAsync();
            sequence->running = true;
            mRunning = sequence;
        } else {
            sequence->handle->eval();
        }
        apply(sequence->ops);
    }

    void awaitRunning()
    {
        if (!mRunning) {
            return;
        }
        mRunning->handle->evalAwait();
        mRunning->running = false;
        mRunning.reset();
    }

    void readTensor()
    {
        auto tensors = usableTensors();
        if (tensors.empty()) {
            return;
        }
        awaitRunning();
        Tensor t = pick(tensors);
        if (t->unsettled || t->unknownHost || (t->direct && t->unknownDevice)) {
            return;
        }
        EXPECT_EQ(t->handle->vector(), std::vector<float>(8, t->host));
        ++mReads;
    }

    void writeTensor()
    {
        auto tensors = usableTensors();
        if (tensors.empty()) {
            return;
        }
        awaitRunning();
        Tensor t = pick(tensors);
        if (t->unsettled) {
            return; // a dropped running sequence may still be using it
        }
        t->host = float(roll(50));
        t->unknownHost = false;
        if (t->direct) {
            t->device = t->host;
        }
        t->handle->setData(std::vector<float>(8, t->host));
    }

    /** A sequence dropped or destroyed while running may still write what
     * it touches: those values are unknown from now on. */
    void forgetValuesOf(const SequenceState& sequence)
    {
        for (const Op& op : sequence.ops) {
            for (const auto& t : op.tensors) {
                t->unknownHost = t->unknownDevice = true;
                t->unsettled = true;
            }
        }
    }

    /** The objects of `all` whose handle the user still holds. */
    template<typename State>
    static std::vector<std::shared_ptr<State>> withHandles(
      const std::vector<std::shared_ptr<State>>& all)
    {
        std::vector<std::shared_ptr<State>> result;
        for (const auto& state : all) {
            if (state->handle) {
                result.push_back(state);
            }
        }
        return result;
    }

    /** Drops the handle, or calls destroy() and keeps it. */
    template<typename State>
    static void end(State& state, bool drop)
    {
        if (drop) {
            state.handle.reset();
        } else {
            state.handle->destroy();
            state.destroyed = true;
        }
    }

    void destroySomething()
    {
        ++mEnded;
        bool drop = roll(2) == 0;
        int kind = roll(3);
        if (kind == 0) {
            auto tensors = withHandles(mTensors);
            if (!tensors.empty()) {
                end(*pick(tensors), drop);
            }
        } else if (kind == 1) {
            auto algorithms = withHandles(mAlgorithms);
            if (!algorithms.empty()) {
                end(*pick(algorithms), drop);
            }
        } else {
            auto sequences = withHandles(mSequences);
            if (!sequences.empty()) {
                Sequence s = pick(sequences);
                if (s->running) {
                    forgetValuesOf(*s);
                    s->running = false;
                    mRunning.reset();
                }
                end(*s, drop);
            }
        }
        prune();
    }

    /** Forgets objects that nothing can reach any more. */
    void prune()
    {
        mTensors.erase(std::remove_if(mTensors.begin(),
                                      mTensors.end(),
                                      [](const Tensor& t) { return !t->handle && t->object.expired(); }),
                       mTensors.end());
        mAlgorithms.erase(std::remove_if(mAlgorithms.begin(),
                                         mAlgorithms.end(),
                                         [](const Algorithm& a) { return !a->handle; }),
                          mAlgorithms.end());
        mSequences.erase(std::remove_if(mSequences.begin(),
                                        mSequences.end(),
                                        [](const Sequence& s) { return !s->handle; }),
                         mSequences.end());
    }

    /** Objects of a destroyed Manager, or destroyed themselves, refuse every
     * use with kp::DestroyedError. */
    void useSomethingDead()
    {
        for (const auto& t : mTensors) {
            if (t->handle && (!current(t->generation) || t->destroyed)) {
                EXPECT_FALSE(t->handle->isInit());
                EXPECT_THROW(t->handle->vector(), kp::DestroyedError);
                EXPECT_THROW(t->handle->setData(std::vector<float>(8, 1.f)), kp::DestroyedError);
                return;
            }
        }
        for (const auto& s : mSequences) {
            if (s->handle && (!current(s->generation) || s->destroyed)) {
                EXPECT_FALSE(s->handle->isInit());
                EXPECT_THROW(s->handle->eval(), kp::DestroyedError);
                EXPECT_THROW(s->handle->evalAwait(), kp::DestroyedError);
                return;
            }
        }
        for (const auto& a : mAlgorithms) {
            if (a->handle && (!current(a->generation) || a->destroyed)) {
                EXPECT_FALSE(a->handle->isInit());
                return;
            }
        }
    }

    void destroyManager()
    {
        if (mRunning) {
            forgetValuesOf(*mRunning); // never awaited: gone with the Manager
            mRunning->running = false;
            mRunning.reset();
        }
        if (roll(2) == 0) {
            mManager->destroy();
            EXPECT_THROW(mManager->tensor({ 1.f }), kp::DestroyedError);
        }
        mManager = std::make_unique<kp::Manager>();
        ++mGeneration;
        for (auto& s : mSequences) {
            s->running = false;
        }
    }

    void finish()
    {
        std::printf("random run: %d evaluations (%d refused), %d reads checked, %d Managers, "
                    "%d objects destroyed or dropped\n",
                    mEvaluations,
                    mRefused,
                    mReads,
                    mGeneration + 1,
                    mEnded);
        awaitRunning();
        // Everything but the Manager goes: its memory is freed once the
        // device is done with it.
        mSequences.clear();
        mAlgorithms.clear();
        mTensors.clear();
        EXPECT_TRUE(memoryReturnsTo(*mManager, 0));
        mManager.reset();
    }

    std::mt19937 mRandom;
    std::unique_ptr<kp::Manager> mManager;
    int mGeneration = 0;
    std::vector<Tensor> mTensors;
    std::vector<Algorithm> mAlgorithms;
    std::vector<Sequence> mSequences;
    Sequence mRunning;
    int mEvaluations = 0;
    int mRefused = 0;
    int mReads = 0;
    int mEnded = 0;
};

TEST_F(LifetimeTest, RandomCreateRecordEvaluateDestroySteps)
{
    // KOMPUTE_TEST_RANDOM_STEPS and KOMPUTE_TEST_RANDOM_SEED explore further.
    int steps = 10000;
    uint32_t seed = 20261201;
    if (const char* value = std::getenv("KOMPUTE_TEST_RANDOM_STEPS")) {
        steps = std::atoi(value);
    }
    if (const char* value = std::getenv("KOMPUTE_TEST_RANDOM_SEED")) {
        seed = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    }
    RandomLifetimes(seed).run(steps);
}

} // namespace
