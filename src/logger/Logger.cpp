// SPDX-License-Identifier: Apache-2.0
#include "kompute/logger/Logger.hpp"

#include "kompute/Errors.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace kp {
namespace logger {

namespace {

Level
levelFromEnvironment()
{
    const char* value = std::getenv("KOMPUTE_LOG_LEVEL");
    if (value == nullptr || *value == '\0') {
        return Level::Warn;
    }
    try {
        return parseLevel(value);
    } catch (const Error&) {
        std::fprintf(stderr,
                     "[kompute] KOMPUTE_LOG_LEVEL='%s' is not a level "
                     "(trace, debug, info, warn, error, critical, off); "
                     "using warn\n",
                     value);
        return Level::Warn;
    }
}

std::atomic<int>&
currentLevel()
{
    static std::atomic<int> level{ static_cast<int>(levelFromEnvironment()) };
    return level;
}

struct SinkHolder
{
    std::mutex mutex;
    Sink sink;
};

SinkHolder&
sinkHolder()
{
    static SinkHolder holder;
    return holder;
}

void
writeToStderr(Level level, const std::string& message)
{
    auto now = std::chrono::system_clock::now();
    std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm local{};
    localtime_r(&seconds, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &local);
    std::fprintf(
      stderr, "[%s] [kompute] [%s] %s\n", stamp, levelName(level), message.c_str());
}

} // namespace

void
setupLogger()
{
    currentLevel().store(static_cast<int>(levelFromEnvironment()));
}

void
setLogLevel(Level level)
{
    currentLevel().store(static_cast<int>(level));
}

Level
getLogLevel()
{
    return static_cast<Level>(currentLevel().load());
}

Level
parseLevel(std::string_view name)
{
    std::string lower;
    for (char c : name) {
        lower.push_back(
          static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    if (lower == "trace") return Level::Trace;
    if (lower == "debug") return Level::Debug;
    if (lower == "info") return Level::Info;
    if (lower == "warn" || lower == "warning") return Level::Warn;
    if (lower == "error") return Level::Error;
    if (lower == "critical") return Level::Critical;
    if (lower == "off") return Level::Off;
    throw Error("Unknown log level '" + std::string(name) +
                "': use trace, debug, info, warn, error, critical or off");
}

const char*
levelName(Level level)
{
    switch (level) {
        case Level::Trace: return "trace";
        case Level::Debug: return "debug";
        case Level::Info: return "info";
        case Level::Warn: return "warn";
        case Level::Error: return "error";
        case Level::Critical: return "critical";
        case Level::Off: return "off";
    }
    return "unknown";
}

void
setSink(Sink sink)
{
    auto& holder = sinkHolder();
    std::lock_guard<std::mutex> lock(holder.mutex);
    holder.sink = std::move(sink);
}

bool
isEnabled(Level level)
{
    return level != Level::Off &&
           static_cast<int>(level) >= currentLevel().load(std::memory_order_relaxed);
}

void
write(Level level, const std::string& message)
{
    auto& holder = sinkHolder();
    Sink sink;
    {
        std::lock_guard<std::mutex> lock(holder.mutex);
        sink = holder.sink;
    }
    // Called outside the lock so a sink may itself log or change the sink.
    if (sink) {
        sink(level, message);
    } else {
        writeToStderr(level, message);
    }
}

} // namespace logger
} // namespace kp
