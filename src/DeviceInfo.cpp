// SPDX-License-Identifier: Apache-2.0
#include "kompute/DeviceInfo.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "internal/Capabilities.hpp"
#include "internal/DeviceDescription.hpp"
#include "internal/Environment.hpp"
#include "internal/FastPaths.hpp"
#include "internal/Instance.hpp"
#include "internal/ShaderCopy.hpp"
#include "internal/VulkanLoader.hpp"
#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using logger::format;

// --- JsonValue ------------------------------------------------------------------------

namespace {

[[noreturn]] void
wrongKind(const char* wanted)
{
    throw Error(std::string("JsonValue: the value is not ") + wanted);
}

void
writeString(std::string& out, const std::string& text)
{
    out += '"';
    for (unsigned char c : text) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
                    out += escaped;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

void
newline(std::string& out, int indent, int depth)
{
    if (indent > 0) {
        out += '\n';
        out.append(static_cast<size_t>(indent * depth), ' ');
    }
}

} // namespace

bool
JsonValue::asBool() const
{
    if (!isBool()) {
        wrongKind("a bool");
    }
    return std::get<bool>(mValue);
}

int64_t
JsonValue::asInt() const
{
    if (isInt()) {
        return std::get<int64_t>(mValue);
    }
    if (isUnsigned() && std::get<uint64_t>(mValue) <= static_cast<uint64_t>(INT64_MAX)) {
        return static_cast<int64_t>(std::get<uint64_t>(mValue));
    }
    wrongKind("an integer");
}

uint64_t
JsonValue::asUnsigned() const
{
    if (isUnsigned()) {
        return std::get<uint64_t>(mValue);
    }
    if (isInt() && std::get<int64_t>(mValue) >= 0) {
        return static_cast<uint64_t>(std::get<int64_t>(mValue));
    }
    wrongKind("a non-negative integer");
}

double
JsonValue::asDouble() const
{
    if (isDouble()) {
        return std::get<double>(mValue);
    }
    if (isInt()) {
        return static_cast<double>(std::get<int64_t>(mValue));
    }
    if (isUnsigned()) {
        return static_cast<double>(std::get<uint64_t>(mValue));
    }
    wrongKind("a number");
}

const std::string&
JsonValue::asString() const
{
    if (!isString()) {
        wrongKind("a string");
    }
    return std::get<std::string>(mValue);
}

const JsonValue::Array&
JsonValue::items() const
{
    if (!isArray()) {
        wrongKind("an array");
    }
    return std::get<Array>(mValue);
}

const JsonValue::Object&
JsonValue::members() const
{
    if (!isObject()) {
        wrongKind("an object");
    }
    return std::get<Object>(mValue);
}

JsonValue&
JsonValue::push(JsonValue value)
{
    if (!isArray()) {
        wrongKind("an array");
    }
    std::get<Array>(mValue).push_back(std::move(value));
    return *this;
}

JsonValue&
JsonValue::set(const std::string& key, JsonValue value)
{
    if (!isObject()) {
        wrongKind("an object");
    }
    auto& members = std::get<Object>(mValue);
    for (auto& member : members) {
        if (member.first == key) {
            member.second = std::move(value);
            return *this;
        }
    }
    members.emplace_back(key, std::move(value));
    return *this;
}

const JsonValue*
JsonValue::find(const std::string& key) const
{
    if (!isObject()) {
        return nullptr;
    }
    for (const auto& member : std::get<Object>(mValue)) {
        if (member.first == key) {
            return &member.second;
        }
    }
    return nullptr;
}

const JsonValue&
JsonValue::operator[](const std::string& key) const
{
    const JsonValue* value = find(key);
    if (value == nullptr) {
        throw Error("JsonValue: no member '" + key + "'");
    }
    return *value;
}

std::string
JsonValue::toJson(int indent) const
{
    std::string out;
    write(out, indent, 0);
    return out;
}

void
JsonValue::write(std::string& out, int indent, int depth) const
{
    if (isNull()) {
        out += "null";
    } else if (isBool()) {
        out += std::get<bool>(mValue) ? "true" : "false";
    } else if (isInt()) {
        out += std::to_string(std::get<int64_t>(mValue));
    } else if (isUnsigned()) {
        out += std::to_string(std::get<uint64_t>(mValue));
    } else if (isDouble()) {
        double value = std::get<double>(mValue);
        if (!std::isfinite(value)) {
            out += "null"; // JSON has no infinities
        } else {
            char text[32];
            std::snprintf(text, sizeof(text), "%.9g", value);
            out += text;
        }
    } else if (isString()) {
        writeString(out, std::get<std::string>(mValue));
    } else if (isArray()) {
        const auto& array = std::get<Array>(mValue);
        out += '[';
        for (size_t i = 0; i < array.size(); ++i) {
            out += i > 0 ? "," : "";
            newline(out, indent, depth + 1);
            array[i].write(out, indent, depth + 1);
        }
        if (!array.empty()) {
            newline(out, indent, depth);
        }
        out += ']';
    } else {
        const auto& object = std::get<Object>(mValue);
        out += '{';
        for (size_t i = 0; i < object.size(); ++i) {
            out += i > 0 ? "," : "";
            newline(out, indent, depth + 1);
            writeString(out, object[i].first);
            out += indent > 0 ? ": " : ":";
            object[i].second.write(out, indent, depth + 1);
        }
        if (!object.empty()) {
            newline(out, indent, depth);
        }
        out += '}';
    }
}

// --- Device descriptions ----------------------------------------------------------------

namespace internal {

std::string
versionText(uint32_t version)
{
    return format("{}.{}.{}",
                  VK_API_VERSION_MAJOR(version),
                  VK_API_VERSION_MINOR(version),
                  VK_API_VERSION_PATCH(version));
}

// Vendors encode driver versions their own way.
std::string
driverVersionText(uint32_t vendorID, uint32_t version)
{
    if (vendorID == 0x10DE) { // NVIDIA: 10.8.8.6 bits
        return format("{}.{}.{}.{}",
                      (version >> 22) & 0x3FF,
                      (version >> 14) & 0xFF,
                      (version >> 6) & 0xFF,
                      version & 0x3F);
    }
    return versionText(version);
}

namespace {

const char*
vendorName(uint32_t vendorID)
{
    switch (vendorID) {
        case 0x1002: return "AMD";
        case 0x1010: return "ImgTec";
        case 0x10DE: return "NVIDIA";
        case 0x13B5: return "Arm";
        case 0x5143: return "Qualcomm";
        case 0x8086: return "Intel";
        case 0x106B: return "Apple";
        case 0x10005: return "Mesa";
        default: return "unknown";
    }
}

const char*
deviceTypeName(vk::PhysicalDeviceType type)
{
    switch (type) {
        case vk::PhysicalDeviceType::eIntegratedGpu: return "integrated_gpu";
        case vk::PhysicalDeviceType::eDiscreteGpu: return "discrete_gpu";
        case vk::PhysicalDeviceType::eVirtualGpu: return "virtual_gpu";
        case vk::PhysicalDeviceType::eCpu: return "cpu";
        default: return "other";
    }
}

/** Names of the set bits of `flags`, from vk::to_string ("{ A | B }"),
 * in snake case: ["device_local", "host_visible"]. */
template<typename Flags>
JsonValue
flagNames(Flags flags)
{
    JsonValue names = JsonValue::array();
    std::string text = vk::to_string(flags);
    std::string word;
    auto flush = [&] {
        if (!word.empty()) {
            std::string snake;
            for (size_t i = 0; i < word.size(); ++i) {
                char c = word[i];
                bool upper = c >= 'A' && c <= 'Z';
                if (upper && i > 0 && !(word[i - 1] >= 'A' && word[i - 1] <= 'Z')) {
                    snake += '_';
                }
                snake += static_cast<char>(upper ? c - 'A' + 'a' : c);
            }
            names.push(snake);
            word.clear();
        }
    };
    for (char c : text) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            word += c;
        } else {
            flush();
        }
    }
    flush();
    return names;
}

JsonValue
triple(const uint32_t values[3])
{
    return JsonValue(JsonValue::Array{ values[0], values[1], values[2] });
}

JsonValue
shapes(const std::vector<CooperativeMatrixShape>& list)
{
    JsonValue array = JsonValue::array();
    for (const auto& s : list) {
        JsonValue shape = JsonValue::object();
        shape.set("m", s.m).set("n", s.n).set("k", s.k);
        shape.set("a", toString(s.a)).set("b", toString(s.b)).set("c", toString(s.c));
        shape.set("result", toString(s.result));
        shape.set("saturating_accumulation", s.saturatingAccumulation);
        shape.set("scope", toString(s.scope));
        if (s.workgroupInvocations != 0) {
            shape.set("workgroup_invocations", s.workgroupInvocations);
        }
        array.push(std::move(shape));
    }
    return array;
}

} // namespace

