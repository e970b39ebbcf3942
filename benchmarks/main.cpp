// SPDX-License-Identifier: Apache-2.0
// kompute-bench: runs the benchmark suite, prints a table (Kompute against
// the raw-Vulkan baseline measured in the same process) and optionally
// writes JSON and a plot.
//
//   kompute-bench [--quick] [--repetitions N] [--filter TEXT[,TEXT...]]
//                 [--device N] [--json FILE] [--plot FILE.png]
//
// --plot draws the results with tools/plot_bench.py (installed as
// share/kompute/plot_bench.py) and matplotlib, through the interpreter
// $KOMPUTE_BENCH_PYTHON (default python3); both are checked before any case
// runs.
//
// Case (i) also runs a Python interpreter: KOMPUTE_BENCH_PYTHON and
// KOMPUTE_BENCH_PYTHON_SCRIPT choose it and its script (cases/Python.cpp).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#ifndef _WIN32
#include <sys/wait.h>
#endif

#include "CallCounters.hpp"
#include "Harness.hpp"
#include "Scripts.hpp"

namespace {

std::string
jsonEscape(const std::string& text)
{
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

void
writeJson(const std::string& path,
          const bench::Measurements& measurements,
          const std::string& deviceName,
          bool quick)
{
    std::ofstream out(path);
    out << "{\n  \"device\": \"" << jsonEscape(deviceName) << "\",\n  \"quick\": "
        << (quick ? "true" : "false") << ",\n  \"measurements\": [\n";
    for (size_t i = 0; i < measurements.size(); ++i) {
        const auto& m = measurements[i];
        out << "    {\"case\": \"" << jsonEscape(m.caseName) << "\", \"variant\": \""
            << jsonEscape(m.variant) << "\", \"metric\": \"" << jsonEscape(m.metric)
            << "\", \"higher_is_better\": " << (m.higherIsBetter ? "true" : "false")
            << ", \"over_kompute\": " << (m.overKompute ? "true" : "false")
            << ", \"median\": " << std::setprecision(9) << m.median() << ", \"samples\": [";
        for (size_t s = 0; s < m.samples.size(); ++s) {
            out << (s ? ", " : "") << m.samples[s];
        }
        out << "], \"notes\": {";
        size_t n = 0;
        for (const auto& [key, value] : m.notes) {
            out << (n++ ? ", " : "") << "\"" << jsonEscape(key) << "\": \"" << jsonEscape(value)
                << "\"";
        }
        out << "}}" << (i + 1 < measurements.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
    if (!out) {
        throw std::runtime_error("cannot write " + path);
    }
}

// Prints one row per case and metric: each variant's median, and each
// variant's ratio to the Kompute figure. Variants that run over Kompute
// (Python) get a line below the table with what they add to it, which is
// the figure of interest there.
void
printTable(const bench::Measurements& measurements)
{
    std::cout << std::left << std::setw(30) << "case" << std::setw(28) << "metric" << std::setw(42)
              << "variant" << std::right << std::setw(14) << "median" << std::setw(12)
              << "vs kompute" << std::setw(6) << "n" << "\n";
    std::map<std::pair<std::string, std::string>, double> komputeMedian;
    for (const auto& m : measurements) {
        if (m.variant == "kompute" && !m.samples.empty()) {
            komputeMedian[{ m.caseName, m.metric }] = m.median();
        }
    }
    std::ostringstream overKompute;
    for (const auto& m : measurements) {
        auto key = std::make_pair(m.caseName, m.metric);
        std::ostringstream median;
        std::ostringstream ratio;
        auto it = komputeMedian.find(key);
        if (m.samples.empty()) {
            median << "-";
            ratio << (m.notes.count("skipped") ? "skipped" : "");
        } else {
            median << std::setprecision(4) << m.median();
        }
        if (m.variant != "kompute" && it != komputeMedian.end() && m.median() > 0) {
            // Reported as "how many times the baseline Kompute's figure is":
            // for times, Kompute/baseline; for rates, baseline/Kompute.
            double r = m.higherIsBetter ? m.median() / it->second : it->second / m.median();
            ratio << std::fixed << std::setprecision(2) << r << "x";
            if (m.overKompute) {
                // The other way round: what the variant costs over Kompute.
                overKompute << "  " << m.caseName << " " << m.metric << ": " << m.variant << " "
                            << std::fixed << std::setprecision(2) << 1.0 / r << "x kompute ("
                            << std::showpos << m.median() - it->second
                            << std::noshowpos << " " << m.metric << ")\n";
            }
        }
        std::cout << std::left << std::setw(30) << m.caseName << std::setw(28) << m.metric
                  << std::setw(42) << m.variant << std::right << std::setw(14) << median.str()
                  << std::setw(12) << ratio.str() << std::setw(6) << m.samples.size() << "\n";
    }
    std::cout << "(vs kompute: Kompute's time over the baseline's, or the baseline's rate over "
                 "Kompute's; below 1 means Kompute is faster)\n";
    if (!overKompute.str().empty()) {
        std::cout << "over kompute (a variant running on top of Kompute: its time over Kompute's, "
                     "and the difference):\n"
                  << overKompute.str();
    }
}

/** Whether a case runs under --filter: a comma-separated list of
 * substrings of case names, any of which selects a case (empty: all). */
bool
matchesFilter(const std::string& name, const std::string& filter)
{
    if (filter.empty()) {
        return true;
    }
    size_t start = 0;
    while (start <= filter.size()) {
        size_t end = filter.find(',', start);
        std::string part = filter.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!part.empty() && name.find(part) != std::string::npos) {
            return true;
        }
        if (end == std::string::npos) {
            break;
        }
        start = end + 1;
    }
    return false;
}

/** Why `python` cannot draw the plot with `script`, or "" if it can. */
std::string
plotProblem(const std::string& python, const std::string& script)
{
    if (!std::ifstream(script).good()) {
        return "the plot script is missing: no " + script;
    }
    std::string probe = bench::shellQuote(python) + " -c 'import matplotlib' >/dev/null 2>&1";
    int status = std::system(probe.c_str());
    if (status == 0) {
        return "";
    }
#ifndef _WIN32
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126)) {
        return "it draws with Python and matplotlib, and there is no interpreter " + python +
               ": install Python 3 with matplotlib, or set KOMPUTE_BENCH_PYTHON to one that has it";
    }
#endif
    return "it needs matplotlib, which " + python + " cannot import: `" + python +
           " -m pip install matplotlib` (or `pip install kp[plot]` where the kp module is "
           "installed), or set KOMPUTE_BENCH_PYTHON to an interpreter that has it";
}

int
usage()
{
    std::cerr << "usage: kompute-bench [--quick] [--repetitions N] [--filter TEXT[,TEXT...]] [--device N] "
                 "[--json FILE] [--plot FILE.png] [--list]\n";
    return 2;
}

} // namespace

