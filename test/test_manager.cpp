// SPDX-License-Identifier: Apache-2.0
// kp::Manager: construction, device and queue selection, lifetime of the
// objects it makes, bring-your-own-Vulkan.
#include "TestSupport.hpp"

#include <cstring>
#include <mutex>
#include <thread>

using namespace kp_test;

namespace {

// Copies `input` to a fresh tensor on the device and returns what came back:
// the smallest proof that a manager's device and queue work.
std::vector<float>
roundTrip(kp::Manager& manager, const std::vector<float>& input)
{
    auto source = manager.tensor(input);
    auto target = manager.tensor(std::vector<float>(input.size(), 0.0f));
    manager.sequence()
      ->record<kp::OpSyncDevice>({ source })
      ->record<kp::OpCopy>({ source, target })
      ->record<kp::OpSyncLocal>({ target })
      ->eval();
    return target->vector();
}

} // namespace

using ManagerTest = KomputeTest;

TEST_F(ManagerTest, DefaultConstructorUsesDeviceZeroAndOneComputeQueue)
{
    kp::Manager manager;
    ASSERT_EQ(manager.queueCount(), 1u);
    uint32_t family = manager.queueFamilyIndex(0);
    auto families = manager.getVkPhysicalDevice()->getQueueFamilyProperties();
    ASSERT_LT(family, families.size());
    EXPECT_TRUE(families[family].queueFlags & vk::QueueFlagBits::eCompute);
    // The default is the first family with compute.
    for (uint32_t i = 0; i < family; ++i) {
        EXPECT_FALSE(families[i].queueFlags & vk::QueueFlagBits::eCompute);
    }

    auto devices = manager.listDevices();
    ASSERT_FALSE(devices.empty());
    EXPECT_STREQ(manager.getDeviceProperties().deviceName.data(),
                 devices[0].getProperties().deviceName.data());
    EXPECT_EQ(roundTrip(manager, { 1.0f, 2.0f, 3.0f }), (std::vector<float>{ 1.0f, 2.0f, 3.0f }));
}

TEST_F(ManagerTest, ExplicitDeviceAndQueueFamilyAreUsed)
{
    kp::Manager manager(0, { 0 });
    EXPECT_EQ(manager.queueCount(), 1u);
    EXPECT_EQ(manager.queueFamilyIndex(0), 0u);
    EXPECT_EQ(roundTrip(manager, { 4.0f, 5.0f }), (std::vector<float>{ 4.0f, 5.0f }));
}

TEST_F(ManagerTest, VulkanHandleGettersDescribeTheDeviceInUse)
{
    auto instance = mgr().getVkInstance();
    auto physicalDevice = mgr().getVkPhysicalDevice();
    auto device = mgr().getVkDevice();
    ASSERT_TRUE(instance && *instance);
    ASSERT_TRUE(physicalDevice && *physicalDevice);
    ASSERT_TRUE(device && *device);
    EXPECT_STREQ(physicalDevice->getProperties().deviceName.data(),
                 mgr().getDeviceProperties().deviceName.data());
    EXPECT_EQ(mgr().listDevices()[0], *physicalDevice);
}

TEST_F(ManagerTest, UnsupportedDesiredExtensionIsSkippedWithAWarning)
{
    LogCapture log;
    kp::Manager manager(0, {}, { "VK_KP_this_extension_does_not_exist" });
    EXPECT_TRUE(log.contains(kp::logger::Level::Warn, "VK_KP_this_extension_does_not_exist"));
    EXPECT_EQ(roundTrip(manager, { 7.0f }), (std::vector<float>{ 7.0f }));
}

TEST_F(ManagerTest, SupportedDesiredExtensionIsAccepted)
{
    // Every device exposing Vulkan 1.1 offers this (promoted) extension.
    LogCapture log;
    kp::Manager manager(0, {}, { "VK_KHR_16bit_storage", "VK_KHR_16bit_storage" });
    EXPECT_FALSE(log.contains(kp::logger::Level::Warn, "VK_KHR_16bit_storage"));
    EXPECT_EQ(roundTrip(manager, { 8.0f }), (std::vector<float>{ 8.0f }));
}

TEST_F(ManagerTest, TwoManagersWorkSideBySide)
{
    kp::Manager first;
    kp::Manager second;
    auto a = first.tensor({ 1.0f, 2.0f });
    auto b = second.tensor({ 3.0f, 4.0f });
    EXPECT_EQ(roundTrip(first, a->vector()), (std::vector<float>{ 1.0f, 2.0f }));
    EXPECT_EQ(roundTrip(second, b->vector()), (std::vector<float>{ 3.0f, 4.0f }));
    first.destroy();
    // Destroying one manager leaves the other's objects working.
    EXPECT_FALSE(a->isInit());
    EXPECT_TRUE(b->isInit());
    EXPECT_EQ(roundTrip(second, { 5.0f }), (std::vector<float>{ 5.0f }));
}

