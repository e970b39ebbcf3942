// SPDX-License-Identifier: Apache-2.0
// Descriptions of Vulkan devices: what kompute-info prints and what
// the Python module's Manager.get_device_properties() returns, made by one
// function so that both always carry the same fields.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kp {

/** A JSON value: null, bool, integer, number, string, array or object
 * (whose members keep the order they were set in). What describeDevice()
 * returns; a plain value type with no JSON parser (toJson() writes it). */
class JsonValue
{
  public:
    /** The elements of an array. */
    using Array = std::vector<JsonValue>;
    /** The members of an object, in the order they were set. */
    using Object = std::vector<std::pair<std::string, JsonValue>>;

    /** Null. */
    JsonValue() = default;
    /** A value of the argument's kind: signed integers are held as int64,
     * unsigned ones as uint64, text as a string. */
    ///@{
    JsonValue(bool value) : mValue(value) {}
    JsonValue(int value) : mValue(static_cast<int64_t>(value)) {}
    JsonValue(int64_t value) : mValue(value) {}
    JsonValue(uint32_t value) : mValue(static_cast<uint64_t>(value)) {}
    JsonValue(uint64_t value) : mValue(value) {}
    JsonValue(double value) : mValue(value) {}
    JsonValue(const char* value) : mValue(std::string(value)) {}
    JsonValue(std::string value) : mValue(std::move(value)) {}
    JsonValue(Array value) : mValue(std::move(value)) {}
    JsonValue(Object value) : mValue(std::move(value)) {}
    ///@}

    /** An empty array. */
    static JsonValue array() { return JsonValue(Array{}); }
    /** An empty object. */
    static JsonValue object() { return JsonValue(Object{}); }

    /** Whether the value is of that kind (isInt: a signed integer,
     * isUnsigned: an unsigned one, isDouble: a floating-point number). */
    ///@{
    bool isNull() const { return std::holds_alternative<std::monostate>(mValue); }
    bool isBool() const { return std::holds_alternative<bool>(mValue); }
    bool isInt() const { return std::holds_alternative<int64_t>(mValue); }
    bool isUnsigned() const { return std::holds_alternative<uint64_t>(mValue); }
    bool isDouble() const { return std::holds_alternative<double>(mValue); }
    bool isString() const { return std::holds_alternative<std::string>(mValue); }
    bool isArray() const { return std::holds_alternative<Array>(mValue); }
    bool isObject() const { return std::holds_alternative<Object>(mValue); }
    ///@}

    /** The value; throws kp::Error if it holds another kind. */
    bool asBool() const;
    /** The value; also for unsigned values that fit; kp::Error otherwise. */
    int64_t asInt() const;
    /** The value; also for non-negative signed ones; kp::Error otherwise. */
    uint64_t asUnsigned() const;
    /** The value; also for integers; kp::Error otherwise. */
    double asDouble() const;
    /** The string; throws kp::Error for another kind. */
    const std::string& asString() const;
    /** The elements of an array; throws kp::Error for another kind. */
    const Array& items() const;
    /** The members of an object; throws kp::Error for another kind. */
    const Object& members() const;

    /** Appends to an array. */
    JsonValue& push(JsonValue value);
    /** Sets an object member (replacing one of the same name). */
    JsonValue& set(const std::string& key, JsonValue value);
    /** The member `key` of an object, or null if there is none. */
    const JsonValue* find(const std::string& key) const;
    /** The member `key`; throws kp::Error if there is none. */
    const JsonValue& operator[](const std::string& key) const;

    /** JSON text; `indent` spaces per level (0: on one line). */
    std::string toJson(int indent = 2) const;

  private:
    void write(std::string& out, int indent, int depth) const;

    std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Array, Object> mValue;
};

/**
 * Describes Vulkan device `physicalDeviceIndex` as a Manager would set it
 * up: its name, vendor, driver, API version and type; queue families;
 * memory heaps and types; the limits that matter for compute; subgroup
 * properties; every row of the capability table (supported, and enabled by
 * a default Manager under the current KOMPUTE_ENV_DISABLE); the typed
 * capabilities (kp::DeviceCapabilities) with the cooperative-matrix shapes;
 * and which of Kompute's fast paths it gets. The keys upstream's Python
 * get_device_properties() has (device_name, max_work_group_count, ...) are
 * among the top-level ones. Creates no device.
 */
JsonValue
describeDevice(uint32_t physicalDeviceIndex);

/** Every Vulkan device: {"kompute_version", "vulkan_loader_version",
 * "devices": [describeDevice(0), ...]} (what `kompute-info --json` prints). */
JsonValue
describeDevices();

} // namespace kp
