// SPDX-License-Identifier: Apache-2.0
// Case (i): what the Python module kp adds to each evaluation. Case (a)'s
// loop (and case (b)'s one-liner) runs here in C++ and, through kp, in
// benchmarks/python/eval_overhead.py, run as a subprocess: Python's figure
// over Kompute's is the per-eval cost of the binding and the interpreter.
//
// The interpreter is $KOMPUTE_BENCH_PYTHON (default python3), which must
// import numpy and kp; the script is $KOMPUTE_BENCH_PYTHON_SCRIPT, by
// default the installed copy (share/kompute) or the one in this source tree
// (compiled in), so that a relocated bundle can point at its own copy. Without either, the case is skipped:
// the Python module is optional, and its absence is no failure of the run.
#include "../Harness.hpp"
#include "../Scripts.hpp"
#include "Fixtures.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef _WIN32
#include <sys/wait.h>
#endif

namespace bench {
namespace {

const char* kCase = "i_python_overhead";
const char* kEvalMetric = "us_per_eval";
const char* kOneLinerMetric = "us_per_one_liner";
// The same loops' CPU time (the process's), which a loaded machine
// disturbs less than the elapsed time: what the binding adds shows there.
const char* kEvalCpuMetric = "cpu_us_per_eval";
const char* kOneLinerCpuMetric = "cpu_us_per_one_liner";
const char* const kMetrics[] = { kEvalMetric, kEvalCpuMetric, kOneLinerMetric, kOneLinerCpuMetric };

// What eval_overhead.py printed, read line by line (see its docstring).
struct ScriptOutput
{
    std::map<std::string, std::vector<double>> samples; // by metric
    std::string device;
    std::string spirv;      // "WORDS CHECKSUM"
    std::string skipReason; // set when it printed "skip ..."
    std::vector<std::string> malformed;
    std::deque<std::string> otherLines; // the last few, for error messages
    std::string status;                 // how it ended, in words
    int exitCode = -1;                  // -1: did not exit normally

    bool exitedWith(int code) const { return exitCode == code; }
};

void
parseLine(const std::string& line, ScriptOutput& output)
{
    std::istringstream in(line);
    std::string keyword;
    in >> keyword;
    auto rest = [&] {
        std::string text;
        std::getline(in >> std::ws, text);
        return text;
    };
    if (keyword == "sample") {
        std::string metric, number, extra;
        in >> metric >> number >> extra;
        char* end = nullptr;
        double value = number.empty() ? 0.0 : std::strtod(number.c_str(), &end);
        // A sample must be a positive finite number and nothing after it.
        if (metric.empty() || number.empty() || end != number.c_str() + number.size() ||
            !extra.empty() || !std::isfinite(value) || value <= 0.0) {
            output.malformed.push_back(line);
        } else {
            output.samples[metric].push_back(value);
        }
    } else if (keyword == "device") {
        output.device = rest();
    } else if (keyword == "spirv") {
        output.spirv = rest();
    } else if (keyword == "skip") {
        output.skipReason = rest();
    } else if (!line.empty()) {
        // Anything else (a traceback, a build message of an editable kp
        // install) is only kept for the error message.
        output.otherLines.push_back(line);
        if (output.otherLines.size() > 15) {
            output.otherLines.pop_front();
        }
    }
}

ScriptOutput
runScript(const std::string& python, const std::string& script, const std::vector<std::string>& arguments)
{
    ScriptOutput output;
#ifdef _WIN32
    (void)python;
    (void)script;
    (void)arguments;
    output.skipReason = "running the Python script is implemented for POSIX shells only";
#else
    std::string command = shellQuote(python) + " " + shellQuote(script);
    for (const auto& argument : arguments) {
        command += " " + shellQuote(argument);
    }
    // stderr joins stdout so that a traceback can be reported; the parser
    // keeps only the lines it knows.
    command += " 2>&1";
    std::cout << std::flush;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
        throw std::runtime_error(std::string("cannot start the shell for ") + command + ": " +
                                 std::strerror(errno));
    }
    std::string line;
    char buffer[4096];
    while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
        line += buffer;
        if (!line.empty() && line.back() == '\n') {
            while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
                line.pop_back();
            }
            parseLine(line, output);
            line.clear();
        }
    }
    if (!line.empty()) {
        parseLine(line, output);
    }
    int status = pclose(pipe);
    if (status == -1) {
        output.status = std::string("its status is unknown (") + std::strerror(errno) + ")";
    } else if (WIFEXITED(status)) {
        output.exitCode = WEXITSTATUS(status);
        output.status = "it exited with status " + std::to_string(output.exitCode);
    } else if (WIFSIGNALED(status)) {
        output.status = "it was killed by signal " + std::to_string(WTERMSIG(status));
    } else {
        output.status = "it ended with wait status " + std::to_string(status);
    }
