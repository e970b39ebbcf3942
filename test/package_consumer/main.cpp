// Built against an installed Kompute only (CMake package or pkg-config):
// syncs a tensor to the device and back through a sequence and checks it,
// then runs an operation of its own whose vk:: calls go through a dispatcher
// filled from the loader Kompute opened (kp::loadVulkanDispatcher): like
// Kompute, the program links no libvulkan.
#include <iostream>
#include <vector>

#include <kompute/Kompute.hpp>

namespace {

/** The program's Vulkan commands (filled in main()). */
vk::DispatchLoaderDynamic vulkan;

/** A user-written operation: fills a tensor's device buffer with a 32-bit
 * pattern (vkCmdFillBuffer, called as a vk:: method). */
class FillOp : public kp::OpBase
{
  public:
    FillOp(std::shared_ptr<kp::Tensor> tensor, uint32_t pattern)
      : mTensor(std::move(tensor))
      , mPattern(pattern)
    {
    }

    void record(const vk::CommandBuffer& cmd) override
    {
        mTensor->recordPrimaryMemoryBarrier(cmd,
                                            vk::AccessFlagBits::eTransferRead |
                                              vk::AccessFlagBits::eTransferWrite,
                                            vk::AccessFlagBits::eTransferWrite,
                                            vk::PipelineStageFlagBits::eTransfer,
                                            vk::PipelineStageFlagBits::eTransfer);
        cmd.fillBuffer(*mTensor->getPrimaryBuffer(), 0, VK_WHOLE_SIZE, mPattern, vulkan);
    }
    void preEval(const vk::CommandBuffer&) override {}
    void postEval(const vk::CommandBuffer&) override {}

  private:
    std::shared_ptr<kp::Tensor> mTensor;
    uint32_t mPattern;
};

} // namespace

int
main()
{
    try {
        kp::Manager mgr;
        std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << "\n";

        const std::vector<float> expected = { 1.5f, 2.5f, 3.5f, 4.5f };
        auto tensor = mgr.tensor(expected);

        mgr.sequence()
          ->record<kp::OpSyncDevice>({ tensor })
          ->record<kp::OpSyncLocal>({ tensor })
          ->eval();

        if (tensor->vector() != expected) {
            std::cerr << "package_consumer: wrong values after the round trip\n";
            return 1;
        }
        std::cout << "package_consumer: round trip OK\n";

        kp::loadVulkanDispatcher(vulkan);
        auto words = mgr.tensorT<uint32_t>(std::vector<uint32_t>(8, 0));
        mgr.sequence()
          ->record(std::make_shared<FillOp>(words, 0xC0FFEEu))
          ->record<kp::OpSyncLocal>({ words })
          ->eval();
        // The application's own vk:: call, outside any operation.
        vk::PhysicalDeviceProperties properties = mgr.getVkPhysicalDevice()->getProperties(vulkan);
        if (words->vector() != std::vector<uint32_t>(8, 0xC0FFEEu)) {
            std::cerr << "package_consumer: the custom operation's fill did not arrive\n";
            return 1;
        }
        if (properties.deviceID != mgr.getDeviceProperties().deviceID) {
            std::cerr << "package_consumer: vk::PhysicalDevice::getProperties disagrees\n";
            return 1;
        }
        std::cout << "package_consumer: custom operation OK\n";
        return 0;
    } catch (const std::exception& error) {
        std::cerr << "package_consumer: " << error.what() << "\n";
        return 1;
    }
}
