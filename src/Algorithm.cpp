// SPDX-License-Identifier: Apache-2.0
#include "kompute/Algorithm.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "internal/Batches.hpp"
#include "internal/Capabilities.hpp"
#include "internal/Check.hpp"
#include "internal/Device.hpp"
#include "internal/Pipelines.hpp"
#include "internal/SpirvReflection.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

using internal::check;
using logger::format;

namespace internal {

/** The Vulkan objects of a built algorithm: its pipeline (shared with
 * algorithms of the same SPIR-V, constants and layout) and its own
 * descriptor set. */
struct AlgorithmObjects
{
    std::shared_ptr<const SharedPipeline> pipeline;
    DescriptorSetOwner descriptorSet;
};

} // namespace internal

namespace {

size_t
paddedPushSize(size_t bytes)
{
    return (bytes + 3) / 4 * 4;
}

const char*
memoryKindName(Memory& memory)
{
    return memory.getDescriptorType() == vk::DescriptorType::eStorageImage ? "image" : "tensor";
}

// --- Checks made before anything reaches the driver -----------------------

void
checkBindings(const internal::ReflectedModule& module,
              const std::vector<std::shared_ptr<Memory>>& memObjects,
              const vk::PhysicalDeviceLimits& limits)
{
    std::vector<const internal::ReflectedBinding*> declared(memObjects.size(), nullptr);
    for (const auto& binding : module.bindings) {
        if (binding.set != 0) {
            throw Error(format("The shader declares a resource in descriptor set {} (binding {}); "
                               "Kompute binds memory objects in set 0 only",
                               binding.set,
                               binding.binding));
        }
        if (binding.binding >= memObjects.size()) {
            throw Error(format("The shader declares binding {}, but only {} memory object(s) were "
                               "given (bindings 0..{}): give one object per binding",
                               binding.binding,
                               memObjects.size(),
                               memObjects.empty() ? 0 : memObjects.size() - 1));
        }
        if (binding.count != 1) {
            throw Error(format("Binding {} is an array of {} resources; Kompute binds one memory "
                               "object per binding",
                               binding.binding,
                               binding.count));
        }
        declared[binding.binding] = &binding;
    }
    for (size_t i = 0; i < memObjects.size(); ++i) {
        const auto* binding = declared[i];
        Memory& memory = *memObjects[i];
        if (binding == nullptr) {
            throw Error(format("Memory object {} (a {}) has no binding {} in the shader: the "
                               "shader declares {} binding(s); give exactly one object per "
                               "binding",
                               i,
                               memoryKindName(memory),
                               i,
                               module.bindings.size()));
        }
        bool wantsImage = binding->kind == internal::BindingKind::eStorageImage;
        bool wantsBuffer = binding->kind == internal::BindingKind::eStorageBuffer;
        if (!wantsImage && !wantsBuffer) {
            throw Error(format("Binding {} is a {}; Kompute binds tensors as storage buffers "
                               "('buffer' blocks) and images as storage images ('image2D' "
                               "etc. with a format qualifier)",
                               i,
                               internal::bindingKindName(binding->kind)));
        }
        bool isImage = memory.getDescriptorType() == vk::DescriptorType::eStorageImage;
        if (wantsImage != isImage) {
            throw Error(format("Binding {} is a {} in the shader, but memory object {} is a {}",
                               i,
                               internal::bindingKindName(binding->kind),
                               i,
                               memoryKindName(memory)));
        }
        if (!isImage && memory.memorySize() > limits.maxStorageBufferRange) {
            throw Error(format("Binding {}: the tensor holds {} bytes, more than the device's "
                               "maxStorageBufferRange of {} bytes",
                               i,
                               memory.memorySize(),
                               limits.maxStorageBufferRange));
        }
    }
}

void
checkPushConstants(const ConstantBytes& given,
                   uint32_t declared,
                   bool shaderHasBlock,
                   const vk::PhysicalDeviceLimits& limits)
{
    if (given.bytes.size() > limits.maxPushConstantsSize) {
        throw Error(format("{} bytes of push constants were given, more than the device's "
                           "maxPushConstantsSize of {} bytes",
                           given.bytes.size(),
                           limits.maxPushConstantsSize));
    }
    if (!shaderHasBlock) {
        if (!given.empty()) {
            throw Error(format("{} bytes of push constants were given, but the shader declares "
                               "no push-constant block",
                               given.bytes.size()));
        }
        return;
    }
    if (given.bytes.size() != declared) {
        throw Error(format("The shader's push-constant block is {} bytes, but {} bytes were given "
                           "({} value(s) of {}): give values that fill the block exactly",
                           declared,
                           given.bytes.size(),
                           given.count(),
                           given.typeName()));
    }
}

bool
sameScalarType(const internal::ScalarType& declared, const ConstantBytes& given)
{
    using Kind = internal::ScalarType::Kind;
    uint32_t givenBits = given.elementSize * 8;
    switch (declared.kind) {
        case Kind::eBool: return given.kind == ConstantBytes::Kind::eBool;
        case Kind::eInt: return given.kind == ConstantBytes::Kind::eInt && givenBits == declared.width;
        case Kind::eUnsignedInt:
            return given.kind == ConstantBytes::Kind::eUnsignedInt && givenBits == declared.width;
        case Kind::eFloat: return given.kind == ConstantBytes::Kind::eFloat && givenBits == declared.width;
        case Kind::eOther: return false;
    }
    return false;
}

void
checkSpecializationConstants(const internal::ReflectedModule& module, const ConstantBytes& given)
{
    if (given.empty()) {
        return;
    }
    if (given.kind == ConstantBytes::Kind::eStruct) {
        throw Error("Specialization constants must be scalars (bool, integers or floats), not "
                    "a struct");
    }
    for (uint32_t id = 0; id < given.count(); ++id) {
        auto declared = std::find_if(module.specConstants.begin(),
                                     module.specConstants.end(),
                                     [id](const auto& c) { return c.id == id; });
        if (declared == module.specConstants.end()) {
            throw Error(format("Specialization constant {} was given, but the shader declares no "
                               "'layout(constant_id = {})' constant",
                               id,
                               id));
        }
        if (!sameScalarType(declared->type, given)) {
            throw Error(format("Specialization constant {} is {} in the shader, but {} was given",
                               id,
                               declared->type.name(),
                               given.typeName()));
        }
    }
}

// Every per-stage and per-set descriptor limit the bindings count against
// (one set, the compute stage).
void
checkDescriptorLimits(const std::vector<std::shared_ptr<Memory>>& memObjects,
                      const vk::PhysicalDeviceLimits& limits)
{
    uint32_t buffers = 0;
    uint32_t images = 0;
    for (const auto& memory : memObjects) {
        (memory->getDescriptorType() == vk::DescriptorType::eStorageImage ? images : buffers) += 1;
    }
    struct Limit
    {
        const char* what;
        uint32_t count;
        const char* name;
        uint32_t limit;
    };
    const Limit checks[] = {
        { "storage buffers (tensors)", buffers, "maxPerStageDescriptorStorageBuffers",
          limits.maxPerStageDescriptorStorageBuffers },
        { "storage buffers (tensors)", buffers, "maxDescriptorSetStorageBuffers",
          limits.maxDescriptorSetStorageBuffers },
        { "storage images", images, "maxPerStageDescriptorStorageImages",
          limits.maxPerStageDescriptorStorageImages },
        { "storage images", images, "maxDescriptorSetStorageImages",
          limits.maxDescriptorSetStorageImages },
        { "resources (tensors and images)", buffers + images, "maxPerStageResources",
          limits.maxPerStageResources },
    };
    for (const auto& check : checks) {
        if (check.count > check.limit) {
            throw Error(format("The algorithm binds {} {}, more than the device's {} of {}",
                               check.count,
                               check.what,
                               check.name,
                               check.limit));
        }
    }
}

// A compute shader has no stage inputs or outputs other than built-ins;
// drivers crash on them (lavapipe does) although the validators pass them.
void
checkInterface(const internal::ReflectedModule& module)
{
    if (!module.userInterfaceVariables.empty()) {
        throw Error(format("The shader declares the {}, which is not a built-in: a compute shader "
                           "gets its data through bindings and push constants, and may only read "
                           "built-in inputs such as gl_GlobalInvocationID",
                           module.userInterfaceVariables.front()));
    }
}

internal::SpecializationValues
specializationValues(const ConstantBytes& constants)
{
    internal::SpecializationValues values;
    for (uint32_t id = 0; id < constants.count(); ++id) {
        uint64_t value = 0;
        std::memcpy(&value,
                    constants.bytes.data() + static_cast<size_t>(id) * constants.elementSize,
                    std::min<size_t>(constants.elementSize, sizeof(value)));
        values[id] = value;
    }
    return values;
}

// The local size and shared memory the pipeline will have once the
// specialization constants are applied.
void
checkSpecializedSizes(const internal::ReflectedModule& module,
                      const ConstantBytes& specializationConstants,
                      const vk::PhysicalDeviceLimits& limits)
{
    internal::SpecializedSizes sizes = module.specialize(specializationValues(specializationConstants));
    if (sizes.localSize) {
        const auto& size = *sizes.localSize;
        uint64_t invocations = 1;
        for (int axis = 0; axis < 3; ++axis) {
            if (size[axis] == 0) {
                throw Error(format("The shader's local size {} is 0 (from {}); every dimension "
                                   "of a workgroup must be at least 1",
                                   "xyz"[axis],
                                   sizes.localSizeSource));
            }
            if (size[axis] > limits.maxComputeWorkGroupSize[axis]) {
                throw Error(format("The shader's local size {} = {} (from {}) exceeds the "
                                   "device's maxComputeWorkGroupSize[{}] of {}",
                                   "xyz"[axis],
                                   size[axis],
                                   sizes.localSizeSource,
                                   axis,
                                   limits.maxComputeWorkGroupSize[axis]));
            }
            invocations *= size[axis];
        }
        if (invocations > limits.maxComputeWorkGroupInvocations) {
            throw Error(format("The shader's local size ({}, {}, {}) (from {}) is {} invocations, "
                               "more than the device's maxComputeWorkGroupInvocations of {}",
                               size[0],
                               size[1],
                               size[2],
                               sizes.localSizeSource,
                               invocations,
                               limits.maxComputeWorkGroupInvocations));
        }
    } else if (!sizes.localSizeSource.empty()) {
        KP_LOG_DEBUG("The shader computes its local size (from {}) in a way Kompute cannot "
                     "evaluate; it is left to the driver",
                     sizes.localSizeSource);
    }
    if (sizes.workgroupMemoryBytes && *sizes.workgroupMemoryBytes > limits.maxComputeSharedMemorySize) {
        throw Error(format("The shader's shared (Workgroup) variables take {} bytes, more than the "
                           "device's maxComputeSharedMemorySize of {} bytes",
                           *sizes.workgroupMemoryBytes,
                           limits.maxComputeSharedMemorySize));
    }
}

// Upstream's rule: x = 0 means "(minSize, 1, 1)", one group per element of
// the first memory object, and y or z = 0 with x > 0 means 1. An x of 0
// with a y or z above 1 would silently drop them: that is refused.
Workgroup
resolveWorkgroup(const Workgroup& workgroup, uint32_t minSize, const vk::PhysicalDeviceLimits* limits)
{
    if (workgroup[0] == 0 && (workgroup[1] > 1 || workgroup[2] > 1)) {
        throw Error(format("Workgroup ({}, {}, {}): x = 0 asks for the default ({} group(s), one "
                           "per element of the first memory object, by 1 by 1) and would ignore "
                           "y and z; give x > 0 to dispatch ({}, {}, {}) groups, or (0, 0, 0) "
                           "for the default",
                           workgroup[0],
                           workgroup[1],
                           workgroup[2],
                           minSize,
                           "x",
                           workgroup[1],
                           workgroup[2]));
    }
    Workgroup resolved = workgroup[0] > 0 ? Workgroup{ workgroup[0],
                                                       std::max(workgroup[1], 1u),
                                                       std::max(workgroup[2], 1u) }
                                          : Workgroup{ minSize, 1, 1 };
    if (limits != nullptr) {
        for (int axis = 0; axis < 3; ++axis) {
            if (resolved[axis] > limits->maxComputeWorkGroupCount[axis]) {
                throw Error(format("Workgroup count {} = {} exceeds the device's "
                                   "maxComputeWorkGroupCount[{}] of {}",
                                   "xyz"[axis],
                                   resolved[axis],
                                   axis,
                                   limits->maxComputeWorkGroupCount[axis]));
            }
        }
    }
    return resolved;
}

void
checkMemObjectList(const std::vector<std::shared_ptr<Memory>>& memObjects, const char* action)
{
    for (size_t i = 0; i < memObjects.size(); ++i) {
        if (!memObjects[i]) {
            throw Error(format("{}: memory object {} is null", action, i));
        }
        memObjects[i]->checkInit(action);
    }
}

} // namespace