int
main(int argc, char** argv)
{
    bench::countKomputeVulkanCalls();
    bench::Options options;
    std::string jsonPath;
    std::string plotPath;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                throw std::runtime_error(arg + " needs a value");
            }
            return argv[++i];
        };
        try {
            if (arg == "--quick") {
                options.quick = true;
                options.repetitions = 2;
            } else if (arg == "--repetitions") {
                options.repetitions = std::stoi(next());
            } else if (arg == "--filter") {
                options.filter = next();
            } else if (arg == "--device") {
                options.device = static_cast<uint32_t>(std::stoul(next()));
            } else if (arg == "--json") {
                jsonPath = next();
            } else if (arg == "--plot") {
                plotPath = next();
            } else if (arg == "--list") {
                list = true;
            } else {
                return usage();
            }
        } catch (const std::exception& error) {
            std::cerr << error.what() << "\n";
            return usage();
        }
    }
    if (list) {
        for (const auto& c : bench::cases()) {
            std::cout << c.name << ": " << c.description << "\n";
        }
        return 0;
    }

    // The plot is drawn from the JSON: without --json it goes beside the
    // picture. What drawing needs is checked now, not after a long run.
    std::string python = bench::pythonInterpreter();
    std::string plotScript = bench::scriptPath("plot_bench.py", KOMPUTE_BENCH_PLOT_SCRIPT);
    if (!plotPath.empty()) {
        if (jsonPath.empty()) {
            jsonPath = std::filesystem::path(plotPath).replace_extension(".json").string();
        }
        std::string problem = plotProblem(python, plotScript);
        if (!problem.empty()) {
            std::cerr << "--plot: " << problem
                      << ". (Without --plot, --json FILE keeps the results; `" << python << " "
                      << plotScript << " OUT.png FILE` draws them later.)\n";
            return 2;
        }
    }

    kp::Manager manager(options.device);
    std::string deviceName = manager.getDeviceProperties().deviceName.data();
    std::cout << "kompute-bench on " << deviceName << (options.quick ? " (quick mode)" : "") << "\n";
    bench::Context context(options, manager);
    int failures = 0;
    for (const auto& c : bench::cases()) {
        if (!matchesFilter(c.name, options.filter)) {
            continue;
        }
        std::cout << "running " << c.name << ": " << c.description << std::endl;
        try {
            c.run(context);
        } catch (const std::exception& error) {
            std::cerr << "case " << c.name << " failed: " << error.what() << "\n";
            ++failures;
        }
    }
    printTable(context.measurements());
    if (!jsonPath.empty()) {
        writeJson(jsonPath, context.measurements(), deviceName, options.quick);
        std::cout << "wrote " << jsonPath << "\n";
        if (!plotPath.empty()) {
            std::string command = bench::shellQuote(python) + " " + bench::shellQuote(plotScript) +
                                  " " + bench::shellQuote(plotPath) + " " +
                                  bench::shellQuote(jsonPath);
            std::cout << std::flush;
            if (std::system(command.c_str()) != 0) {
                std::cerr << "plotting failed: " << command << "\n";
                ++failures;
            }
        }
    }
    return failures == 0 ? 0 : 1;
}
