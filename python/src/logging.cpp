// SPDX-License-Identifier: Apache-2.0
// The bridge from kp::logger to Python's logging module (logger "kp").
#include "common.hpp"

#include <atomic>
#include <mutex>
#include <utility>

namespace kp {
namespace python {

namespace {

// Past this many undelivered messages, new ones are counted and dropped (a
// thread logging in a loop while no Python call returns).
constexpr size_t kMaxPending = 10000;

struct LogQueue
{
    std::mutex mutex;
    std::vector<std::pair<logger::Level, std::string>> pending;
    size_t dropped = 0;
    std::atomic<bool> hasPending{ false };
};

// Never destroyed: C++ objects freed during interpreter shutdown (after the
// module's globals are gone) may still log.
LogQueue&
logQueue()
{
    static LogQueue* queue = new LogQueue();
    return *queue;
}

void
enqueue(logger::Level level, const std::string& message)
{
    LogQueue& queue = logQueue();
    std::lock_guard<std::mutex> lock(queue.mutex);
    if (queue.pending.size() >= kMaxPending) {
        ++queue.dropped;
    } else {
        queue.pending.emplace_back(level, message);
    }
    queue.hasPending.store(true, std::memory_order_release);
}

bool
interpreterUsable()
{
    if (!Py_IsInitialized()) {
        return false;
    }
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsFinalizing();
#else
    return !_Py_IsFinalizing();
#endif
}

void
emit(PyObject* log, int level, const std::string& message)
{
    PyObject* text = PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
    if (text == nullptr) {
        PyErr_Clear();
        return;
    }
    // logger.log(level, message): without arguments the message is not
    // %-formatted, so '%' in a message is safe.
    PyObject* result = PyObject_CallFunction(log, "iO", level, text);
    Py_DECREF(text);
    if (result == nullptr) {
        PyErr_WriteUnraisable(log);
    } else {
        Py_DECREF(result);
    }
}

} // namespace

int
pythonLevel(logger::Level level)
{
    switch (level) {
        case logger::Level::Trace: return 5;
        case logger::Level::Debug: return 10;
        case logger::Level::Info: return 20;
        case logger::Level::Warn: return 30;
        case logger::Level::Error: return 40;
        case logger::Level::Critical: return 50;
        case logger::Level::Off: return 60;
    }
    return 30;
}

logger::Level
nativeLevel(int level)
{
    if (level <= 5) return logger::Level::Trace;
    if (level <= 10) return logger::Level::Debug;
    if (level <= 20) return logger::Level::Info;
    if (level <= 30) return logger::Level::Warn;
    if (level <= 40) return logger::Level::Error;
    if (level <= 50) return logger::Level::Critical;
    return logger::Level::Off;
}

void
installLogSink()
{
    logger::setSink(enqueue);
}

void
flushLog() noexcept
{
    LogQueue& queue = logQueue();
    if (!queue.hasPending.load(std::memory_order_acquire) || !interpreterUsable()) {
        return;
    }
    std::vector<std::pair<logger::Level, std::string>> messages;
    size_t dropped = 0;
    try {
        std::lock_guard<std::mutex> lock(queue.mutex);
        messages.swap(queue.pending);
        dropped = queue.dropped;
        queue.dropped = 0;
        queue.hasPending.store(false, std::memory_order_release);
    } catch (...) {
        return;
    }

    // Keep an exception being raised by the bound call intact.
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);

    PyObject* logging = PyImport_ImportModule("logging");
    PyObject* kpLogger =
      logging != nullptr ? PyObject_CallMethod(logging, "getLogger", "s", "kp") : nullptr;
    PyObject* log = kpLogger != nullptr ? PyObject_GetAttrString(kpLogger, "log") : nullptr;
    if (log == nullptr) {
        PyErr_Clear();
    } else {
        if (dropped > 0) {
            emit(log,
                 30,
                 std::to_string(dropped) +
                   " Kompute log messages were dropped: too many were logged "
                   "before Python could receive them");
        }
        for (const auto& [level, message] : messages) {
            emit(log, pythonLevel(level), message);
        }
    }
    Py_XDECREF(log);
    Py_XDECREF(kpLogger);
    Py_XDECREF(logging);

    PyErr_Restore(type, value, traceback);
}

} // namespace python
} // namespace kp
