// SPDX-License-Identifier: Apache-2.0
// Where kompute-bench finds the Python interpreter and the scripts it runs
// (case i's eval_overhead.py, the plot's plot_bench.py), in a build tree and
// once installed.
#pragma once

#include <string>

namespace bench {

/** The environment variable `name`, or `fallback` where it is unset or empty. */
std::string environmentOr(const char* name, const std::string& fallback);

/** `word` quoted for a POSIX shell. */
std::string shellQuote(const std::string& word);

/** The interpreter that runs the Python scripts: $KOMPUTE_BENCH_PYTHON,
 * default python3. */
std::string pythonInterpreter();

/** A script kompute-bench ships: the installed copy beside the program
 * (<prefix>/share/kompute/<fileName>, found from the program's own path) if
 * there is one, else `sourcePath` (the build tree's copy). */
std::string scriptPath(const std::string& fileName, const std::string& sourcePath);

} // namespace bench