#endif
    return output;
}

std::string
describe(const ScriptOutput& output, const std::string& python, const std::string& script)
{
    std::ostringstream text;
    text << python << " " << script << ": " << output.status;
    for (const auto& line : output.malformed) {
        text << "\n  unreadable line: " << line;
    }
    if (!output.otherLines.empty()) {
        text << "\n  its last other lines:";
        for (const auto& line : output.otherLines) {
            text << "\n  " << line;
        }
    }
    return text.str();
}

} // namespace

BENCH_CASE("i_python_overhead", "case (a)'s eval loop and case (b)'s one-liner through the Python module vs C++")
{
    kp::Manager& mgr = context.manager();
    bool quick = context.quick();
    int iterations = evalIterations(quick);
    int oneLiners = oneLinerIterations(quick);
    int warmup = evalWarmup(quick);

    std::string python = pythonInterpreter();
    std::string script = environmentOr(
      "KOMPUTE_BENCH_PYTHON_SCRIPT", scriptPath("eval_overhead.py", KOMPUTE_BENCH_PYTHON_SCRIPT));
    std::vector<std::string> common = { "--device", std::to_string(context.options().device) };
    if (quick) {
        common.push_back("--quick");
    }

    // Skipping leaves an empty "python" measurement with the reason, so that
    // the table and the JSON say why the case has no figures.
    auto skip = [&](const std::string& reason) {
        std::cout << kCase << " skipped: " << reason << std::endl;
        for (const char* metric : kMetrics) {
            auto& measurement = context.add(kCase, "python", metric, false);
            measurement.overKompute = true;
            measurement.notes["skipped"] = reason;
        }
    };
    if (!std::ifstream(script).good()) {
        skip("no script at " + script + " (set KOMPUTE_BENCH_PYTHON_SCRIPT)");
        return;
    }

    // A first run that only builds the fixture: it finds out cheaply whether
    // kp can be used at all, and whether its fixture is ours.
    std::vector<std::string> check = common;
    check.push_back("--check");
    ScriptOutput probe = runScript(python, script, check);
    if (!probe.skipReason.empty()) {
        skip(probe.skipReason);
        return;
    }
    if (probe.exitedWith(127) || probe.exitedWith(126)) {
        // The shell's "not found" / "not executable".
        skip("cannot run the interpreter " + python + ", " + probe.status +
             (probe.otherLines.empty() ? "" : " (" + probe.otherLines.back() + ")") +
             "; set KOMPUTE_BENCH_PYTHON");
        return;
    }
    if (!probe.exitedWith(0)) {
        throw std::runtime_error("the Python script failed: " + describe(probe, python, script));
    }
    Fixture fixture(mgr);
    std::string deviceName = mgr.getDeviceProperties().deviceName.data();
    std::string spirv = std::to_string(fixture.spirv.size()) + " ";
    {
        char checksum[16];
        std::snprintf(checksum, sizeof(checksum), "%08x", spirvChecksum(fixture.spirv));
        spirv += checksum;
    }
    if (probe.device != deviceName) {
        throw std::runtime_error("the Python script runs on \"" + probe.device + "\", not on \"" +
                                 deviceName + "\": its figures would not be comparable");
    }
    if (probe.spirv != spirv) {
        throw std::runtime_error("the Python script's shader compiles to SPIR-V \"" + probe.spirv +
                                 "\" (words, FNV-1a), ours to \"" + spirv +
                                 "\": keep INCREMENT in eval_overhead.py equal to kIncrement");
    }

    auto sequence = mgr.sequence();
    sequence->record<kp::OpAlgoDispatch>(fixture.algorithm);
    auto& kompute = context.add(kCase, "kompute", kEvalMetric, false);
    auto& komputeCpu = context.add(kCase, "kompute", kEvalCpuMetric, false);
    auto& komputeOneLiner = context.add(kCase, "kompute", kOneLinerMetric, false);
    auto& komputeOneLinerCpu = context.add(kCase, "kompute", kOneLinerCpuMetric, false);
    auto sampleCpp = [&](int count, int warmupRuns) {
        // Interleaved like the Python script's loops, which mirror these.
        for (int s = 0; s < count; ++s) {
            sampleWithCpu(kompute, komputeCpu, s == 0 ? warmupRuns : 0, 1e6 / iterations, [&] {
                for (int i = 0; i < iterations; ++i) {
                    sequence->eval();
                }
            });
            sampleWithCpu(komputeOneLiner, komputeOneLinerCpu, s == 0 ? warmupRuns : 0, 1e6 / oneLiners, [&] {
                for (int i = 0; i < oneLiners; ++i) {
                    mgr.sequence()->record<kp::OpAlgoDispatch>(fixture.algorithm)->eval();
                }
            });
        }
    };

    // Each variant gets repetitions() samples, spread over a few rounds; in
    // each round the C++ samples are split around the Python run, so that a
    // drift of the machine during the case affects both alike. Each Python
    // run is a fresh process and warms up on its own.
    int repetitions = context.repetitions();
    int rounds = std::min(repetitions, quick ? 2 : 3);
    std::map<std::string, std::vector<double>> pythonSamples;
    for (int round = 0; round < rounds; ++round) {
        int count = repetitions / rounds + (round < repetitions % rounds ? 1 : 0);
        sampleCpp((count + 1) / 2, round == 0 ? warmup : 0);

        std::vector<std::string> arguments = common;
        arguments.insert(arguments.end(),
                         { "--iterations", std::to_string(iterations),
                           "--one-liner-iterations", std::to_string(oneLiners),
                           "--warmup", std::to_string(warmup),
                           "--repetitions", std::to_string(count) });
        ScriptOutput run = runScript(python, script, arguments);
        if (!run.exitedWith(0) || !run.skipReason.empty() || !run.malformed.empty()) {
            throw std::runtime_error("the Python script failed in round " + std::to_string(round + 1) +
                                     ": " + describe(run, python, script));
        }
        for (const char* metric : kMetrics) {
            const auto& values = run.samples[metric];
            if (values.size() != static_cast<size_t>(count)) {
                throw std::runtime_error("the Python script printed " + std::to_string(values.size()) +
                                         " samples of " + metric + ", not " + std::to_string(count) +
                                         ": " + describe(run, python, script));
            }
            auto& all = pythonSamples[metric];
            all.insert(all.end(), values.begin(), values.end());
        }

        sampleCpp(count / 2, 0);
    }

    for (auto* cpp : { &kompute, &komputeCpu, &komputeOneLiner, &komputeOneLinerCpu }) {
        auto& measurement = context.add(kCase, "python", cpp->metric, false);
        measurement.samples = pythonSamples[cpp->metric];
        measurement.overKompute = true;
        measurement.notes["interpreter"] = python;
        measurement.notes["script"] = script;
    }
}

} // namespace bench