std::string
ConstantBytes::typeName() const
{
    switch (kind) {
        case Kind::eNone: return "nothing";
        case Kind::eBool: return "bool";
        case Kind::eInt: return "int" + std::to_string(elementSize * 8);
        case Kind::eUnsignedInt: return "uint" + std::to_string(elementSize * 8);
        case Kind::eFloat: return "float" + std::to_string(elementSize * 8);
        case Kind::eStruct: return "a struct of " + std::to_string(elementSize) + " bytes";
    }
    return "unknown";
}

std::shared_ptr<internal::Device>
Algorithm::contextOf(const std::shared_ptr<vk::Device>& device,
                     const std::vector<std::shared_ptr<Memory>>& memObjects)
{
    if (!device || !*device) {
        throw Error("Algorithm: a null device was given");
    }
    if (memObjects.empty() || !memObjects[0]) {
        return nullptr; // an empty algorithm; rebuild() takes the objects' device
    }
    auto context = memObjects[0]->mDevice;
    if (context->device() != *device) {
        throw Error("Algorithm: the memory objects were created on another device");
    }
    return context;
}

Algorithm::Algorithm(std::shared_ptr<internal::Device> device,
                     const std::vector<std::shared_ptr<Memory>>& memObjects,
                     const std::vector<uint32_t>& spirv,
                     const Workgroup& workgroup,
                     const ConstantBytes& specializationConstants,
                     const ConstantBytes& pushConstants)
  : mDevice(std::move(device))
  , mRecordedIn(std::make_unique<internal::BatchReferences>())
{
    if (!memObjects.empty() && !spirv.empty()) {
        rebuild(memObjects, spirv, workgroup, specializationConstants, pushConstants);
    } else {
        mMemObjects = memObjects;
        mSpirv = spirv;
        mSpecializationConstants = specializationConstants;
        mPushConstants = pushConstants;
    }
    // Joins last: a constructor that throws has no destructor to leave.
    if (mDevice && !mRegistered) {
        mDevice->registry().add(this);
        mRegistered = true;
    }
}

