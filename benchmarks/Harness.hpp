// SPDX-License-Identifier: Apache-2.0
// A small benchmark harness: each case measures the same work through
// Kompute and through a hand-written Vulkan (or CUDA) baseline, in the same
// process, so that the ratio is meaningful on a noisy shared machine.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <kompute/Kompute.hpp>

namespace bench {

/** One measured quantity of a case: the same metric for each variant
 * ("kompute", "raw", ...). */
struct Measurement
{
    std::string caseName;  // e.g. "a_eval_roundtrip"
    std::string variant;   // "kompute", "raw_vulkan", "cuda", ...
    std::string metric;    // e.g. "us_per_eval", "GB/s"
    bool higherIsBetter = false;
    // A variant that runs Kompute underneath (the Python module) rather than
    // a baseline in its place: the table also reports what it adds to
    // Kompute's figure.
    bool overKompute = false;
    std::vector<double> samples; // none if skipped: notes["skipped"] says why
    std::map<std::string, std::string> notes;

    double median() const;
    double minimum() const;
};

struct Options
{
    bool quick = false;    // sanity sizes and few repetitions (CI on lavapipe)
    int repetitions = 7;   // samples per measurement
    std::string filter;    // substring of case names to run
    uint32_t device = 0;   // physical device index (for subprocesses: case i)
};

// A deque, so that references returned by Context::add stay valid.
using Measurements = std::deque<Measurement>;

/** What a case gets: the options, a Manager, and where to put results. */
class Context
{
  public:
    Context(const Options& options, kp::Manager& manager);
    const Options& options() const { return mOptions; }
    kp::Manager& manager() { return mManager; }
    bool quick() const { return mOptions.quick; }
    int repetitions() const { return mOptions.repetitions; }

    Measurement& add(const std::string& caseName,
                     const std::string& variant,
                     const std::string& metric,
                     bool higherIsBetter);
    const Measurements& measurements() const { return mMeasurements; }

  private:
    const Options& mOptions;
    kp::Manager& mManager;
    Measurements mMeasurements;
};

/** Seconds taken by `work`, on the host's steady clock. */
double secondsOf(const std::function<void()>& work);

/** Runs `work` `warmup` times, then `repetitions` times, recording
 * work's seconds divided by `perSample` each time (e.g. per iteration). */
void sample(Measurement& measurement,
            int warmup,
            int repetitions,
            double scale,
            const std::function<void()>& work);

/** CPU seconds used by the whole process so far (all its threads, the
 * driver's included). */
double processCpuSeconds();

/** Like sample(), recording into `wall` the elapsed time and into `cpu`
 * the CPU time the process used meanwhile, both times `scale`. */
void sampleWithCpu(Measurement& wall,
                   Measurement& cpu,
                   int warmup,
                   double scale,
                   const std::function<void()>& work);

using CaseFunction = std::function<void(Context&)>;

struct Case
{
    std::string name;
    std::string description;
    CaseFunction run;
};

/** The registry that cases add themselves to (see BENCH_CASE). */
std::vector<Case>& cases();

struct Registrar
{
    Registrar(const char* name, const char* description, CaseFunction run);
};

std::vector<uint32_t> compile(const std::string& glsl);

} // namespace bench

#define BENCH_CONCAT_INNER(a, b) a##b
#define BENCH_CONCAT(a, b) BENCH_CONCAT_INNER(a, b)
#define BENCH_CASE(name, description)                                                 \
    static void BENCH_CONCAT(benchCase_, __LINE__)(::bench::Context&);                 \
    static ::bench::Registrar BENCH_CONCAT(benchRegistrar_, __LINE__)(                 \
      name, description, &BENCH_CONCAT(benchCase_, __LINE__));                         \
    static void BENCH_CONCAT(benchCase_, __LINE__)(::bench::Context & context)
