// SPDX-License-Identifier: Apache-2.0
// kp::OpBase: one recordable step of a Sequence. Subclass it to write your
// own operations.
#pragma once

#include <vector>

#include "kompute/Core.hpp"

namespace kp {

class Memory;

/**
 * One way in which the commands of an operation touch a memory object
 * (ours; see OpBase::declareAccesses).
 */
struct MemoryAccess
{
    /** Which memory of the object. */
    enum class Part
    {
        ePrimary, ///< the memory shaders and copies use (getPrimaryBuffer())
        eStaging, ///< the staging memory behind the host view (getStagingBuffer())
    };

    const Memory* memory = nullptr;
    Part part = Part::ePrimary;
    /** The pipeline stages of the commands, e.g. eComputeShader, eTransfer. */
    vk::PipelineStageFlags stages;
    /** What they do there: reads and/or writes, e.g. eShaderRead |
     * eShaderWrite, eTransferRead, eTransferWrite. */
    vk::AccessFlags access;

    /** Whether `access` holds a write. */
    bool writes() const;

    static MemoryAccess shaderRead(const Memory& memory);
    static MemoryAccess shaderWrite(const Memory& memory);
    static MemoryAccess shaderReadWrite(const Memory& memory);
    static MemoryAccess transferRead(const Memory& memory, Part part = Part::ePrimary);
    static MemoryAccess transferWrite(const Memory& memory, Part part = Part::ePrimary);
    /** The object is used, its memory not touched (no stages, no access). */
    static MemoryAccess reference(const Memory& memory);
};

class OpBase
{
  public:
    OpBase() = default;
    OpBase(const OpBase&) = delete;
    OpBase(OpBase&&) = delete;
    OpBase& operator=(const OpBase&) = delete;
    OpBase& operator=(OpBase&&) = delete;
    virtual ~OpBase() = default;

    /** Records the operation's commands. Called by Sequence::record, and
     * again by Sequence::rerecord. */
    virtual void record(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host before each submission of the sequence. */
    virtual void preEval(const vk::CommandBuffer& commandBuffer) = 0;
    /** Called on the host after each submission has completed. */
    virtual void postEval(const vk::CommandBuffer& commandBuffer) = 0;

    /** True when the commands recorded earlier are no longer valid (an
     * algorithm was rebuilt or rebound, say): the sequence then records its
     * operations again before submitting (ours). */
    virtual bool needsRerecord() const { return false; }

    /**
     * What the commands record() records read and write (ours). A Sequence
     * puts a barrier before an operation only where it conflicts with an
     * earlier operation of the batch (a read after a write, a write after a
     * read, a write after a write of the same memory), with exactly the
     * stages and accesses of the conflict: independent operations run
     * without barriers between them.
     *
     * Append one entry per memory touched (per part and kind of access) to
     * `accesses` and return true; an operation that touches no memory
     * returns true and appends nothing. An entry with no access flags names
     * an object the operation uses without touching its memory: the
     * sequence only checks that it belongs to its Manager, as it does for
     * every declared object. The default returns false: the
     * operation may touch anything, and the sequence orders it after
     * everything before it and everything after it after it (full
     * barriers). Called by the sequence just before each record(); the
     * objects must stay alive while the operation does.
     */
    virtual bool declareAccesses(std::vector<MemoryAccess>& accesses) const
    {
        (void)accesses;
        return false;
    }

    /**
     * Records `inner` into `commandBuffer` from within another operation's
     * record(), for operations made of other operations (ours). During a
     * Sequence's recording it first checks, as Sequence::record does, that
     * the objects `inner` declares belong to the sequence's Manager, and
     * throws kp::Error before recording anything otherwise. Built-in
     * operations recorded this way order themselves after the commands
     * before them with a barrier of their own; custom ones record the
     * barriers they need themselves.
     */
    static void recordNested(OpBase& inner, const vk::CommandBuffer& commandBuffer);
};

} // namespace kp
