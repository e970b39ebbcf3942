// SPDX-License-Identifier: Apache-2.0
#include "Harness.hpp"

#include <algorithm>
#include <ctime>

namespace bench {

double
Measurement::median() const
{
    if (samples.empty()) {
        return 0.0;
    }
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    size_t middle = sorted.size() / 2;
    return sorted.size() % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
}

double
Measurement::minimum() const
{
    return samples.empty() ? 0.0 : *std::min_element(samples.begin(), samples.end());
}

Context::Context(const Options& options, kp::Manager& manager)
  : mOptions(options)
  , mManager(manager)
{
}

Measurement&
Context::add(const std::string& caseName,
             const std::string& variant,
             const std::string& metric,
             bool higherIsBetter)
{
    Measurement measurement;
    measurement.caseName = caseName;
    measurement.variant = variant;
    measurement.metric = metric;
    measurement.higherIsBetter = higherIsBetter;
    mMeasurements.push_back(measurement);
    return mMeasurements.back();
}

double
secondsOf(const std::function<void()>& work)
{
    auto start = std::chrono::steady_clock::now();
    work();
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(end - start).count();
}

void
sample(Measurement& measurement,
       int warmup,
       int repetitions,
       double scale,
       const std::function<void()>& work)
{
    for (int i = 0; i < warmup; ++i) {
        work();
    }
    for (int i = 0; i < repetitions; ++i) {
        measurement.samples.push_back(secondsOf(work) * scale);
    }
}

double
processCpuSeconds()
{
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void
sampleWithCpu(Measurement& wall,
              Measurement& cpu,
              int warmup,
              double scale,
              const std::function<void()>& work)
{
    for (int i = 0; i < warmup; ++i) {
        work();
    }
    double cpuStart = processCpuSeconds();
    wall.samples.push_back(secondsOf(work) * scale);
    cpu.samples.push_back((processCpuSeconds() - cpuStart) * scale);
}

std::vector<Case>&
cases()
{
    static std::vector<Case> registry;
    return registry;
}

Registrar::Registrar(const char* name, const char* description, CaseFunction run)
{
    cases().push_back({ name, description, std::move(run) });
}

std::vector<uint32_t>
compile(const std::string& glsl)
{
    return kp::Shader::compileSource(glsl);
}

} // namespace bench
