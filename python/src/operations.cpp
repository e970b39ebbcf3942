// SPDX-License-Identifier: Apache-2.0
// kp.OpBase and operations written in Python.
//
// A Python class that derives from kp.OpBase is a kp::OpBase to the C++
// side: its C++ part (PythonOp, the trampoline) forwards the sequence's
// calls to the Python methods record / pre_eval / post_eval /
// needs_rerecord / declare_accesses, with the command buffer's handle as an
// int. The sequence calls them with the GIL released, maybe on another
// thread than the one that made the operation, so every call takes the GIL;
// a Python exception travels back as the C++ exception nb::python_error and
// is the exception of the record() or eval() call that led to it. A
// sequence keeps the Python object alive while it holds the operation
// (nanobind's shared_ptr of a Python-made instance owns a reference).
//
// Python has no binding of Vulkan's commands, so the useful thing such an
// operation records is other operations: the Python methods of kp.OpBase
// (op.record(command_buffer), ...) call the C++ ones of built-in
// operations, but only from within a Python operation's own callback and
// with the command buffer it was given (Callback below), so Python never
// records into a command buffer that is not being recorded.
#include "common.hpp"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include <algorithm>

namespace kp {
namespace python {

namespace {

using nb::literals::operator""_a;

const auto keepGil = nb::call_guard<FlushLog>();

/** Which hook of an operation is running. */
enum class Hook
{
    eRecord,
    ePreEval,
    ePostEval,
};

const char*
hookName(Hook hook)
{
    switch (hook) {
        case Hook::eRecord: return "record";
        case Hook::ePreEval: return "pre_eval";
        case Hook::ePostEval: return "post_eval";
    }
    return "";
}

/** The hooks of Python operations running on this thread, innermost first:
 * what the Python methods of built-in operations may be called for. */
class Callback
{
  public:
    Callback(Hook hook, VkCommandBuffer commandBuffer)
      : mHook(hook)
      , mCommandBuffer(commandBuffer)
      , mOuter(sCurrent)
    {
        sCurrent = this;
    }
    ~Callback() { sCurrent = mOuter; }
    Callback(const Callback&) = delete;
    Callback& operator=(const Callback&) = delete;

    /** Throws unless `hook` of another operation may run now with
     * `commandBuffer`: from within the same hook of a Python operation,
     * with the command buffer that one was given. */
    static void checkNested(Hook hook, uint64_t commandBuffer, nb::handle op)
    {
        std::string name = nb::cast<std::string>(nb::str(op.type().attr("__name__")));
        if (sCurrent == nullptr || sCurrent->mHook != hook) {
            throw Error(std::string(name) + "." + hookName(hook) +
                        "(command_buffer) records into a command buffer being recorded: call "
                        "it only from within the " + hookName(hook) +
                        "() of an operation written in Python (a kp.OpBase subclass), while a "
                        "sequence calls it");
        }
        if (commandBuffer != handleValue(sCurrent->mCommandBuffer)) {
            throw Error(std::string(name) + "." + hookName(hook) +
                        "(command_buffer) was given another command buffer than the one "
                        "the running " + hookName(hook) + "() received: pass that one on");
        }
    }

    /** Whether a hook of a Python operation runs on this thread. */
    static bool active() { return sCurrent != nullptr; }

    static uint64_t handleValue(VkCommandBuffer commandBuffer)
    {
        return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(commandBuffer));
    }

  private:
    Hook mHook;
    VkCommandBuffer mCommandBuffer;
    const Callback* mOuter;
    static thread_local const Callback* sCurrent;
};

thread_local const Callback* Callback::sCurrent = nullptr;

/** A memory access declared from Python: the C++ MemoryAccess, and a
 * reference to its object, which keeps it alive. */
struct PyMemoryAccess
{
    std::shared_ptr<Memory> memory;
    MemoryAccess access;
};

/** The C++ side of an operation written in Python (the trampoline). */
class PythonOp : public OpBase
{
  public:
#if NB_VERSION_MAJOR > 3 || (NB_VERSION_MAJOR == 3 && NB_VERSION_MINOR >= 1)
    NB_TRAMPOLINE(OpBase);
#else
    NB_TRAMPOLINE(OpBase, 5);
#endif

