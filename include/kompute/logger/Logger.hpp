// SPDX-License-Identifier: Apache-2.0
// Logging with the level chosen at run time.
//
// The KP_LOG_* macros take a format string with "{}" placeholders followed by
// arguments (anything that can be written to a std::ostream). The level comes
// from the environment variable KOMPUTE_LOG_LEVEL (trace, debug, info, warn,
// error, critical, off) and can be changed with kp::logger::setLogLevel. The
// default sink writes to stderr; a host (the Python module, an app) can send
// messages elsewhere with setSink.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace kp {
namespace logger {

enum class Level
{
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
    Critical = 5,
    Off = 6,
};

/** Receives every message at or above the current level. */
using Sink = std::function<void(Level, const std::string&)>;

/** Reads KOMPUTE_LOG_LEVEL again. Called lazily; kept for upstream code. */
void setupLogger();
void setLogLevel(Level level);
Level getLogLevel();
/** Parses "trace", "debug", "info", "warn", "error", "critical", "off"
 * (any case); throws kp::Error on anything else. */
Level parseLevel(std::string_view name);
const char* levelName(Level level);
/** Replaces the sink; an empty function restores the default (stderr). */
void setSink(Sink sink);

bool isEnabled(Level level);
void write(Level level, const std::string& message);

namespace detail {

inline void formatInto(std::ostringstream& out, std::string_view fmt)
{
    out << fmt;
}

// Replaces the next "{...}" of fmt by the argument; "{{" and "}}" are
// literal braces. Format specs inside the braces are accepted and ignored.
template<typename Arg, typename... Rest>
void
formatInto(std::ostringstream& out,
           std::string_view fmt,
           const Arg& arg,
           const Rest&... rest)
{
    for (size_t i = 0; i < fmt.size(); ++i) {
        char c = fmt[i];
        if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
            out << c;
            ++i;
            continue;
        }
        if (c == '{') {
            size_t close = fmt.find('}', i);
            if (close == std::string_view::npos) {
                break;
            }
            out << arg;
            formatInto(out, fmt.substr(close + 1), rest...);
            return;
        }
        out << c;
    }
}

} // namespace detail

/** "{}"-style formatting, as used by the KP_LOG_* macros. */
template<typename... Args>
std::string
format(std::string_view fmt, const Args&... args)
{
    std::ostringstream out;
    detail::formatInto(out, fmt, args...);
    return out.str();
}

template<typename... Args>
void
log(Level level, std::string_view fmt, const Args&... args)
{
    if (isEnabled(level)) {
        write(level, format(fmt, args...));
    }
}

} // namespace logger
} // namespace kp

#define KP_LOG_TRACE(...) ::kp::logger::log(::kp::logger::Level::Trace, __VA_ARGS__)
#define KP_LOG_DEBUG(...) ::kp::logger::log(::kp::logger::Level::Debug, __VA_ARGS__)
#define KP_LOG_INFO(...) ::kp::logger::log(::kp::logger::Level::Info, __VA_ARGS__)
#define KP_LOG_WARN(...) ::kp::logger::log(::kp::logger::Level::Warn, __VA_ARGS__)
#define KP_LOG_ERROR(...) ::kp::logger::log(::kp::logger::Level::Error, __VA_ARGS__)
