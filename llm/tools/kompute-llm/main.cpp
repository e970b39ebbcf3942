// SPDX-License-Identifier: Apache-2.0
// kompute-llm: runs a Llama-family GGUF model on a Vulkan GPU. Generation
// from a prompt (streamed), teacher-forced logits to a .npy file, and a
// llama-bench style benchmark, on a model file or on random weights; --chat
// runs the chat loop of the Python module kp.llm.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <kompute/Kompute.hpp>
#include <kompute/llm/Llm.hpp>

namespace llm = kp::llm;

namespace {

const char* const kUsage = R"(kompute-llm: run a Llama-family GGUF model on a Vulkan GPU

usage: kompute-llm (--model FILE.gguf | --random SHAPE:TYPE) [options]

model
  -m, --model FILE        a GGUF file (v2/v3; architecture llama, qwen2 or qwen3;
                          weights F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
                          Q2_K..Q6_K, IQ4_NL, IQ4_XS, in any per-tensor mix)
  --random SHAPE:TYPE     random weights of a shape, built in memory (no file):
                          SHAPE tiny, llama-1b, llama-7b, llama-8b; TYPE f32, f16,
                          bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k,
                          q5_k, q6_k, iq4_nl, iq4_xs, TYPE/OUTPUT_TYPE (q4_0/q6_k),
                          or a llama-quantize mix q4_k_m, q5_k_m, q4_k_s, q5_k_s
                          (e.g. llama-8b:q4_0, llama-8b:q4_k_m)
  --save FILE.gguf        with --random: write that model (and a byte-level
                          tokenizer) to a GGUF file and exit; needs no GPU
  --device N              Vulkan device index (default 0)
  -c, --ctx-size N        tokens the KV cache holds (default: the model's context
                          length, at most 4096)
  -b, --batch-size N      most tokens per prompt step (default 512)

input
  -p, --prompt TEXT       the prompt, tokenized with the file's tokenizer (BOS added
                          as the file asks; special tokens in the text are parsed)
  -f, --file FILE         read the prompt from a file
  --tokens 1,2,3          token ids, used exactly as given (no BOS added)
  --no-special            do not parse special tokens in the prompt

generation
  -n, --n-predict N       tokens to generate (default 64; stops earlier at
                          end-of-sequence; 0 only evaluates the prompt)
  --temp T                temperature (default 0.8; 0 is greedy)
  --top-k K               keep the K most likely tokens (default 40; 0: all)
  --top-p P               keep the most likely tokens adding up to P (default 0.95)
  --seed S                random seed (default: from the clock; printed with -v)
  --ignore-eos            do not stop at end-of-sequence
  --show-tokens           print the generated token ids instead of text
  --no-prompt             do not echo the prompt before the generated text

chat
  --chat                  chat in the terminal through the file's chat template: runs the
                          chat loop of the Python module kp.llm (python -m kp.llm.chat)
                          with $KOMPUTE_PYTHON (default python3), which has kp and
                          jinja2; it takes -m, -n, --temp, --top-k, --top-p, --seed,
                          --device, -c, -b, -v, and --system TEXT, --chat-template FILE

outputs
  --dump-logits FILE.npy  with -n 0: write the logits of every prompt position,
                          float32 [prompt tokens, vocabulary] (teacher forcing)
  --bench                 llama-bench style benchmark: prompt processing of
                          --bench-prompt tokens (pp, default 512) and generation
                          of --bench-gen tokens (tg, default 128), tokens/s as
                          the median of --reps repetitions (default 5)
  --bench-prompt N, --bench-gen N, --reps N
  --bench-depth N         with --bench: generation starts with N tokens already
                          in the KV cache (llama-bench's -d; default 0)
  --json FILE             with --bench: also write the results as JSON ('-': stdout)
  --profile               GPU time per operation (from timestamps) of the prompt
                          and of one generation step (or of the benchmark's runs)
  -v, --verbose           model, device and timing details on stderr
  -h, --help              this text
)";

[[noreturn]] void
usageError(const std::string& message)
{
    std::fprintf(stderr, "kompute-llm: %s\n(see kompute-llm --help)\n", message.c_str());
    std::exit(2);
}

struct Options
{
    std::string model;
    std::string random;
    std::string save;
    uint32_t device = 0;
    uint32_t contextSize = 0;
    uint32_t batchSize = 512;
    std::optional<std::string> prompt;
    std::optional<std::vector<uint32_t>> tokens;
    bool parseSpecial = true;
    int64_t predict = 64;
    llm::SamplerParams sampler;
    bool seedGiven = false;
    bool ignoreEos = false;
    bool showTokens = false;
    bool echoPrompt = true;
    std::string dumpLogits;
    bool bench = false;
    uint32_t benchPrompt = 512;
    uint32_t benchGen = 128;
    uint32_t benchDepth = 0;
    uint32_t reps = 5;
    std::string json;
    bool profile = false;
    bool verbose = false;
};

uint64_t
parseUnsigned(const std::string& flag, const std::string& text, uint64_t max = UINT32_MAX)
{
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-' || value > max) {
        usageError(flag + " takes a whole number, not '" + text + "'");
    }
    return value;
}