    PythonOp()
    {
        // As an abstract base class would: refuse an instance that cannot
        // be recorded.
        if (!overrides("record")) {
            throw nb::type_error(("Can't instantiate " + typeName() +
                                  ": a kp.OpBase subclass must implement record(self, "
                                  "command_buffer)")
                                   .c_str());
        }
    }

    void record(const vk::CommandBuffer& commandBuffer) override
    {
        call(Hook::eRecord, commandBuffer);
    }
    void preEval(const vk::CommandBuffer& commandBuffer) override
    {
        call(Hook::ePreEval, commandBuffer);
    }
    void postEval(const vk::CommandBuffer& commandBuffer) override
    {
        call(Hook::ePostEval, commandBuffer);
    }

    bool needsRerecord() const override
    {
        nb::gil_scoped_acquire gil;
        if (!overrides("needs_rerecord")) {
            return false;
        }
        nb::object result = self().attr("needs_rerecord")();
        if (!PyBool_Check(result.ptr())) {
            throw nb::type_error((typeName() + ".needs_rerecord() must return a bool, not " +
                                  nb::cast<std::string>(result.type().attr("__name__")))
                                   .c_str());
        }
        return result.ptr() == Py_True;
    }

    bool declareAccesses(std::vector<MemoryAccess>& accesses) const override
    {
        nb::gil_scoped_acquire gil;
        if (!overrides("declare_accesses")) {
            return false;
        }
        nb::object result = self().attr("declare_accesses")();
        if (result.is_none()) {
            return false;
        }
        if (PyIter_Check(result.ptr()) == 0 && PySequence_Check(result.ptr()) == 0) {
            throw nb::type_error((typeName() + ".declare_accesses() must return None or a "
                                               "list of kp.MemoryAccess and kp.OpBase, not " +
                                  nb::cast<std::string>(result.type().attr("__name__")))
                                   .c_str());
        }
        size_t first = accesses.size();
        for (nb::handle item : result) {
            PyMemoryAccess* access = nullptr;
            std::shared_ptr<OpBase> inner;
            if (nb::try_cast(item, access, false) && access != nullptr) {
                keep(access->memory);
                accesses.push_back(access->access);
            } else if (nb::try_cast(item, inner, false) && inner) {
                // An inner operation's own accesses; one that declares
                // nothing may touch anything, and so may this one.
                Declaring declaring(*this, inner.get());
                if (!inner->declareAccesses(accesses)) {
                    accesses.resize(first);
                    return false;
                }
                keep(inner);
            } else {
                throw nb::type_error((typeName() + ".declare_accesses() must return None or a "
                                                   "list of kp.MemoryAccess and kp.OpBase; it "
                                                   "holds a " +
                                      nb::cast<std::string>(item.type().attr("__name__")))
                                       .c_str());
            }
        }
        return true;
    }

  private:
    /** Marks an inner operation whose accesses an operation's declaration
     * takes in, so that one that takes in itself (directly or through
     * others) is an error instead of an endless recursion. */
    class Declaring
    {
      public:
        Declaring(const PythonOp& outer, const OpBase* inner)
          : mOuter(sDeclaring)
        {
            for (const Declaring* d = sDeclaring; d != nullptr; d = d->mOuter) {
                if (d->mOp == inner) {
                    throw nb::type_error((outer.typeName() +
                                          ".declare_accesses() takes in the accesses of an "
                                          "operation that takes in its own")
                                           .c_str());
                }
            }
            if (inner == &outer) {
                throw nb::type_error(
                  (outer.typeName() + ".declare_accesses() lists the operation itself").c_str());
            }
            mOp = inner;
            sDeclaring = this;
        }
        ~Declaring() { sDeclaring = mOuter; }
        Declaring(const Declaring&) = delete;
        Declaring& operator=(const Declaring&) = delete;

