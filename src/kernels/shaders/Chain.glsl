// Dispatches of one submission ordered by the shaders instead of by
// barriers (docs/performance.md, fourteenth session): a decode step's
// products each wait, inside the shader, for the dispatch before them to
// finish, so that no barrier drains the GPU between them and a dispatch's
// loads that depend on nothing before it (its weights) are in flight while
// the dispatch before it ends.
//
// Included by the builds with CHAIN defined, after the kernel defines
// CHAIN_BINDING (a binding it does not use otherwise) and CHAIN_SPEC (a
// specialization constant id it does not use). The kernel's push constants
// end with chainSlot, this dispatch's slot.
//
// The chain buffer (uints, zeroed by the host before the submission):
//   word 0           set to 1 when a wait gave up (CHAIN_SPINS polls): the
//                    results of the submission are wrong and the host must
//                    run it again with barriers;
//   words 2s + 2, 3  slot s: its workgroups that have finished, and 1 once
//                    all of them have (the last one to finish sets it).
//
// CHAIN_MODE: bit 0, wait for slot chainSlot - 1 before reading what earlier
// dispatches wrote; bit 1, signal slot chainSlot after the last write.
// Every buffer the kernel reads that an earlier dispatch of the chain wrote
// is `coherent` in these builds (CHAIN_COHERENT): with no barrier between
// the dispatches, nothing else invalidates a multiprocessor's cache of what
// an earlier layer left there.
//
// Forward progress: Vulkan does not promise that one workgroup waits for
// another without hanging. A dispatch's workgroups start only after all of
// the dispatch before it have started, on an in-order queue (NVIDIA) and on
// lavapipe (which runs each dispatch to its end before the next), so the
// workgroup a wait depends on is running or done. The polls are bounded all
// the same: a wait that gives up sets word 0 and goes on.
#extension GL_KHR_memory_scope_semantics : require

layout(constant_id = CHAIN_SPEC) const uint CHAIN_MODE = 0;
layout(set = 0, binding = CHAIN_BINDING) coherent buffer ChainWords { uint chainWords[]; };

const uint CHAIN_SPINS = 1u << 20;

bool chainWaited = false;

// Waits (once) until every workgroup of the dispatch before this one has
// signalled; then what it wrote is visible to this workgroup. Workgroup-
// uniform control flow only (a barrier).
void chainWait(uint slot)
{
    if ((CHAIN_MODE & 1u) == 0u || slot == 0u || chainWaited) {
        return;
    }
    chainWaited = true;
    if (gl_LocalInvocationIndex == 0u) {
        uint done = 3u + 2u * (slot - 1u);
        uint polls = 0u;
        while (atomicLoad(chainWords[done], gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire) == 0u) {
            if (++polls == CHAIN_SPINS) {
                atomicOr(chainWords[0], 1u);
                break;
            }
        }
    }
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
}

// Signals this dispatch's slot once every invocation of the workgroup has
// made its last write. Workgroup-uniform control flow only.
void chainSignal(uint slot)
{
    if ((CHAIN_MODE & 2u) == 0u) {
        return;
    }
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
    if (gl_LocalInvocationIndex == 0u) {
        uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
        uint finished = atomicAdd(chainWords[2u + 2u * slot], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                  gl_SemanticsAcquireRelease);
        if (finished + 1u == groups) {
            atomicStore(chainWords[3u + 2u * slot], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                        gl_SemanticsRelease);
        }
    }
}
