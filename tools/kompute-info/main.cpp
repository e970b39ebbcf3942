// SPDX-License-Identifier: Apache-2.0
// kompute-info: every Vulkan device as Kompute sees it (name, driver, queue
// families, memory, compute limits, the capability table, cooperative-
// matrix shapes, fast paths), as a readable report or as JSON.
//
//     kompute-info [--json] [--device N]
//
// The data is kp::describeDevices(), the same that the Python module's
// Manager.get_device_properties() returns for a Manager's device.
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include <kompute/Kompute.hpp>

namespace {

using kp::JsonValue;

const char* kUsage = "usage: kompute-info [--json] [--device N]\n"
                     "  --json       print JSON (for scripts) instead of the readable report\n"
                     "  --device N   only device N (see the indices of the full report)\n"
                     "Environment: KOMPUTE_ENV_DISABLE turns capabilities off as for a Manager.\n";

std::string
joined(const JsonValue& array, const char* separator = " ")
{
    std::string text;
    for (const auto& item : array.items()) {
        text += (text.empty() ? "" : separator) + item.asString();
    }
    return text.empty() ? "-" : text;
}

std::string
bytes(uint64_t value)
{
    std::ostringstream text;
    const char* units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
    double scaled = static_cast<double>(value);
    int unit = 0;
    while (scaled >= 1024.0 && unit < 4) {
        scaled /= 1024.0;
        ++unit;
    }
    if (unit == 0) {
        text << value << " bytes";
    } else {
        text << std::fixed << std::setprecision(2) << scaled << " " << units[unit];
    }
    return text.str();
}

std::string
triple(const JsonValue& values, const char* separator = " x ")
{
    const auto& v = values.items();
    return std::to_string(v.at(0).asUnsigned()) + separator + std::to_string(v.at(1).asUnsigned()) +
           separator + std::to_string(v.at(2).asUnsigned());
}

const char*
yesNo(const JsonValue& value)
{
    return value.asBool() ? "yes" : "no";
}

void
row(std::ostream& out, const std::string& name, const std::string& value)
{
    const size_t column = 38;
    out << "    " << name << std::string(name.size() + 2 > column ? 2 : column - name.size(), ' ')
        << value << "\n";
}

void
printShapes(std::ostream& out, const char* title, const JsonValue& shapes, bool granularity = false)
{
    out << "    " << title << ": " << (shapes.items().empty() ? "none" : "") << "\n";
    for (const auto& s : shapes.items()) {
        out << "      " << (granularity ? "multiples of " : "") << s["m"].asUnsigned() << "x"
            << s["n"].asUnsigned() << "x" << s["k"].asUnsigned() << "  A " << s["a"].asString()
            << ", B " << s["b"].asString() << ", C " << s["c"].asString() << " -> "
            << s["result"].asString() << ", " << s["scope"].asString() << " scope"
            << (s["saturating_accumulation"].asBool() ? ", saturating" : "");
        if (const JsonValue* invocations = s.find("workgroup_invocations")) {
            out << ", " << invocations->asUnsigned() << " invocations";
        }
        out << "\n";
    }
}

void
printDevice(std::ostream& out, const JsonValue& d)
{
    out << "Device " << d["index"].asUnsigned() << ": " << d["device_name"].asString() << "\n";
    out << "  " << d["device_type"].asString() << ", vendor " << d["vendor"].asString() << " (0x"
        << std::hex << d["vendor_id"].asUnsigned() << "), device 0x" << d["device_id"].asUnsigned()
        << std::dec << "\n";
    out << "  Vulkan " << d["api_version"].asString() << " (Kompute uses "
        << d["kompute_api_version"].asString() << "), driver "
        << (d["driver_name"].asString().empty() ? "" : d["driver_name"].asString() + " ")
        << d["driver_version_text"].asString();
    if (!d["driver_info"].asString().empty()) {
        out << " (" << d["driver_info"].asString() << ")";
    }
    out << "\n\n";

    out << "  Queue families\n";
    for (const auto& f : d["queue_families"].items()) {
        row(out,
            "family " + std::to_string(f["index"].asUnsigned()),
            std::to_string(f["queue_count"].asUnsigned()) + " queue(s), " +
              std::to_string(f["timestamp_valid_bits"].asUnsigned()) + " timestamp bits, " +
              joined(f["flags"]));
    }
    out << "\n  Memory\n";
    for (const auto& h : d["memory_heaps"].items()) {
        row(out, "heap " + std::to_string(h["index"].asUnsigned()),
            bytes(h["size"].asUnsigned()) + ", " + joined(h["flags"]));
    }
    for (const auto& t : d["memory_types"].items()) {
        row(out, "type " + std::to_string(t["index"].asUnsigned()),
            "heap " + std::to_string(t["heap_index"].asUnsigned()) + ", " + joined(t["flags"]));
    }

    const JsonValue& l = d["limits"];
    out << "\n  Compute limits\n";
    row(out, "workgroup count", triple(l["max_compute_work_group_count"]));
    row(out, "workgroup size", triple(l["max_compute_work_group_size"]) + ", " +
                                 std::to_string(l["max_compute_work_group_invocations"].asUnsigned()) +
                                 " invocations");
    row(out, "shared memory", bytes(l["max_compute_shared_memory_size"].asUnsigned()));
    row(out, "push constants", bytes(l["max_push_constants_size"].asUnsigned()));
    row(out, "storage buffer range", bytes(l["max_storage_buffer_range"].asUnsigned()));
    row(out, "memory allocation", bytes(l["max_memory_allocation_size"].asUnsigned()) + ", " +
                                    std::to_string(l["max_memory_allocation_count"].asUnsigned()) +
                                    " allocations");
    row(out, "storage buffers / images per stage",
        std::to_string(l["max_per_stage_descriptor_storage_buffers"].asUnsigned()) + " / " +
          std::to_string(l["max_per_stage_descriptor_storage_images"].asUnsigned()));
    row(out, "timestamp period", std::to_string(l["timestamp_period"].asDouble()) + " ns");
    const JsonValue& sg = d["subgroup"];
    row(out, "subgroup size", std::to_string(sg["size"].asUnsigned()) + " (" +
                                std::to_string(sg["min_size"].asUnsigned()) + " to " +
                                std::to_string(sg["max_size"].asUnsigned()) + ")" +
                                (sg["size_control"].asBool() ? ", size control" : ""));
    row(out, "subgroup operations", joined(sg["operations"]));

    out << "\n  Capabilities (what shaders may use)\n";
    const JsonValue& a = d["arithmetic"];
    row(out, "float16 / float64 / bfloat16",
        std::string(yesNo(a["float16"])) + " / " + yesNo(a["float64"]) + " / " + yesNo(a["bfloat16"]));
    row(out, "int8 / int16 / int64",
        std::string(yesNo(a["int8"])) + " / " + yesNo(a["int16"]) + " / " + yesNo(a["int64"]));
    const JsonValue& s = d["storage"];
    row(out, "8-bit / 16-bit storage buffers",
        std::string(yesNo(s["storage_buffer_8bit"])) + " / " + yesNo(s["storage_buffer_16bit"]));
    const JsonValue& at = d["atomics"];
    row(out, "int64 atomics", yesNo(at["int64"]));
    row(out, "float atomics (add: 16/32/64, min-max: 32/64)",
        std::string(yesNo(at["float16_add"])) + "/" + yesNo(at["float32_add"]) + "/" +
          yesNo(at["float64_add"]) + ", " + yesNo(at["float32_min_max"]) + "/" +
          yesNo(at["float64_min_max"]));
    const JsonValue& dot = d["integer_dot_product"];
    row(out, "integer dot product",
        std::string(yesNo(dot["supported"])) + (dot["accelerated_4x8bit_packed"].asBool()
                                                  ? ", 4x8-bit packed accelerated"
                                                  : ""));
    row(out, "timeline semaphores", yesNo(d["timeline_semaphore"]));
    row(out, "buffer device address", yesNo(s["buffer_device_address"]));
    row(out, "Vulkan memory model", yesNo(d["vulkan_memory_model"]));

    const JsonValue& c = d["cooperative_matrix"];
    out << "\n  Cooperative matrices\n";
    row(out, "VK_KHR_cooperative_matrix", yesNo(c["khr"]));
    if (c["khr"].asBool()) {
        printShapes(out, "KHR shapes", c["khr_shapes"]);
    }
    row(out, "VK_NV_cooperative_matrix", yesNo(c["nv"]));
    if (c["nv"].asBool()) {
        printShapes(out, "NV shapes", c["nv_shapes"]);
    }
    const JsonValue& nv2 = c["nv2"];
    row(out, "VK_NV_cooperative_matrix2", nv2["flexible_dimensions"].asBool() ? "flexible dimensions" : "no");
    if (nv2["flexible_dimensions"].asBool()) {
        printShapes(out, "flexible shapes", nv2["flexible_shapes"], true);
    }

    out << "\n  Capability table (supported / enabled, KOMPUTE_ENV_DISABLE name)\n";
    for (const auto& [name, f] : d["features"].members()) {
        std::string state = std::string(f["supported"].asBool() ? "supported" : "-") +
                            (f["enabled"].asBool() ? ", enabled" : "");
        std::string extra = "[" + f["disable"].asString() + "]";
        if (!f["extension"].asString().empty()) {
            extra += " " + f["extension"].asString();
        }
        out << "    " << std::left << std::setw(48) << name << std::setw(22) << state << extra << "\n";
    }
    if (!d["disabled"].items().empty()) {
        out << "    turned off by KOMPUTE_ENV_DISABLE: " << joined(d["disabled"], ", ") << "\n";
    }

    out << "\n  Fast paths\n";
    for (const auto& [name, path] : d["fast_paths"].members()) {
        row(out, name, path.isString() ? path.asString() : path.toJson(0));
    }
    out << "\n";
}

} // namespace