      private:
        const OpBase* mOp = nullptr;
        const Declaring* mOuter;
        static thread_local const Declaring* sDeclaring;
    };

    nb::handle self() const { return nb_trampoline.base(); }

    std::string typeName() const
    {
        return nb::cast<std::string>(nb::str(self().type().attr("__name__")));
    }

    /** Whether the Python class defines `name` itself rather than taking
     * kp.OpBase's. Needs the GIL. */
    bool overrides(const char* name) const
    {
        nb::object own = nb::getattr(self().type(), name, nb::none());
        nb::object base = nb::getattr(nb::type<OpBase>(), name, nb::none());
        return !own.is_none() && !own.is(base);
    }

    void call(Hook hook, const vk::CommandBuffer& commandBuffer)
    {
        nb::gil_scoped_acquire gil;
        if (!overrides(hookName(hook))) {
            if (hook == Hook::eRecord) { // removed from the class since
                throw nb::type_error((typeName() + " does not implement record(self, "
                                                   "command_buffer)")
                                       .c_str());
            }
            return; // pre_eval and post_eval are optional
        }
        auto handle = static_cast<VkCommandBuffer>(commandBuffer);
        Callback callback(hook, handle);
        nb::object result = self().attr(hookName(hook))(Callback::handleValue(handle));
        if (!result.is_none()) {
            throw nb::type_error((typeName() + "." + hookName(hook) +
                                  "() must return None, not " +
                                  nb::cast<std::string>(result.type().attr("__name__")))
                                   .c_str());
        }
    }

    /** Keeps what a declaration names alive while the operation lives, as
     * OpBase::declareAccesses asks: the objects of every declaration, each
     * once. Called with the GIL held, which orders the sequences that
     * declare this operation on several threads. */
    template<typename T>
    void keep(const std::shared_ptr<T>& object) const
    {
        for (const auto& kept : mKept) {
            if (kept.get() == object.get()) {
                return;
            }
        }
        mKept.push_back(object);
    }