TEST_F(ManagerTest, DestroyIsIdempotent)
{
    kp::Manager manager;
    manager.destroy();
    EXPECT_NO_THROW(manager.destroy());
    EXPECT_NO_THROW(manager.destroy());
}

TEST_F(ManagerTest, DestroyLeavesObjectsHeldByTheUserInert)
{
    auto manager = makeManager();
    auto tensor = manager->tensor({ 1.0f, 2.0f, 3.0f });
    auto storage = manager->tensorT<int32_t>({ 1, 2 }, MemoryTypes::eStorage);
    auto sequence = manager->sequence();
    sequence->record<kp::OpSyncDevice>({ tensor });
    ASSERT_TRUE(tensor->isInit());
    ASSERT_TRUE(sequence->isInit());

    manager->destroy();
    EXPECT_FALSE(tensor->isInit());
    EXPECT_FALSE(storage->isInit());
    EXPECT_FALSE(sequence->isInit());
    // Releasing them afterwards, and destroying them again, is harmless.
    EXPECT_NO_THROW(tensor->destroy());
    EXPECT_NO_THROW(sequence->destroy());
}

TEST_F(ManagerTest, ManagerDestructorDestroysObjectsStillHeld)
{
    std::shared_ptr<kp::TensorT<float>> tensor;
    std::shared_ptr<kp::Sequence> sequence;
    {
        kp::Manager manager;
        tensor = manager.tensor({ 1.0f });
        sequence = manager.sequence();
    }
    EXPECT_FALSE(tensor->isInit());
    EXPECT_FALSE(sequence->isInit());
}

TEST_F(ManagerTest, DestroyWaitsForInFlightWork)
{
    auto manager = makeManager();
    const size_t count = 4u << 20; // 16 MiB per tensor
    auto source = manager->tensorT<uint32_t>(std::vector<uint32_t>(count, 7u));
    auto target = manager->tensorT<uint32_t>(count);
    auto sequence = manager->sequence();
    sequence->evalAsync<kp::OpCopy>({ source, target });
    // No evalAwait: destroying the device under a running copy must wait.
    manager->destroy();
    EXPECT_FALSE(sequence->isInit());
    EXPECT_FALSE(sequence->isRunning());
}

TEST_F(ManagerTest, ClearIsHarmlessAndTheManagerKeepsWorking)
{
    {
        auto dropped = mgr().tensor({ 1.0f });
        auto droppedSequence = mgr().sequence();
    }
    mgr().clear();
    EXPECT_EQ(roundTrip(mgr(), { 2.0f, 3.0f }), (std::vector<float>{ 2.0f, 3.0f }));
}

TEST_F(ManagerTest, ReleasedObjectsAreNotKeptAlive)
{
    std::weak_ptr<kp::Tensor> weakTensor;
    std::weak_ptr<kp::Sequence> weakSequence;
    {
        auto tensor = mgr().tensor({ 1.0f });
        auto sequence = mgr().sequence();
        weakTensor = tensor;
        weakSequence = sequence;
    }
    // The manager tracks its objects weakly: releasing them frees them now.
    EXPECT_TRUE(weakTensor.expired());
    EXPECT_TRUE(weakSequence.expired());
}

TEST_F(ManagerTest, ManySequencesOnTheOneQueue)
{
    auto source = mgr().tensor({ 1.0f, 2.0f, 3.0f });
    std::vector<std::shared_ptr<kp::TensorT<float>>> targets;
    std::vector<std::shared_ptr<kp::Sequence>> sequences;
    for (int i = 0; i < 4; ++i) {
        targets.push_back(mgr().tensor({ 0.0f, 0.0f, 0.0f }));
        sequences.push_back(mgr().sequence(0));
    }
    mgr().sequence()->eval<kp::OpSyncDevice>({ source });
    for (int i = 0; i < 4; ++i) {
        sequences[i]->evalAsync<kp::OpCopy>({ source, targets[i] });
    }
    for (int i = 0; i < 4; ++i) {
        sequences[i]->evalAwait();
        EXPECT_EQ(targets[i]->vector(), source->vector()) << "sequence " << i;
    }
}