JsonValue
describeDevice(vk::PhysicalDevice physicalDevice,
               uint32_t index,
               const Capabilities& capabilities,
               bool shaderCopies)
{
    const vk::PhysicalDeviceProperties& properties = capabilities.properties();
    const vk::PhysicalDeviceLimits& limits = properties.limits;
    const DeviceCapabilities& caps = capabilities.view();
    vk::PhysicalDeviceFeatures core = physicalDevice.getFeatures();

    JsonValue device = JsonValue::object();
    device.set("index", index);
    // Upstream's keys of get_device_properties().
    device.set("device_name", caps.deviceName);
    device.set("max_work_group_count", triple(limits.maxComputeWorkGroupCount.data()));
    device.set("max_work_group_invocations", limits.maxComputeWorkGroupInvocations);
    device.set("max_work_group_size", triple(limits.maxComputeWorkGroupSize.data()));
    device.set("max_push_constants_size", limits.maxPushConstantsSize);
    device.set("timestamps_supported", static_cast<bool>(limits.timestampComputeAndGraphics));
    // The device and its driver.
    device.set("device_type", deviceTypeName(properties.deviceType));
    device.set("vendor_id", properties.vendorID);
    device.set("vendor", vendorName(properties.vendorID));
    device.set("device_id", properties.deviceID);
    device.set("api_version", versionText(properties.apiVersion));
    device.set("kompute_api_version",
               format("{}.{}", VK_API_VERSION_MAJOR(caps.apiVersion), VK_API_VERSION_MINOR(caps.apiVersion)));
    device.set("driver_version", properties.driverVersion);
    device.set("driver_version_text", driverVersionText(properties.vendorID, properties.driverVersion));
    device.set("driver_name", caps.driverName);
    device.set("driver_info", caps.driverInfo);
    device.set("timestamp_period", static_cast<double>(limits.timestampPeriod));
    device.set("max_storage_buffer_range", limits.maxStorageBufferRange);
    device.set("max_compute_shared_memory_size", limits.maxComputeSharedMemorySize);
    device.set("min_storage_buffer_offset_alignment",
               static_cast<uint64_t>(limits.minStorageBufferOffsetAlignment));
    device.set("shader_float64", static_cast<bool>(core.shaderFloat64));
    device.set("shader_int64", static_cast<bool>(core.shaderInt64));
    device.set("shader_int16", static_cast<bool>(core.shaderInt16));

    JsonValue families = JsonValue::array();
    auto familyProperties = physicalDevice.getQueueFamilyProperties();
    for (uint32_t i = 0; i < familyProperties.size(); ++i) {
        JsonValue family = JsonValue::object();
        family.set("index", i);
        family.set("flags", flagNames(familyProperties[i].queueFlags));
        family.set("queue_count", familyProperties[i].queueCount);
        family.set("timestamp_valid_bits", familyProperties[i].timestampValidBits);
        families.push(std::move(family));
    }
    device.set("queue_families", std::move(families));

    vk::PhysicalDeviceMemoryProperties memory = physicalDevice.getMemoryProperties();
    JsonValue heaps = JsonValue::array();
    for (uint32_t i = 0; i < memory.memoryHeapCount; ++i) {
        JsonValue heap = JsonValue::object();
        heap.set("index", i);
        heap.set("size", static_cast<uint64_t>(memory.memoryHeaps[i].size));
        heap.set("flags", flagNames(memory.memoryHeaps[i].flags));
        heaps.push(std::move(heap));
    }
    device.set("memory_heaps", std::move(heaps));
    JsonValue types = JsonValue::array();
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
        JsonValue type = JsonValue::object();
        type.set("index", i);
        type.set("heap_index", memory.memoryTypes[i].heapIndex);
        type.set("flags", flagNames(memory.memoryTypes[i].propertyFlags));
        types.push(std::move(type));
    }
    device.set("memory_types", std::move(types));

    JsonValue limitValues = JsonValue::object();
    limitValues.set("max_compute_work_group_count", triple(limits.maxComputeWorkGroupCount.data()));
    limitValues.set("max_compute_work_group_size", triple(limits.maxComputeWorkGroupSize.data()));
    limitValues.set("max_compute_work_group_invocations", limits.maxComputeWorkGroupInvocations);
    limitValues.set("max_compute_shared_memory_size", limits.maxComputeSharedMemorySize);
    limitValues.set("max_push_constants_size", limits.maxPushConstantsSize);
    limitValues.set("max_storage_buffer_range", limits.maxStorageBufferRange);
    limitValues.set("max_memory_allocation_size", caps.maxMemoryAllocationSize);
    limitValues.set("max_memory_allocation_count", limits.maxMemoryAllocationCount);
    limitValues.set("max_buffer_size", caps.maxBufferSize);
    limitValues.set("max_bound_descriptor_sets", limits.maxBoundDescriptorSets);
    limitValues.set("max_per_stage_descriptor_storage_buffers", limits.maxPerStageDescriptorStorageBuffers);
    limitValues.set("max_per_stage_descriptor_storage_images", limits.maxPerStageDescriptorStorageImages);
    limitValues.set("max_per_stage_resources", limits.maxPerStageResources);
    limitValues.set("max_descriptor_set_storage_buffers", limits.maxDescriptorSetStorageBuffers);
    limitValues.set("max_descriptor_set_storage_images", limits.maxDescriptorSetStorageImages);
    limitValues.set("min_storage_buffer_offset_alignment",
                    static_cast<uint64_t>(limits.minStorageBufferOffsetAlignment));
    limitValues.set("non_coherent_atom_size", static_cast<uint64_t>(limits.nonCoherentAtomSize));
    limitValues.set("timestamp_period", static_cast<double>(limits.timestampPeriod));
    device.set("limits", std::move(limitValues));

    const auto& sg = caps.subgroup;
    JsonValue subgroup = JsonValue::object();
    subgroup.set("size", sg.size).set("min_size", sg.minSize).set("max_size", sg.maxSize);
    subgroup.set("max_compute_workgroup_subgroups", sg.maxComputeWorkgroupSubgroups);
    subgroup.set("operations", flagNames(sg.operations));
    subgroup.set("stages", flagNames(sg.stages));
    subgroup.set("extended_types", sg.extendedTypes);
    subgroup.set("size_control", sg.sizeControl);
    subgroup.set("compute_full_subgroups", sg.computeFullSubgroups);
    subgroup.set("required_size_stages", flagNames(sg.requiredSizeStages));
    device.set("subgroup", std::move(subgroup));

    // What shaders may use (enabled), in groups.
    JsonValue arithmetic = JsonValue::object();
    arithmetic.set("float16", caps.float16).set("float64", caps.float64).set("int8", caps.int8);
    arithmetic.set("int16", caps.int16).set("int64", caps.int64).set("bfloat16", caps.bfloat16);
    arithmetic.set("bfloat16_dot_product", caps.bfloat16DotProduct);
    device.set("arithmetic", std::move(arithmetic));
    JsonValue storage = JsonValue::object();
    storage.set("storage_buffer_8bit", caps.storageBuffer8Bit);
    storage.set("storage_buffer_16bit", caps.storageBuffer16Bit);
    storage.set("push_constant_8bit", caps.storagePushConstant8);
    storage.set("push_constant_16bit", caps.storagePushConstant16);
    storage.set("scalar_block_layout", caps.scalarBlockLayout);
    storage.set("workgroup_memory_explicit_layout", caps.workgroupMemoryExplicitLayout);
    storage.set("buffer_device_address", caps.bufferDeviceAddress);
    storage.set("variable_pointers", caps.variablePointers);
    device.set("storage", std::move(storage));
    JsonValue atomics = JsonValue::object();
    atomics.set("int64", caps.int64Atomics);
    atomics.set("float16_add", caps.float16AtomicAdd);
    atomics.set("float32_add", caps.float32AtomicAdd).set("float32_min_max", caps.float32AtomicMinMax);
    atomics.set("float64_add", caps.float64AtomicAdd).set("float64_min_max", caps.float64AtomicMinMax);
    device.set("atomics", std::move(atomics));
    const auto& dot = caps.integerDotProduct;
    JsonValue integerDot = JsonValue::object();
    integerDot.set("supported", dot.supported);
    integerDot.set("accelerated_8bit", dot.accelerated8Bit);
    integerDot.set("accelerated_8bit_mixed", dot.accelerated8BitMixed);
    integerDot.set("accelerated_4x8bit_packed", dot.accelerated4x8BitPacked);
    integerDot.set("accelerated_4x8bit_packed_mixed", dot.accelerated4x8BitPackedMixed);
    integerDot.set("accelerated_16bit", dot.accelerated16Bit);
    integerDot.set("accelerated_32bit", dot.accelerated32Bit);
    integerDot.set("accelerated_accumulating_4x8bit_packed", dot.acceleratedAccumulating4x8BitPacked);
    device.set("integer_dot_product", std::move(integerDot));
    const auto& coop = caps.cooperativeMatrix;
    JsonValue cooperative = JsonValue::object();
    cooperative.set("khr", coop.khr);
    cooperative.set("khr_shapes", shapes(coop.khrShapes));
    cooperative.set("nv", coop.nv);
    cooperative.set("nv_shapes", shapes(coop.nvShapes));
    cooperative.set("bfloat16", coop.bfloat16);
    JsonValue nv2 = JsonValue::object();
    nv2.set("workgroup_scope", coop.nv2.workgroupScope);
    nv2.set("flexible_dimensions", coop.nv2.flexibleDimensions);
    nv2.set("reductions", coop.nv2.reductions);
    nv2.set("conversions", coop.nv2.conversions);
    nv2.set("per_element_operations", coop.nv2.perElementOperations);
    nv2.set("tensor_addressing", coop.nv2.tensorAddressing);
    nv2.set("block_loads", coop.nv2.blockLoads);
    nv2.set("workgroup_scope_max_workgroup_size", coop.nv2.workgroupScopeMaxWorkgroupSize);
    nv2.set("flexible_dimensions_max_dimension", coop.nv2.flexibleDimensionsMaxDimension);
    nv2.set("workgroup_scope_reserved_shared_memory", coop.nv2.workgroupScopeReservedSharedMemory);
    nv2.set("flexible_shapes", shapes(coop.nv2.flexibleShapes));
    cooperative.set("nv2", std::move(nv2));
    device.set("cooperative_matrix", std::move(cooperative));
    const auto& fc = caps.floatControls;
    JsonValue floatControls = JsonValue::object();
    const std::pair<const char*, const bool*> controls[] = {
        { "denorm_preserve", fc.denormPreserve },
        { "denorm_flush_to_zero", fc.denormFlushToZero },
        { "signed_zero_inf_nan_preserve", fc.signedZeroInfNanPreserve },
        { "rounding_mode_rte", fc.roundingModeRTE },
        { "rounding_mode_rtz", fc.roundingModeRTZ },
    };
    for (const auto& [name, widths] : controls) {
        floatControls.set(name, JsonValue(JsonValue::Array{ widths[0], widths[1], widths[2] }));
    }
    device.set("float_controls", std::move(floatControls));
    device.set("timeline_semaphore", caps.timelineSemaphore);
    device.set("vulkan_memory_model", caps.vulkanMemoryModel);
    device.set("shader_sm_count", caps.shaderSMCount);
    device.set("shader_warps_per_sm", caps.shaderWarpsPerSM);

    // Every row of the table.
    JsonValue features = JsonValue::object();
    for (const auto& row : caps.features) {
        JsonValue feature = JsonValue::object();
        feature.set("supported", row.supported);
        feature.set("enabled", row.enabled);
        feature.set("vulkan", row.vulkanName);
        feature.set("extension", row.extension);
        feature.set("disable", row.group);
        features.set(row.name, std::move(feature));
    }
    device.set("features", std::move(features));
    JsonValue extensions = JsonValue::array();
    for (const auto& name : caps.enabledExtensions) {
        extensions.push(name);
    }
    device.set("enabled_extensions", std::move(extensions));
    JsonValue disabled = JsonValue::array();
    for (const auto& name : caps.disabledGroups) {
        disabled.push(name);
    }
    device.set("disabled", std::move(disabled));

    device.set("fast_paths", fastPaths(caps, limits, shaderCopies));
    return device;
}

} // namespace internal