float
parseFloat(const std::string& flag, const std::string& text)
{
    char* end = nullptr;
    float value = std::strtof(text.c_str(), &end);
    if (text.empty() || *end != '\0' || std::isnan(value)) {
        usageError(flag + " takes a number, not '" + text + "'");
    }
    return value;
}

std::vector<uint32_t>
parseTokens(const std::string& text)
{
    std::vector<uint32_t> ids;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        ids.push_back(static_cast<uint32_t>(parseUnsigned("--tokens", item)));
    }
    if (ids.empty()) {
        usageError("--tokens needs at least one id, e.g. --tokens 1,2,3");
    }
    return ids;
}

Options
parseOptions(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usageError(flag + " needs a value");
            }
            return argv[++i];
        };
        if (flag == "-h" || flag == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (flag == "-m" || flag == "--model") {
            o.model = value();
        } else if (flag == "--random") {
            o.random = value();
        } else if (flag == "--save") {
            o.save = value();
        } else if (flag == "--device") {
            o.device = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "-c" || flag == "--ctx-size") {
            o.contextSize = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "-b" || flag == "--batch-size") {
            o.batchSize = static_cast<uint32_t>(parseUnsigned(flag, value()));
            if (o.batchSize == 0) {
                usageError("--batch-size must be at least 1");
            }
        } else if (flag == "-p" || flag == "--prompt") {
            o.prompt = value();
        } else if (flag == "-f" || flag == "--file") {
            std::string path = value();
            std::ifstream in(path, std::ios::binary);
            if (!in) {
                usageError("cannot read the prompt file '" + path + "'");
            }
            o.prompt = std::string(std::istreambuf_iterator<char>(in), {});
        } else if (flag == "--tokens") {
            o.tokens = parseTokens(value());
        } else if (flag == "--no-special") {
            o.parseSpecial = false;
        } else if (flag == "-n" || flag == "--n-predict") {
            o.predict = static_cast<int64_t>(parseUnsigned(flag, value()));
        } else if (flag == "--temp") {
            o.sampler.temperature = parseFloat(flag, value());
        } else if (flag == "--top-k") {
            o.sampler.topK = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "--top-p") {
            o.sampler.topP = parseFloat(flag, value());
        } else if (flag == "--seed") {
            o.sampler.seed = parseUnsigned(flag, value(), UINT64_MAX);
            o.seedGiven = true;
        } else if (flag == "--ignore-eos") {
            o.ignoreEos = true;
        } else if (flag == "--show-tokens") {
            o.showTokens = true;
        } else if (flag == "--no-prompt") {
            o.echoPrompt = false;
        } else if (flag == "--dump-logits") {
            o.dumpLogits = value();
        } else if (flag == "--bench") {
            o.bench = true;
        } else if (flag == "--bench-prompt") {
            o.benchPrompt = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "--bench-gen") {
            o.benchGen = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "--bench-depth") {
            o.benchDepth = static_cast<uint32_t>(parseUnsigned(flag, value()));
        } else if (flag == "--reps") {
            o.reps = std::max<uint32_t>(1, static_cast<uint32_t>(parseUnsigned(flag, value())));
        } else if (flag == "--json") {
            o.json = value();
        } else if (flag == "--profile") {
            o.profile = true;
        } else if (flag == "-v" || flag == "--verbose") {
            o.verbose = true;
        } else {
            usageError("unknown option '" + flag + "'");
        }
    }
    if (o.model.empty() == o.random.empty()) {
        usageError(o.model.empty() ? "give a model: --model FILE.gguf or --random SHAPE:TYPE"
                                   : "give either --model or --random, not both");
    }
    if (!o.save.empty()) {
        if (o.random.empty()) {
            usageError("--save writes a --random model");
        }
        return o;
    }
    if (o.prompt && o.tokens) {
        usageError("give either --prompt or --tokens, not both");
    }
    if (!o.bench && !o.prompt && !o.tokens) {
        usageError("give a prompt (--prompt TEXT or --tokens 1,2,3), or --bench");
    }
    if (!o.dumpLogits.empty() && o.predict != 0) {
        usageError("--dump-logits evaluates the prompt only: give -n 0 with it");
    }
    if (o.bench && o.benchPrompt == 0 && o.benchGen == 0) {
        usageError("--bench needs --bench-prompt or --bench-gen above 0");
    }
    if (!o.json.empty() && !o.bench) {
        usageError("--json goes with --bench");
    }
    if (!o.seedGiven) {
        o.sampler.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }
    return o;
}