TEST_F(ManagerTest, OneManagerIsUsableFromSeveralThreads)
{
    // Each thread creates its own tensors and sequences on the shared
    // manager (allocator, queue and one-time uploads are shared) and checks
    // its results. The validation layer's thread-safety checks are on too.
    const int threads = 4, rounds = 10;
    kp::Manager& manager = mgr();
    std::mutex failuresMutex;
    std::vector<std::string> failures;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            try {
                for (int round = 0; round < rounds; ++round) {
                    std::vector<int32_t> data(64);
                    for (size_t i = 0; i < data.size(); ++i) {
                        data[i] = t * 100000 + round * 1000 + static_cast<int32_t>(i);
                    }
                    auto storage = manager.tensorT<int32_t>(data, MemoryTypes::eStorage);
                    auto target = manager.tensorT<int32_t>(data.size());
                    manager.sequence()->eval<kp::OpCopy>({ storage, target });
                    if (target->vector() != data) {
                        std::lock_guard<std::mutex> lock(failuresMutex);
                        failures.push_back("thread " + std::to_string(t) + " round " +
                                           std::to_string(round) + ": wrong data");
                    }
                }
            } catch (const std::exception& error) {
                std::lock_guard<std::mutex> lock(failuresMutex);
                failures.push_back("thread " + std::to_string(t) + ": " + error.what());
            }
        });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    for (const auto& failure : failures) {
        ADD_FAILURE() << failure;
    }
}

// --- Bring your own Vulkan ---------------------------------------------------

TEST_F(ManagerTest, ByovManagerUsesTheGivenDeviceAndDestroysNothingOfIt)
{
    auto owner = makeManager();
    {
        kp::Manager byov(
          owner->getVkInstance(), owner->getVkPhysicalDevice(), owner->getVkDevice());
        EXPECT_EQ(byov.queueCount(), 1u);
        EXPECT_EQ(*byov.getVkDevice(), *owner->getVkDevice());
        EXPECT_EQ(roundTrip(byov, { 1.5f, -2.5f }), (std::vector<float>{ 1.5f, -2.5f }));
        byov.destroy();
    }
    // The device is still the owner's and still works.
    EXPECT_EQ(roundTrip(*owner, { 9.0f }), (std::vector<float>{ 9.0f }));
}

TEST_F(ManagerTest, ByovManagerOnAnApplicationsOwnDevice)
{
    RawVulkanDevice raw;
    {
        kp::Manager byov(raw.instance, raw.physicalDevice, raw.device);
        EXPECT_EQ(byov.queueFamilyIndex(0), raw.computeFamily);
        EXPECT_EQ(roundTrip(byov, { 1.0f, 2.0f, 3.0f }), (std::vector<float>{ 1.0f, 2.0f, 3.0f }));
        auto tensor = byov.tensorT<int32_t>({ 4, 5 }, MemoryTypes::eStorage);
        EXPECT_EQ(deviceValues<int32_t>(byov, tensor), (std::vector<int32_t>{ 4, 5 }));
    }
    // The application's device survives the manager and still works.
    vk::BufferCreateInfo info({}, 64, vk::BufferUsageFlagBits::eTransferDst);
    vk::Buffer buffer = raw.device->createBuffer(info);
    raw.device->destroyBuffer(buffer);
    raw.device->waitIdle();
}

TEST_F(ManagerTest, ByovObjectsKeepWorkingAfterTheByovManagerIsDestroyed)
{
    auto owner = makeManager();
    std::shared_ptr<kp::TensorT<float>> tensor;
    std::shared_ptr<kp::Sequence> sequence;
    {
        kp::Manager byov(
          owner->getVkInstance(), owner->getVkPhysicalDevice(), owner->getVkDevice());
        tensor = byov.tensor({ 3.0f, 4.0f });
        sequence = byov.sequence();
    }
    auto target = owner->tensor({ 0.0f, 0.0f });
    sequence->record<kp::OpSyncDevice>({ tensor })
      ->record<kp::OpCopy>({ tensor, target })
      ->record<kp::OpSyncLocal>({ target })
      ->eval();
    EXPECT_EQ(target->vector(), (std::vector<float>{ 3.0f, 4.0f }));
    // BYOV objects must go before the owner destroys the device.
    sequence.reset();
    tensor.reset();
}

TEST_F(ManagerTest, ByovWithExplicitQueueFamilies)
{
    auto owner = makeManager();
    uint32_t family = owner->queueFamilyIndex(0);
    kp::Manager byov(
      owner->getVkInstance(), owner->getVkPhysicalDevice(), owner->getVkDevice(), { family });
    EXPECT_EQ(byov.queueFamilyIndex(0), family);
    EXPECT_EQ(roundTrip(byov, { 6.0f }), (std::vector<float>{ 6.0f }));
}
