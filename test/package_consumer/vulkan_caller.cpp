// Built against an installed Kompute only, as programs written for upstream
// Kompute are: it links kompute::kompute (or `pkg-config --libs kompute`) and
// nothing else, and makes Vulkan calls of its own through the C API and
// through Vulkan-Hpp's default (static) dispatch. Upstream's package brought
// the loader to its users; Kompute's does too (linked as needed, so that a
// program without Vulkan calls of its own, main.cpp, still links none).
#include <iostream>
#include <vector>

#include <kompute/Kompute.hpp>

int
main()
{
    try {
        // The C API, as a custom operation or an application's own Vulkan
        // code calls it.
        uint32_t version = 0;
        if (vkEnumerateInstanceVersion(&version) != VK_SUCCESS) {
            std::cerr << "vkEnumerateInstanceVersion failed\n";
            return 1;
        }
        // Vulkan-Hpp with its default dispatcher (static: the loader's
        // exports), bring-your-own-Vulkan style: a device of the program's,
        // handed to a Manager.
        vk::ApplicationInfo app("vulkan_caller", 1, "none", 1, VK_API_VERSION_1_1);
        vk::InstanceCreateInfo instanceInfo({}, &app);
        vk::Instance instance = vk::createInstance(instanceInfo);
        std::vector<vk::PhysicalDevice> devices = instance.enumeratePhysicalDevices();
        if (devices.empty()) {
            std::cerr << "no Vulkan device\n";
            return 1;
        }
        vk::PhysicalDevice physical = devices[0];
        uint32_t family = 0;
        auto families = physical.getQueueFamilyProperties();
        while (family < families.size() && !(families[family].queueFlags & vk::QueueFlagBits::eCompute)) {
            ++family;
        }
        float priority = 1.0f;
        vk::DeviceQueueCreateInfo queueInfo({}, family, 1, &priority);
        vk::DeviceCreateInfo deviceInfo({}, 1, &queueInfo);
        vk::Device device = physical.createDevice(deviceInfo);
        {
            kp::Manager mgr(std::make_shared<vk::Instance>(instance),
                            std::make_shared<vk::PhysicalDevice>(physical),
                            std::make_shared<vk::Device>(device));
            auto tensor = mgr.tensor({ 1.0f, 2.0f, 3.0f });
            mgr.sequence()->eval<kp::OpSyncDevice>({ tensor })->eval<kp::OpSyncLocal>({ tensor });
            if (tensor->vector() != std::vector<float>{ 1.0f, 2.0f, 3.0f }) {
                std::cerr << "the tensor came back changed\n";
                return 1;
            }
        }
        device.destroy();
        instance.destroy();
        std::cout << "vulkan_caller: Vulkan " << VK_API_VERSION_MAJOR(version) << "."
                  << VK_API_VERSION_MINOR(version) << " called directly, beside Kompute\n";
        return 0;
    } catch (const std::exception& error) {
        std::cerr << "vulkan_caller: " << error.what() << "\n";
        return 1;
    }
}