Algorithm::~Algorithm()
{
    // The memory objects go only after the algorithm has left the registry
    // (see ~Sequence: their deleters may release the Manager).
    std::vector<std::shared_ptr<Memory>> memObjects;
    std::optional<internal::Registry::Removal> removal;
    if (mRegistered) {
        removal.emplace(mDevice->registry(), this);
    }
    try {
        release();
    } catch (const std::exception& error) {
        KP_LOG_ERROR("Destroying an algorithm failed: {}", error.what());
    }
    memObjects.swap(mMemObjects);
    removal.reset();
}

void
Algorithm::rebuild(const std::vector<std::shared_ptr<Memory>>& memObjects,
                   const std::vector<uint32_t>& spirv,
                   const Workgroup& workgroup,
                   const ConstantBytes& specializationConstants,
                   const ConstantBytes& pushConstants)
{
    checkMemObjectList(memObjects, "Algorithm::rebuild");
    if (memObjects.empty()) {
        throw Error("Algorithm::rebuild needs at least one memory object to bind");
    }
    if (!mDevice) {
        // An empty algorithm built by hand gets its device from its objects
        // (only after construction: the constructor takes it from them).
        mDevice = memObjects[0]->mDevice;
        mDevice->registry().add(this);
        mRegistered = true;
    }
    auto alive = mDevice->lockAlive("Building an algorithm");
    mDevice->collectRetired();
    for (size_t i = 0; i < memObjects.size(); ++i) {
        if (memObjects[i]->mDevice->device() != mDevice->device()) {
            throw Error(format("Algorithm: memory object {} belongs to another Manager", i));
        }
    }
    const ConstantBytes& spec =
      specializationConstants.empty() ? mSpecializationConstants : specializationConstants;
    const ConstantBytes& push = pushConstants.empty() ? mPushConstants : pushConstants;
    const auto& limits = mDevice->properties().limits;

    // Everything is checked before the driver sees the module. The module
    // is validated and read once per device: algorithms of the same SPIR-V
    // share that work, and their pipeline.
    internal::SharedPipelines& pipelines = mDevice->pipelines();
    std::shared_ptr<const internal::ShaderEntry> shader = pipelines.shader(spirv);
    const internal::ReflectedModule& module = shader->module;
    if (std::find(module.computeEntryPoints.begin(), module.computeEntryPoints.end(), "main") ==
        module.computeEntryPoints.end()) {
        throw Error("The SPIR-V module has no compute (GLCompute) entry point named 'main'");
    }
    checkInterface(module);
    checkBindings(module, memObjects, limits);
    checkPushConstants(push, module.pushConstantBytes.value_or(0), module.pushConstantBytes.has_value(), limits);
    checkDescriptorLimits(memObjects, limits);
    checkSpecializationConstants(module, spec);
    checkSpecializedSizes(module, spec, limits);
    // Validates before anything is replaced.
    Workgroup resolved = resolveWorkgroup(workgroup, memObjects[0]->size(), &limits);

    // Vulkan sizes push-constant ranges in multiples of 4 bytes; a block of
    // 16-bit values can be smaller, so the range is rounded up (and the
    // pushed bytes are padded to match, see recordBindPush).
    internal::PipelineLayoutKey layout;
    for (const auto& memory : memObjects) {
        layout.bindings.push_back(memory->getDescriptorType());
    }
    layout.pushConstantBytes = push.empty() ? 0 : static_cast<uint32_t>(paddedPushSize(push.bytes.size()));
    auto objects = std::make_unique<internal::AlgorithmObjects>();
    objects->pipeline = pipelines.pipeline(shader, spec, layout);
    objects->descriptorSet = allocateDescriptorSet(*objects->pipeline);

    // Built: only now is the previous state replaced. Copies first: `spec`
    // or `push` may refer to our own members.
    ConstantBytes newSpec = spec;
    ConstantBytes newPush = push;
    release();
    mMemObjects = memObjects;
    mSpirv.clear(); // the shared module holds the words
    mSpecializationConstants = std::move(newSpec);
    mPushConstants = std::move(newPush);
    mDeclaredPushConstantBytes = module.pushConstantBytes.value_or(0);
    mWorkgroup = resolved;
    mBindingAccess.assign(mMemObjects.size(),
                          vk::AccessFlagBits::eShaderRead | vk::AccessFlagBits::eShaderWrite);
    for (const auto& binding : module.bindings) {
        if (binding.binding < mBindingAccess.size()) {
            vk::AccessFlags& access = mBindingAccess[binding.binding];
            if (binding.nonWritable) {
                access &= ~vk::AccessFlags(vk::AccessFlagBits::eShaderWrite);
            }
            if (binding.nonReadable) {
                access &= ~vk::AccessFlags(vk::AccessFlagBits::eShaderRead);
            }
        }
    }

    mObjects = std::move(objects);
    writeDescriptors(mObjects->descriptorSet.get(), mMemObjects);
    ++mGeneration;
}