// --- Chat ------------------------------------------------------------------------------

/**
 * --chat hands the process to the chat loop of the Python module kp.llm:
 * chat templates are Jinja programs, rendered with jinja2 the way Hugging
 * Face transformers renders them, and one implementation of that serves
 * kp.llm.Model.chat, the OpenAI-compatible server and this program. The
 * other arguments go to it unchanged (it takes this program's names for
 * the options that apply to a chat). Does not return.
 */
[[noreturn]] void
runChatLoop(int argc, char** argv)
{
    const char* fromEnvironment = std::getenv("KOMPUTE_PYTHON");
    std::string python = fromEnvironment && *fromEnvironment ? fromEnvironment : "python3";
    const std::string bootstrap = R"(import sys
try:
    from kp.llm.chat import main
except ImportError as error:
    sys.exit(f"kompute-llm --chat runs the chat loop of the Python module kp.llm, which {sys.executable} "
             f"cannot import ({error}): install kp with its [llm] extra (pip install '.[llm]' in Kompute's "
             "tree), or set KOMPUTE_PYTHON to a Python that has it")
sys.exit(main(sys.argv[1:], prog="kompute-llm --chat"))
)";
    std::vector<std::string> arguments = { python, "-c", bootstrap };
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--chat") != 0) {
            arguments.emplace_back(argv[i]);
        }
    }
    std::vector<char*> pointers;
    for (std::string& argument : arguments) {
        pointers.push_back(argument.data());
    }
    pointers.push_back(nullptr);
    std::fflush(stdout);
    execvp(python.c_str(), pointers.data());
    std::fprintf(stderr,
                 "kompute-llm: --chat runs the chat loop of the Python module kp.llm, but '%s' cannot be run (%s): "
                 "install Python 3 and kp, or set KOMPUTE_PYTHON to the interpreter that has them\n",
                 python.c_str(), std::strerror(errno));
    std::exit(1);
}

// --- Progress bar ---------------------------------------------------------------------

/** A progress bar on stderr while weights upload (only on a terminal). */
llm::LoadProgress
progressBar()
{
    if (!isatty(STDERR_FILENO)) {
        return {};
    }
    return [](uint64_t done, uint64_t total) {
        const int width = 30;
        double fraction = total ? double(done) / double(total) : 1.0;
        int filled = static_cast<int>(fraction * width);
        std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%  %.2f / %.2f GB", filled,
                     "==============================", width - filled, "", static_cast<int>(fraction * 100),
                     done / 1e9, total / 1e9);
        if (done >= total) {
            std::fputs("\n", stderr);
        }
        std::fflush(stderr);
    };
}

double
seconds(std::chrono::steady_clock::time_point since)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

