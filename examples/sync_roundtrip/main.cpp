// Syncs data to the device, copies it there, and reads it back: the
// smallest complete Kompute program.
#include <iostream>

#include <kompute/Kompute.hpp>

int
main()
{
    kp::Manager mgr;
    std::cout << "Device: " << mgr.getDeviceProperties().deviceName.data() << "\n";

    auto input = mgr.tensor({ 1.5f, 2.5f, 3.5f, 4.5f });
    auto output = mgr.tensor({ 0.0f, 0.0f, 0.0f, 0.0f });

    mgr.sequence()
      ->record<kp::OpSyncDevice>({ input, output })
      ->record<kp::OpCopy>({ input, output })
      ->record<kp::OpSyncLocal>({ output })
      ->eval();

    std::cout << "Output:";
    for (float value : output->vector()) {
        std::cout << " " << value;
    }
    std::cout << "\n";
    return output->vector() == input->vector() ? 0 : 1;
}