int
main(int argc, char** argv)
{
    bool json = false;
    long device = -1;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--json") {
            json = true;
        } else if (arg == "--device" && i + 1 < argc) {
            char* end = nullptr;
            device = std::strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || device < 0) {
                std::cerr << "kompute-info: --device needs a device index, not '" << argv[i] << "'\n"
                          << kUsage;
                return 2;
            }
        } else if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return 0;
        } else {
            std::cerr << "kompute-info: unknown argument '" << arg << "'\n" << kUsage;
            return 2;
        }
    }
    try {
        JsonValue system = kp::describeDevices();
        if (device >= 0) {
            const auto& devices = system["devices"].items();
            if (static_cast<size_t>(device) >= devices.size()) {
                std::cerr << "kompute-info: there is no device " << device << " ("
                          << devices.size() << " Vulkan device(s) found)\n";
                return 1;
            }
            JsonValue only = devices[static_cast<size_t>(device)];
            system.set("devices", JsonValue(JsonValue::Array{ std::move(only) }));
        }
        if (json) {
            std::cout << system.toJson(2) << "\n";
            return 0;
        }
        std::cout << "Kompute " << system["kompute_version"].asString() << ", Vulkan loader "
                  << system["vulkan_loader_version"].asString() << "\n\n";
        if (system["devices"].items().empty()) {
            std::cout << "No Vulkan device was found: install a Vulkan driver (on a machine "
                         "without a GPU, Mesa's lavapipe from mesa-vulkan-drivers).\n";
            return 1;
        }
        for (const auto& d : system["devices"].items()) {
            printDevice(std::cout, d);
        }
    } catch (const std::exception& error) {
        std::cerr << "kompute-info: " << error.what() << "\n";
        return 1;
    }
    return 0;
}