/** Runs `run` (which returns its seconds) once, then until a second of it
 * has passed: GPUs leave their idle clock only after about a second of
 * work, and one pp512 step is a tenth of that (the H200's first measured
 * repetition ran at 55% of the others after a single warm-up run). The
 * first run is not counted: it builds the step's pipelines, seconds of the
 * driver's compiler with the GPU idle (an F16 pp512 on an H100 then measured
 * its first repetition at 5,142 tokens/s and the next seven at 12,206 to
 * 12,408). */
template<typename Run>
void
warmUp(Run&& run)
{
    run();
    double spent = 0;
    do {
        spent += run();
    } while (spent < 1.0);
}

std::string
humanBytes(double bytes)
{
    char text[32];
    if (bytes >= 1e9) {
        std::snprintf(text, sizeof(text), "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    } else {
        std::snprintf(text, sizeof(text), "%.2f MiB", bytes / (1024.0 * 1024));
    }
    return text;
}

void
printProfile(const llm::Context& context, const char* what)
{
    std::vector<llm::OpTime> times = context.profile();
    double total = 0;
    for (const auto& t : times) {
        total += t.milliseconds;
    }
    std::fprintf(stderr, "\nprofile of %s: %.3f ms of GPU time\n", what, total);
    std::fprintf(stderr, "  %-28s %10s %7s %6s\n", "operation", "ms", "share", "count");
    for (const auto& t : times) {
        std::fprintf(stderr, "  %-28s %10.3f %6.1f%% %6u\n", t.label.c_str(), t.milliseconds,
                     total > 0 ? 100.0 * t.milliseconds / total : 0.0, t.count);
    }
}

// --- Benchmark --------------------------------------------------------------------------

struct BenchResult
{
    std::string test;
    uint32_t prompt = 0;
    uint32_t generated = 0;
    std::vector<double> tokensPerSecond;
    double median = 0;
    double stddev = 0;
};

void
summarise(BenchResult& r)
{
    std::vector<double> sorted = r.tokensPerSecond;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    r.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    double mean = 0;
    for (double v : sorted) {
        mean += v / n;
    }
    double variance = 0;
    for (double v : sorted) {
        variance += (v - mean) * (v - mean) / std::max<size_t>(1, n - 1);
    }
    r.stddev = std::sqrt(variance);
}

int
bench(const Options& o, std::shared_ptr<llm::Model> model, const std::string& modelName, const std::string& device)
{
    const llm::ModelConfig& c = model->config();
    llm::ContextOptions options;
    options.contextSize = std::max<uint32_t>(o.contextSize, std::max(o.benchPrompt, o.benchDepth + o.benchGen + 1));
    options.batchSize = o.batchSize;
    llm::Context context(model, options);
    std::mt19937 random(1234);
    auto randomTokens = [&](uint32_t count) {
        std::vector<uint32_t> ids(count);
        for (uint32_t& id : ids) {
            id = random() % c.vocabSize;
        }
        return ids;
    };
    std::vector<float> logits;
    std::vector<BenchResult> results;
    if (o.benchPrompt > 0) {
        BenchResult r{ "pp" + std::to_string(o.benchPrompt), o.benchPrompt, 0, {}, 0, 0 };
        std::vector<uint32_t> prompt = randomTokens(o.benchPrompt);
        auto promptRun = [&] {
            context.reset();
            auto start = std::chrono::steady_clock::now();
            context.evaluate(prompt, llm::Logits::eLast, &logits);
            return seconds(start);
        };
        warmUp(promptRun);
        for (uint32_t rep = 0; rep < o.reps; ++rep) {
            r.tokensPerSecond.push_back(o.benchPrompt / promptRun());
        }
        summarise(r);
        results.push_back(r);
    }
    if (o.benchGen > 0) {
        std::string test = "tg" + std::to_string(o.benchGen);
        if (o.benchDepth > 0) {
            test += " @ d" + std::to_string(o.benchDepth);
        }
        BenchResult r{ test, 0, o.benchGen, {}, 0, 0 };
        const std::vector<uint32_t> depth = randomTokens(o.benchDepth);
        auto generationRun = [&] {
            context.reset();
            if (!depth.empty()) {
                context.evaluate(depth, llm::Logits::eNone, nullptr); // (not timed)
            }
            uint32_t token = randomTokens(1)[0];
            auto start = std::chrono::steady_clock::now();
            for (uint32_t i = 0; i < o.benchGen; ++i) {
                token = context.evaluateGreedy({ token });
            }
            return seconds(start);
        };
        warmUp(generationRun);
        for (uint32_t rep = 0; rep < o.reps; ++rep) {
            r.tokensPerSecond.push_back(o.benchGen / generationRun());
        }
        summarise(r);
        results.push_back(r);
    }

    // Bytes one decode step reads: the weights, and the KV cache up to the
    // middle of the run on average.
    const double kvRowBytes = 2.0 * c.blockCount * c.headCountKv * c.headDim * 2.0;
    const double weightBytes = static_cast<double>(model->bytesReadPerToken());
    const double averageKvBytes = kvRowBytes * (o.benchDepth + (o.benchGen + 1) / 2.0);
    const std::string size = humanBytes(static_cast<double>(model->weightBytes()));
    char params[32];
    double count = static_cast<double>(c.parameterCount());
    std::snprintf(params, sizeof(params), count >= 1e9 ? "%.2f B" : "%.2f M", count >= 1e9 ? count / 1e9 : count / 1e6);

    std::printf("| %-28s | %10s | %8s | %-24s | %6s | %14s | %10s |\n", "model", "size", "params", "device",
                "test", "t/s", "GB/s read");
    std::printf("| %.28s | %.10s | %.8s | %.24s | %.6s | %.14s | %.10s |\n",
                "----------------------------------", "------------", "----------", "------------------------------",
                "--------", "----------------", "------------");
    for (const BenchResult& r : results) {
        char ts[32];
        std::snprintf(ts, sizeof(ts), "%.2f ± %.2f", r.median, r.stddev);
        char bandwidth[32] = "";
        if (r.generated > 0) {
            std::snprintf(bandwidth, sizeof(bandwidth), "%.1f", r.median * (weightBytes + averageKvBytes) / 1e9);
        }
        std::printf("| %-28s | %10s | %8s | %-24.24s | %6s | %14s | %10s |\n", modelName.c_str(), size.c_str(), params,
                    device.c_str(), r.test.c_str(), ts, bandwidth);
    }
    std::printf("(median of %u repetitions after at least a second of warm-up; GB/s: weights and KV bytes read per token)\n",
                o.reps);

    if (!o.json.empty()) {
        std::ostringstream json;
        json << "[\n";
        for (size_t i = 0; i < results.size(); ++i) {
            const BenchResult& r = results[i];
            json << "  {\"model\": \"" << modelName << "\", \"type\": \"" << llm::toString(model->weightType())
                 << "\", \"model_bytes\": " << model->weightBytes() << ", \"params\": " << c.parameterCount()
                 << ", \"device\": \"" << device << "\", \"test\": \"" << r.test << "\", \"n_prompt\": " << r.prompt
                 << ", \"n_gen\": " << r.generated
                 << ", \"n_depth\": " << (r.generated > 0 ? o.benchDepth : 0) << ", \"repetitions\": " << r.tokensPerSecond.size()
                 << ", \"tokens_per_second\": " << r.median << ", \"stddev\": " << r.stddev << ", \"samples\": [";
            for (size_t k = 0; k < r.tokensPerSecond.size(); ++k) {
                json << (k ? ", " : "") << r.tokensPerSecond[k];
            }
            json << "]";
            if (r.generated > 0) {
                json << ", \"bytes_read_per_token\": " << static_cast<uint64_t>(weightBytes + averageKvBytes)
                     << ", \"read_gb_per_second\": " << r.median * (weightBytes + averageKvBytes) / 1e9;
            }
            json << "}" << (i + 1 < results.size() ? "," : "") << "\n";
        }
        json << "]\n";
        if (o.json == "-") {
            std::fputs(json.str().c_str(), stdout);
        } else {
            std::ofstream out(o.json);
            out << json.str();
            if (!out) {
                throw kp::Error("cannot write " + o.json);
            }
        }
    }

    if (o.profile) {
        llm::ContextOptions profiled = options;
        profiled.profile = true;
        // Room for the prompt and the one decode step after it (the bench's
        // context holds the prompt alone when --ctx-size is not larger).
        profiled.contextSize = std::max(options.contextSize, o.benchPrompt + 1);
        llm::Context timed(model, profiled);
        // (--bench-prompt 0: a prompt of one token, named so.)
        uint32_t promptTokens = std::max(o.benchPrompt, 1u);
        timed.evaluate(randomTokens(promptTokens), llm::Logits::eLast, &logits);
        printProfile(timed, ("pp" + std::to_string(promptTokens)).c_str());
        timed.evaluateGreedy(randomTokens(1));
        printProfile(timed, "one tg step");
    }
    return 0;
}

// --- Generation ------------------------------------------------------------------------

int
generate(const Options& o, std::shared_ptr<llm::Model> model, const llm::Tokenizer* tokenizer)
{
    std::vector<uint32_t> prompt;
    if (o.tokens) {
        prompt = *o.tokens;
    } else {
        if (tokenizer == nullptr) {
            throw kp::Error("a --random model has no tokenizer: give the prompt as --tokens 1,2,3");
        }
        prompt = tokenizer->encode(*o.prompt, true, o.parseSpecial);
    }
    if (prompt.empty()) {
        throw kp::Error("the prompt has no tokens");
    }
    const llm::ModelConfig& c = model->config();
    llm::ContextOptions options;
    options.contextSize = o.contextSize;
    if (options.contextSize == 0) {
        options.contextSize = std::min<uint32_t>(c.contextLength, 4096);
    }
    options.batchSize = o.batchSize;
    options.profile = o.profile;
    llm::Context context(model, options);
    if (prompt.size() + static_cast<uint64_t>(o.predict) > context.capacity()) {
        throw kp::Error("the prompt (" + std::to_string(prompt.size()) + " tokens) and -n " + std::to_string(o.predict) +
                        " do not fit into the context of " + std::to_string(context.capacity()) +
                        " tokens: raise --ctx-size");
    }

    if (!o.dumpLogits.empty()) {
        std::vector<float> logits;
        auto start = std::chrono::steady_clock::now();
        context.evaluate(prompt, llm::Logits::eAll, &logits);
        double elapsed = seconds(start);
        llm::writeNpy(o.dumpLogits, logits.data(), prompt.size(), c.vocabSize);
        if (o.verbose) {
            std::fprintf(stderr, "wrote logits [%zu, %u] to %s (%.1f tokens/s)\n", prompt.size(), c.vocabSize,
                         o.dumpLogits.c_str(), prompt.size() / elapsed);
        }
        if (o.profile) {
            printProfile(context, "the prompt");
        }
        return 0;
    }

    llm::Sampler sampler(o.sampler);
    if (o.echoPrompt && tokenizer && !o.showTokens) {
        std::fputs(tokenizer->decode(prompt).c_str(), stdout);
        std::fflush(stdout);
    }
    std::vector<float> logits;
    auto promptStart = std::chrono::steady_clock::now();
    uint32_t next = 0;
    if (o.predict == 0) {
        context.evaluate(prompt, llm::Logits::eNone, nullptr);
    } else if (sampler.isGreedy()) {
        next = context.evaluateGreedy(prompt);
    } else {
        context.evaluate(prompt, llm::Logits::eLast, &logits);
        next = sampler.sample(logits.data(), logits.size());
    }
    double promptSeconds = seconds(promptStart);
    if (o.profile) {
        printProfile(context, "the prompt");
    }

    std::optional<llm::TokenTextStream> stream;
    if (tokenizer) {
        stream.emplace(*tokenizer);
    }
    auto genStart = std::chrono::steady_clock::now();
    int64_t generated = 0;
    bool profiledStep = false;
    while (generated < o.predict) {
        bool end = tokenizer && !o.ignoreEos && tokenizer->isEndOfGeneration(next);
        if (end) {
            break;
        }
        ++generated;
        if (o.showTokens || !stream) {
            std::printf("%s%u", generated > 1 ? "," : "", next);
        } else {
            std::fputs(stream->push(next).c_str(), stdout);
        }
        std::fflush(stdout);
        if (generated == o.predict) {
            break;
        }
        if (sampler.isGreedy()) {
            next = context.evaluateGreedy({ next });
        } else {
            context.evaluate({ next }, llm::Logits::eLast, &logits);
            next = sampler.sample(logits.data(), logits.size());
        }
        if (o.profile && !profiledStep) {
            printProfile(context, "one generation step");
            profiledStep = true;
        }
    }
    if (stream) {
        std::fputs(stream->flush().c_str(), stdout);
    }
    std::fputs("\n", stdout);
    double genSeconds = seconds(genStart);
    if (o.verbose) {
        std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tokens/s); generated: %lld tokens in %.3f s (%.1f tokens/s)\n",
                     prompt.size(), promptSeconds, prompt.size() / promptSeconds, static_cast<long long>(generated),
                     genSeconds, generated > 1 ? (generated - 1) / genSeconds : 0.0);
    }
    return 0;
}

} // namespace