JsonValue
describeDevice(uint32_t physicalDeviceIndex)
{
    internal::SharedInstance instance = internal::sharedInstance();
    auto devices = internal::physicalDevices(instance.instance);
    if (physicalDeviceIndex >= devices.size()) {
        throw Error(format("Device index {} is out of range: {} Vulkan device(s) found",
                           physicalDeviceIndex,
                           devices.size()));
    }
    vk::PhysicalDevice physicalDevice = devices[physicalDeviceIndex];
    vk::PhysicalDeviceProperties properties = physicalDevice.getProperties();
    // As a default Manager would set it up.
    internal::Capabilities capabilities(
      instance.instance, physicalDevice, std::min(instance.apiVersion, properties.apiVersion));
    capabilities.enableDefaults();
    capabilities.applyDisableList(std::getenv("KOMPUTE_ENV_DISABLE"));
    bool shaderCopies =
      internal::environmentFlag("KOMPUTE_ENV_SHADER_COPY", internal::shaderCopiesByDefault(properties));
    return internal::describeDevice(physicalDevice, physicalDeviceIndex, capabilities, shaderCopies);
}

JsonValue
describeDevices()
{
    internal::SharedInstance instance = internal::sharedInstance();
    JsonValue system = JsonValue::object();
    system.set("kompute_version", KOMPUTE_VERSION_STRING);
    uint32_t loaderVersion = VK_API_VERSION_1_0;
    // Null in a Vulkan 1.0 loader.
    PFN_vkEnumerateInstanceVersion enumerateVersion =
      VULKAN_HPP_DEFAULT_DISPATCHER.vkEnumerateInstanceVersion;
    if (enumerateVersion != nullptr) {
        enumerateVersion(&loaderVersion);
    }
    system.set("vulkan_loader_version", internal::versionText(loaderVersion));
    // The file Kompute opened it from (see KOMPUTE_ENV_VULKAN_LOADER).
    system.set("vulkan_loader_library", internal::vulkanLoaderPath());
    system.set("vulkan_instance_version", internal::versionText(instance.apiVersion));
    JsonValue devices = JsonValue::array();
    size_t count = internal::physicalDevices(instance.instance).size();
    for (uint32_t i = 0; i < count; ++i) {
        devices.push(describeDevice(i));
    }
    system.set("devices", std::move(devices));
    return system;
}

} // namespace kp