    mutable std::vector<std::shared_ptr<void>> mKept;
};

thread_local const PythonOp::Declaring* PythonOp::Declaring::sDeclaring = nullptr;

/** The Python methods of kp.OpBase on a built-in operation (or any not
 * written in Python): the C++ hook, from within a Python operation's. */
template<typename Call>
void
callNested(nb::handle self, Hook hook, uint64_t commandBuffer, Call&& hookCall)
{
    OpBase& op = nb::cast<OpBase&>(self);
    if (dynamic_cast<PythonOp*>(&op) != nullptr) {
        // kp.OpBase's own method on a Python operation: the base's behaviour.
        if (hook == Hook::eRecord) {
            throw nb::type_error("kp.OpBase.record() is abstract: a subclass implements it");
        }
        return;
    }
    Callback::checkNested(hook, commandBuffer, self);
    auto handle = reinterpret_cast<VkCommandBuffer>(static_cast<uintptr_t>(commandBuffer));
    hookCall(op, vk::CommandBuffer(handle));
}

/** Sequences that hold operations written in Python, for
 * releaseOperationsAtExit. Used with the GIL held. */
std::vector<std::weak_ptr<Sequence>>&
sequencesWithPythonOperations()
{
    static auto* sequences = new std::vector<std::weak_ptr<Sequence>>();
    return *sequences;
}

} // namespace

void
checkNotInOperationHook(const char* action)
{
    if (Callback::active()) {
        throw Error(std::string(action) +
                    " cannot run from within an operation's record(), pre_eval() or "
                    "post_eval(): it would wait for the sequence that runs them; call it once "
                    "the record() or eval() call has returned");
    }
}

void
noteRecorded(Sequence& sequence, const OpBase& op)
{
    if (dynamic_cast<const PythonOp*>(&op) == nullptr) {
        return;
    }
    auto& sequences = sequencesWithPythonOperations();
    sequences.erase(std::remove_if(sequences.begin(),
                                   sequences.end(),
                                   [](const std::weak_ptr<Sequence>& s) { return s.expired(); }),
                    sequences.end());
    std::shared_ptr<Sequence> shared = sequence.shared_from_this();
    for (const auto& known : sequences) {
        if (known.lock() == shared) {
            return;
        }
    }
    sequences.push_back(shared);
}

void
releaseOperationsAtExit()
{
    std::vector<std::weak_ptr<Sequence>> sequences;
    sequences.swap(sequencesWithPythonOperations());
    for (const auto& weak : sequences) {
        if (std::shared_ptr<Sequence> sequence = weak.lock()) {
            try {
                ReleaseGil release;
                sequence->destroy();
            } catch (const std::exception& error) {
                KP_LOG_WARN("Releasing a sequence's Python operations at exit: {}", error.what());
            }
        }
    }
}

void
bindOperationBase(nb::module_& m)
{
    using Part = MemoryAccess::Part;

    nb::class_<OpBase, PythonOp>(
      m,
      "OpBase",
      "Base class of the operations a Sequence records. Subclass it to write an operation in "
      "Python: implement record(self, command_buffer), and optionally pre_eval(self, "
      "command_buffer) and post_eval(self, command_buffer) (called on the host before each "
      "submission and after it completed), needs_rerecord(self) -> bool (True: the sequence "
      "records its batch anew before the next submission) and declare_accesses(self) (None, "
      "the default: the sequence puts full barriers before and after the operation; or a "
      "list of kp.MemoryAccess and of operations whose accesses it shares, so that the "
      "sequence orders it only against what it touches). command_buffer is the VkCommandBuffer "
      "handle as an int. The sequence calls these on whatever thread evaluates it, holding the "
      "GIL while they run; an exception they raise is the exception of the record() or eval() "
      "call; the sequence keeps the operation alive while it holds it. Without a Vulkan "
      "binding, record() records other operations: built-in ones through their record(), "
      "pre_eval() and post_eval() methods, called from the same hook with the same "
      "command_buffer (see kp.OpComposite).")
      .def(nb::init<>(), keepGil,
           "Call it (super().__init__()) from a subclass's __init__; raises TypeError if the "
           "subclass does not implement record().")
      .def(
        "record",
        [](nb::handle self, uint64_t commandBuffer) {
            callNested(self, Hook::eRecord, commandBuffer,
                       [](OpBase& op, vk::CommandBuffer cmd) { OpBase::recordNested(op, cmd); });
        },
        "command_buffer"_a,
        keepGil,
        "Records this operation's commands into `command_buffer`: only from within the "
        "record() of an operation written in Python, with the command_buffer it was given. "
        "Objects of another Manager than the recording sequence's raise kp.Error before "
        "anything is recorded. A built-in operation recorded this way puts a barrier before "
        "itself, ordering it after the commands recorded before it.")
      .def(
        "pre_eval",
        [](nb::handle self, uint64_t commandBuffer) {
            callNested(self, Hook::ePreEval, commandBuffer,
                       [](OpBase& op, vk::CommandBuffer cmd) { op.preEval(cmd); });
        },
        "command_buffer"_a,
        keepGil,
        "The operation's checks before a submission (e.g. that its objects are alive): "
        "only from within the pre_eval() of an operation written in Python, with the "
        "command_buffer it was given. A subclass's own does nothing unless overridden.")
      .def(
        "post_eval",
        [](nb::handle self, uint64_t commandBuffer) {
            callNested(self, Hook::ePostEval, commandBuffer,
                       [](OpBase& op, vk::CommandBuffer cmd) { op.postEval(cmd); });
        },
        "command_buffer"_a,
        keepGil,
        "The operation's work after a submission completed: only from within the "
        "post_eval() of an operation written in Python, with the command_buffer it was given. "
        "A subclass's own does nothing unless overridden.")
      .def(
        "needs_rerecord",
        [](nb::handle self) {
            OpBase& op = nb::cast<OpBase&>(self);
            if (dynamic_cast<PythonOp*>(&op) != nullptr) {
                return false; // kp.OpBase's own on a Python operation
            }
            return op.needsRerecord();
        },
        keepGil,
        "True when the commands recorded earlier are stale (an algorithm was rebuilt or "
        "rebound), so the sequence must record its batch anew. An operation made of "
        "others returns True when any of them does. False unless overridden.");

    nb::class_<PyMemoryAccess> access(
      m,
      "MemoryAccess",
      "How the commands of an operation touch a tensor or image, as an operation "
      "written in Python declares it in declare_accesses(): the object, which part of it, the "
      "pipeline stages and the access flags (kp.PipelineStageFlagBits / kp.AccessFlagBits "
      "values). Keeps the object alive.");
    nb::enum_<Part>(access, "Part", "Which memory of a tensor or image an access touches.")
      .value("primary", Part::ePrimary, "The memory shaders and copies use.")
      .value("staging", Part::eStaging, "The staging memory behind the host view.");
    auto make = [](const std::shared_ptr<Memory>& memory, MemoryAccess access) {
        if (!memory) {
            throw Error("kp.MemoryAccess needs a tensor or image, not None");
        }
        return PyMemoryAccess{ memory, access };
    };
    access
      .def(
        "__init__",
        [make](PyMemoryAccess* self,
               const std::shared_ptr<Memory>& memory,
               uint32_t stages,
               uint32_t accessFlags,
               Part part) {
            MemoryAccess value = MemoryAccess::reference(*memory);
            value.part = part;
            value.stages = vk::PipelineStageFlags(stages);
            value.access = vk::AccessFlags(accessFlags);
            new (self) PyMemoryAccess(make(memory, value));
        },
        "memory"_a,
        "stages"_a,
        "access"_a,
        "part"_a = Part::ePrimary,
        keepGil,
        "stages: kp.PipelineStageFlagBits, access: kp.AccessFlagBits (reads and/or writes).")
      .def_static(
        "shader_read",
        [make](const std::shared_ptr<Memory>& m) { return make(m, MemoryAccess::shaderRead(*m)); },
        "memory"_a, keepGil, "Read by a compute shader.")
      .def_static(
        "shader_write",
        [make](const std::shared_ptr<Memory>& m) { return make(m, MemoryAccess::shaderWrite(*m)); },
        "memory"_a, keepGil, "Written by a compute shader.")
      .def_static(
        "shader_read_write",
        [make](const std::shared_ptr<Memory>& m) {
            return make(m, MemoryAccess::shaderReadWrite(*m));
        },
        "memory"_a, keepGil, "Read and written by a compute shader.")
      .def_static(
        "transfer_read",
        [make](const std::shared_ptr<Memory>& m, Part part) {
            return make(m, MemoryAccess::transferRead(*m, part));
        },
        "memory"_a, "part"_a = Part::ePrimary, keepGil, "Read by a copy.")
      .def_static(
        "transfer_write",
        [make](const std::shared_ptr<Memory>& m, Part part) {
            return make(m, MemoryAccess::transferWrite(*m, part));
        },
        "memory"_a, "part"_a = Part::ePrimary, keepGil, "Written by a copy.")
      .def_static(
        "reference",
        [make](const std::shared_ptr<Memory>& m) { return make(m, MemoryAccess::reference(*m)); },
        "memory"_a, keepGil,
        "Used without its memory being touched: the sequence only checks it belongs to its "
        "Manager.")
      .def_prop_ro("memory", [](const PyMemoryAccess& a) { return a.memory; },
                   "The tensor or image.")
      .def_prop_ro("part", [](const PyMemoryAccess& a) { return a.access.part; },
                   "kp.MemoryAccess.Part.primary or .staging.")
      .def_prop_ro("stages",
                   [](const PyMemoryAccess& a) { return static_cast<uint32_t>(a.access.stages); },
                   "The pipeline stages (VkPipelineStageFlags).")
      .def_prop_ro("access",
                   [](const PyMemoryAccess& a) { return static_cast<uint32_t>(a.access.access); },
                   "The access flags (VkAccessFlags).")
      .def("writes", [](const PyMemoryAccess& a) { return a.access.writes(); }, keepGil,
           "Whether the access writes.");
}

} // namespace python
} // namespace kp
