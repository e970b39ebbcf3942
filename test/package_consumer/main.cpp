// Built against an installed Kompute only (CMake package or pkg-config):
// syncs a tensor to the device and back through a sequence and checks it.
#include <iostream>
#include <vector>

#include <kompute/Kompute.hpp>

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
        return 0;
    } catch (const std::exception& error) {
        std::cerr << "package_consumer: " << error.what() << "\n";
        return 1;
    }
}