internal::DescriptorSetOwner
Algorithm::allocateDescriptorSet(const internal::SharedPipeline& pipeline)
{
    return internal::DescriptorSetOwner(
      mDevice.get(),
      mDevice->descriptorPools().allocate(
        pipeline.setLayout.get(), pipeline.storageBuffers, pipeline.storageImages));
}

void
Algorithm::writeDescriptors(vk::DescriptorSet set,
                            const std::vector<std::shared_ptr<Memory>>& memObjects)
{
    std::vector<vk::WriteDescriptorSet> writes;
    writes.reserve(memObjects.size());
    for (uint32_t i = 0; i < memObjects.size(); ++i) {
        writes.push_back(memObjects[i]->constructDescriptorSet(set, i));
    }
    mDevice->device().updateDescriptorSets(
      static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

void
Algorithm::setMemObjects(const std::vector<std::shared_ptr<Memory>>& memObjects)
{
    checkUsable("Algorithm::setMemObjects");
    checkMemObjectList(memObjects, "Algorithm::setMemObjects");
    const std::vector<vk::DescriptorType>& bindingTypes = mObjects->pipeline->layoutKey.bindings;
    if (memObjects.size() != bindingTypes.size()) {
        throw Error(format("Algorithm::setMemObjects: the algorithm has {} binding(s), but {} "
                           "memory object(s) were given",
                           bindingTypes.size(),
                           memObjects.size()));
    }
    const auto& limits = mDevice->properties().limits;
    for (size_t i = 0; i < memObjects.size(); ++i) {
        if (memObjects[i]->mDevice->device() != mDevice->device()) {
            throw Error(format("Algorithm::setMemObjects: memory object {} belongs to another "
                               "Manager",
                               i));
        }
        if (memObjects[i]->getDescriptorType() != bindingTypes[i]) {
            throw Error(format("Algorithm::setMemObjects: binding {} holds a {}, but a {} was "
                               "given",
                               i,
                               bindingTypes[i] == vk::DescriptorType::eStorageImage ? "image"
                                                                                    : "tensor",
                               memoryKindName(*memObjects[i])));
        }
        if (memObjects[i]->getDescriptorType() == vk::DescriptorType::eStorageBuffer &&
            memObjects[i]->memorySize() > limits.maxStorageBufferRange) {
            throw Error(format("Binding {}: the tensor holds {} bytes, more than the device's "
                               "maxStorageBufferRange of {} bytes",
                               i,
                               memObjects[i]->memorySize(),
                               limits.maxStorageBufferRange));
        }
    }
    // A submitted command buffer may still use the current descriptor set:
    // the new objects go into a fresh one, and the old one to the retire
    // list. Recorded sequences re-record at their next evaluation.
    internal::DescriptorSetOwner fresh = allocateDescriptorSet(*mObjects->pipeline);
    writeDescriptors(fresh.get(), memObjects);
    std::swap(mObjects->descriptorSet, fresh);
    mMemObjects = memObjects;
    mDevice->retireRecorded(*mRecordedIn, std::move(fresh));
    ++mGeneration;
}

void
Algorithm::recordBindCore(const vk::CommandBuffer& commandBuffer)
{
    checkUsable("Algorithm::recordBindCore");
    // The batch now refers to the pipeline, the descriptor set and, through
    // it, every memory object's buffer or image.
    mRecordedIn->noteRecorded();
    for (const auto& memory : mMemObjects) {
        memory->noteRecorded();
    }
    commandBuffer.bindPipeline(vk::PipelineBindPoint::eCompute, mObjects->pipeline->pipeline.get());
    commandBuffer.bindDescriptorSets(vk::PipelineBindPoint::eCompute,
                                     mObjects->pipeline->layout.get(),
                                     0,
                                     1,
                                     mObjects->descriptorSet.address(),
                                     0,
                                     nullptr);
}

void
Algorithm::recordBindPush(const vk::CommandBuffer& commandBuffer)
{
    checkUsable("Algorithm::recordBindPush");
    mRecordedIn->noteRecorded();
    if (!mPushConstants.empty()) {
        size_t size = paddedPushSize(mPushConstants.bytes.size());
        const void* bytes = mPushConstants.bytes.data();
        std::vector<uint8_t> padded; // recording, not evaluating: may allocate
        if (size != mPushConstants.bytes.size()) {
            padded = mPushConstants.bytes;
            padded.resize(size, 0);
            bytes = padded.data();
        }
        commandBuffer.pushConstants(mObjects->pipeline->layout.get(),
                                    vk::ShaderStageFlagBits::eCompute,
                                    0,
                                    static_cast<uint32_t>(size),
                                    bytes);
    }
}

void
Algorithm::recordDispatch(const vk::CommandBuffer& commandBuffer)
{
    checkUsable("Algorithm::recordDispatch");
    commandBuffer.dispatch(mWorkgroup[0], mWorkgroup[1], mWorkgroup[2]);
}

bool
Algorithm::isInit() const
{
    return mObjects && mDevice && mDevice->isAlive();
}

void
Algorithm::checkUsable(const char* action) const
{
    if (!isInit()) {
        if (mDevice && !mDevice->isAlive()) {
            mDevice->checkAlive(action);
        }
        throw DestroyedError(format("{}: the algorithm is not built (it was destroyed, or it was "
                                    "created without memory objects and SPIR-V)",
                                    action));
    }
    for (size_t i = 0; i < mMemObjects.size(); ++i) {
        if (!mMemObjects[i]->isInit()) {
            throw DestroyedError(format("{}: memory object {} of the algorithm was destroyed",
                                        action,
                                        i));
        }
    }
}

void
Algorithm::setWorkgroup(const Workgroup& workgroup, uint32_t minSize)
{
    bool live = mDevice && mDevice->isAlive();
    mWorkgroup =
      resolveWorkgroup(workgroup, minSize, live ? &mDevice->properties().limits : nullptr);
}

void
Algorithm::setPushConstants(const void* data, uint32_t size, uint32_t memorySize)
{
    ConstantBytes constants;
    constants.elementSize = memorySize;
    constants.kind = ConstantBytes::Kind::eStruct;
    constants.bytes.resize(static_cast<size_t>(size) * memorySize);
    if (!constants.bytes.empty()) {
        if (data == nullptr) {
            throw Error("Algorithm::setPushConstants was given a null pointer");
        }
        std::memcpy(constants.bytes.data(), data, constants.bytes.size());
    }
    setPushConstants(constants);
}

void
Algorithm::setPushConstants(const ConstantBytes& pushConstants)
{
    size_t expected = isInit() ? mDeclaredPushConstantBytes : mPushConstants.bytes.size();
    if (pushConstants.bytes.size() != expected) {
        throw Error(format("Push constants of {} bytes ({} value(s) of {}) were given, but the "
                           "algorithm's push-constant block is {} bytes",
                           pushConstants.bytes.size(),
                           pushConstants.count(),
                           pushConstants.typeName(),
                           expected));
    }
    mPushConstants = pushConstants;
}

vk::Pipeline
Algorithm::getPipeline() const
{
    return mObjects ? mObjects->pipeline->pipeline.get() : vk::Pipeline();
}

vk::PipelineLayout
Algorithm::getPipelineLayout() const
{
    return mObjects ? mObjects->pipeline->layout.get() : vk::PipelineLayout();
}

vk::DescriptorSet
Algorithm::getDescriptorSet() const
{
    return mObjects ? mObjects->descriptorSet.get() : vk::DescriptorSet();
}

void
Algorithm::release()
{
    if (!mObjects) {
        return;
    }
    // Submitted work may still use the pipeline and descriptor set: the
    // device lets go of them when it is done (the pipeline itself goes with
    // the last algorithm that shares it).
    mDevice->retireRecorded(*mRecordedIn, std::move(mObjects));
    ++mGeneration;
}

void
Algorithm::destroy()
{
    release();
    // An inert algorithm keeps no memory objects alive.
    mMemObjects.clear();
}

void
Algorithm::clearConstants()
{
    release();
    mSpecializationConstants = ConstantBytes{};
    mPushConstants = ConstantBytes{};
    mDeclaredPushConstantBytes = 0;
}

vk::AccessFlags
Algorithm::getBindingAccess(uint32_t binding) const
{
    if (binding >= mBindingAccess.size()) {
        throw Error(format("Algorithm::getBindingAccess: binding {} is out of range; the "
                           "algorithm has {} binding(s)",
                           binding,
                           mBindingAccess.size()));
    }
    return mBindingAccess[binding];
}

} // namespace kp