int
main(int argc, char** argv)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--chat") == 0) {
            runChatLoop(argc, argv);
        }
    }
    Options o = parseOptions(argc, argv);
    try {
        if (!o.save.empty()) {
            size_t colon = o.random.find(':');
            if (colon == std::string::npos) {
                usageError("--random takes SHAPE:TYPE, e.g. llama-8b:f16 or tiny:f32");
            }
            llm::writeRandomModel(o.save, llm::ModelConfig::named(o.random.substr(0, colon)),
                                  llm::WeightMix::parse(o.random.substr(colon + 1)));
            std::fprintf(stderr, "wrote %s (%s)\n", o.save.c_str(), o.random.c_str());
            return 0;
        }
        auto loadStart = std::chrono::steady_clock::now();
        kp::Manager manager(o.device);
        std::string device = manager.getDeviceProperties().deviceName.data();
        std::shared_ptr<llm::Model> model;
        std::optional<llm::GgufFile> file;
        std::optional<llm::Tokenizer> tokenizer;
        std::string modelName;
        std::optional<llm::WeightMix> mix;
        if (!o.model.empty()) {
            file.emplace(llm::GgufFile::open(o.model));
            llm::ModelConfig config = llm::ModelConfig::fromGguf(*file);
            if (!o.tokens || o.verbose) {
                tokenizer.emplace(llm::Tokenizer::fromGguf(*file));
            }
            model = llm::Model::load(manager, *file, progressBar());
            modelName = config.name.empty() ? config.architecture : config.name;
            modelName += " " + llm::toString(model->weightType());
        } else {
            size_t colon = o.random.find(':');
            if (colon == std::string::npos) {
                usageError("--random takes SHAPE:TYPE, e.g. llama-8b:f16 or tiny:f32");
            }
            llm::ModelConfig config = llm::ModelConfig::named(o.random.substr(0, colon));
            mix = llm::WeightMix::parse(o.random.substr(colon + 1));
            model = llm::Model::random(manager, config, *mix, 1, progressBar());
            modelName = o.random;
        }
        const llm::ModelConfig& c = model->config();
        if (o.verbose) {
            char scaling[64] = "";
            if (c.ropeFreqScale != 1.0f) {
                std::snprintf(scaling, sizeof(scaling), ", linear scaling %g", 1.0 / c.ropeFreqScale);
            }
            std::fprintf(stderr,
                         "model: %s (%s), %u layers, width %u, %u heads (%u KV) of size %u, FFN %u, vocabulary %u, RoPE "
                         "base %g%s%s; %s on %s (%.1f s to load)\n",
                         modelName.c_str(), c.architecture.c_str(), c.blockCount, c.embeddingLength, c.headCount,
                         c.headCountKv, c.headDim, c.feedForwardLength, c.vocabSize, c.ropeTheta, scaling,
                         c.ropeFreqFactors ? ", rope_freqs" : "", humanBytes(double(model->weightBytes())).c_str(),
                         device.c_str(), seconds(loadStart));
            std::fprintf(stderr, "tensor types: %s%s\n", model->typeMix().c_str(), c.tiedOutput ? " (output tied to token_embd)" : "");
            if (!o.tokens && !o.bench) {
                std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(o.sampler.seed));
            }
        }
        if (o.bench) {
            return bench(o, model, modelName, device);
        }
        return generate(o, model, tokenizer ? &*tokenizer : nullptr);
    } catch (const std::exception& error) {
        std::fflush(stdout);
        std::fprintf(stderr, "kompute-llm: %s\n", error.what());
        return 1;
    }
}
