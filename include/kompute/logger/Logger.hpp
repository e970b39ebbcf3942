// SPDX-License-Identifier: Apache-2.0
/** \file
 * Logging with the level chosen at run time: the KP_LOG_* macros and
 * kp::logger. Every function here may be called from any thread.
 */
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
/** Kompute's logging: a process-wide level (from KOMPUTE_LOG_LEVEL, or
 * setLogLevel) and sink (stderr, or setSink). */
namespace logger {

/** Severity of a message, and the threshold below which messages are
 * dropped (Off drops all). */
enum class Level
{
    Trace = 0,    ///< every step (very verbose)
    Debug = 1,    ///< details for debugging
    Info = 2,     ///< what Kompute set up (device, queues, ...)
    Warn = 3,     ///< something was skipped or adjusted (the default threshold)
    Error = 4,    ///< an operation failed (also validation errors)
    Critical = 5, ///< the program cannot go on
    Off = 6,      ///< no messages
};

/** Receives every message at or above the current level. Called on the
 * thread that logs, outside any lock of the logger (it may itself log or
 * call setSink); must be safe to call from several threads at once. */
using Sink = std::function<void(Level, const std::string&)>;

/** Reads KOMPUTE_LOG_LEVEL again. Called lazily; kept for upstream code.
 * An unknown value is reported on stderr and means warn. */
void setupLogger();
/** Sets the threshold for the whole process (it overrides
 * KOMPUTE_LOG_LEVEL). */
void setLogLevel(Level level);
/** The current threshold. */
Level getLogLevel();
/** Parses "trace", "debug", "info", "warn" (or "warning"), "error",
 * "critical", "off" (any case); throws kp::Error on anything else. */
Level parseLevel(std::string_view name);
/** "trace", "debug", ... "off" ("unknown" for other values). */
const char* levelName(Level level);
/** Replaces the sink; an empty function restores the default (stderr, with
 * a time stamp and the level). */
void setSink(Sink sink);

/** Whether a message of `level` would be written (level is not Off and at
 * least the threshold). */
bool isEnabled(Level level);
/** Hands `message` to the sink, whatever the threshold (log() checks it). */
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

/** Formats and writes a message of `level` if isEnabled(level): nothing is
 * formatted otherwise. What the KP_LOG_* macros call. */
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

/** Logs a trace message: KP_LOG_TRACE("copied {} bytes", n). */
#define KP_LOG_TRACE(...) ::kp::logger::log(::kp::logger::Level::Trace, __VA_ARGS__)
/** Logs a debug message (format string with {} placeholders, then the
 * arguments). */
#define KP_LOG_DEBUG(...) ::kp::logger::log(::kp::logger::Level::Debug, __VA_ARGS__)
/** Logs an info message. */
#define KP_LOG_INFO(...) ::kp::logger::log(::kp::logger::Level::Info, __VA_ARGS__)
/** Logs a warning. */
#define KP_LOG_WARN(...) ::kp::logger::log(::kp::logger::Level::Warn, __VA_ARGS__)
/** Logs an error. */
#define KP_LOG_ERROR(...) ::kp::logger::log(::kp::logger::Level::Error, __VA_ARGS__)
