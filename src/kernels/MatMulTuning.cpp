// SPDX-License-Identifier: Apache-2.0
#include "kernels/MatMulTuning.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "internal/JsonRead.hpp"
#include "kompute/Errors.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {
namespace kernels {
namespace matmul {

namespace {

using logger::format;

constexpr const char* kFileVariable = "KOMPUTE_ENV_TUNING_FILE";

// "a:b:c" into up to `count` unsigned fields; false unless it is exactly
// between `least` and `count` of them.
bool
splitFields(const std::string& text, size_t least, size_t count, std::vector<uint32_t>& fields)
{
    fields.clear();
    size_t at = 0;
    while (true) {
        size_t end = text.find(':', at);
        std::string field = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        if (field.empty() || field.size() > 9 || field.find_first_not_of("0123456789") != std::string::npos) {
            return false;
        }
        fields.push_back(static_cast<uint32_t>(std::stoul(field)));
        if (end == std::string::npos) {
            break;
        }
        at = end + 1;
    }
    return fields.size() >= least && fields.size() <= count;
}

std::optional<TunedKernel>
kernelOf(const std::string& name)
{
    for (TunedKernel kernel : { TunedKernel::eMatVecQx, TunedKernel::eCoopmat, TunedKernel::eTiled }) {
        if (name == tunedKernelName(kernel)) {
            return kernel;
        }
    }
    return std::nullopt;
}

// The form of `config` for `kernel`: empty, or what is wrong with it.
std::string
configForm(TunedKernel kernel, const std::string& config)
{
    switch (kernel) {
        case TunedKernel::eMatVecQx: {
            MatVecConfig c;
            return parseQxConfig(config, 1, c);
        }
        case TunedKernel::eCoopmat: {
            CoopmatConfig c;
            return parseCoopmatConfig(config, c);
        }
        case TunedKernel::eTiled: {
            TiledConfig c;
            return parseTiledConfig(config, c);
        }
    }
    return "an unknown kernel";
}

// An entry from its JSON object; throws kp::Error saying what is wrong.
TuningEntry
readEntry(const JsonValue& value, const std::string& where)
{
    if (!value.isObject()) {
        throw Error("not an object");
    }
    TuningEntry entry{};
    entry.where = where;
    const JsonValue* kernel = value.find("kernel");
    const JsonValue* config = value.find("config");
    if (!kernel || !kernel->isString() || !config || !config->isString()) {
        throw Error("an entry needs \"kernel\" and \"config\" strings");
    }
    auto known = kernelOf(kernel->asString());
    if (!known) {
        throw Error(format("unknown kernel \"{}\" (known: matvec-qx, coopmat, tiled)", kernel->asString()));
    }
    entry.kernel = *known;
    entry.config = config->asString();
    std::string form = configForm(entry.kernel, entry.config);
    if (!form.empty()) {
        throw Error(format("config \"{}\": {}", entry.config, form));
    }
    for (const char* name : { "a", "b" }) {
        const JsonValue* type = value.find(name);
        if (!type) {
            continue;
        }
        uint32_t element = 0;
        if (!type->isString() || !elementTypeOf(type->asString(), element)) {
            throw Error(format("\"{}\" must name an element type such as \"f16\" or \"q4_0x8\"", name));
        }
        (name[0] == 'a' ? entry.a : entry.b) = element;
    }
    for (const char* name : { "m", "n", "k" }) {
        const JsonValue* size = value.find(name);
        if (!size) {
            continue;
        }
        // (Negative integers are held as signed values, the others unsigned.)
        if (!size->isUnsigned() || size->asUnsigned() < 1 || size->asUnsigned() > UINT32_MAX) {
            throw Error(format("\"{}\" must be a size from 1 to 2^32 - 1", name));
        }
        uint32_t v = static_cast<uint32_t>(size->asUnsigned());
        (name[0] == 'm' ? entry.m : name[0] == 'n' ? entry.n : entry.k) = v;
    }
    return entry;
}

// How many of an entry's optional fields are given (its specificity).
int
givenFields(const TuningEntry& e)
{
    return int(e.a.has_value()) + int(e.b.has_value()) + int(e.m.has_value()) + int(e.n.has_value()) +
           int(e.k.has_value());
}

bool
matches(const TuningEntry& e, const TuningQuery& q)
{
    return e.kernel == q.kernel && (!e.a || *e.a == q.a) && (!e.b || *e.b == q.b) && (!e.m || *e.m <= q.m) &&
           (!e.n || *e.n == q.n) && (!e.k || *e.k == q.k);
}

// The file KOMPUTE_ENV_TUNING_FILE names, read again when its path, size or
// time changes (and its problems reported once per such version).
struct FileCache
{
    std::string path;
    std::uintmax_t size = 0;
    std::filesystem::file_time_type time{};
    bool valid = false;
    std::shared_ptr<const TuningTable> table; // null: the version had a problem
};

std::shared_ptr<const TuningTable>
fileTable()
{
    const char* path = std::getenv(kFileVariable);
    if (!path || !*path) {
        return nullptr;
    }
    static std::mutex mutex;
    static FileCache cache;
    std::lock_guard<std::mutex> lock(mutex);
    std::error_code error;
    std::uintmax_t size = std::filesystem::file_size(path, error);
    std::filesystem::file_time_type time{};
    if (!error) {
        time = std::filesystem::last_write_time(path, error);
    }
    if (cache.valid && cache.path == path && cache.size == size && cache.time == time) {
        return cache.table;
    }
    cache = FileCache{ path, size, time, true, nullptr };
    if (error) {
        KP_LOG_WARN("{}={} is ignored: {}", kFileVariable, path, error.message());
        return nullptr;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
        KP_LOG_WARN("{}={} is ignored: the file could not be read", kFileVariable, path);
        return nullptr;
    }
    try {
        cache.table = std::make_shared<const TuningTable>(readTuningTable(text.str(), path));
    } catch (const Error& e) {
        KP_LOG_WARN("{}={} is ignored: {}", kFileVariable, path, e.what());
    }
    return cache.table;
}

const std::vector<std::shared_ptr<const TuningTable>>&
builtinTables()
{
    static const std::vector<std::shared_ptr<const TuningTable>> tables = [] {
        std::vector<std::shared_ptr<const TuningTable>> read;
        for (const BuiltinTuningText* t = kBuiltinTuningTexts; t->name; ++t) {
            try {
                read.push_back(std::make_shared<const TuningTable>(
                  readTuningTable(t->text, std::string("built-in ") + t->name)));
            } catch (const Error& e) {
                // (The build's tests read every built-in table: not reached.)
                KP_LOG_WARN("the built-in tuning table {} is ignored: {}", t->name, e.what());
            }
        }
        return read;
    }();
    return tables;
}

} // namespace

void
TuningTable::reportOnce(const std::string& message) const
{
    std::lock_guard<std::mutex> lock(mReported->mutex);
    if (mReported->messages.insert(message).second) {
        KP_LOG_WARN("{}", message);
    }
}

const char*
tunedKernelName(TunedKernel kernel)
{
    switch (kernel) {
        case TunedKernel::eMatVecQx: return "matvec-qx";
        case TunedKernel::eCoopmat: return "coopmat";
        case TunedKernel::eTiled: return "tiled";
    }
    return "unknown";
}

bool
elementTypeOf(const std::string& name, uint32_t& type)
{
    for (uint32_t t = kF32; t <= kQ4_0X8; ++t) {
        if (name == elementTypeName(t)) {
            type = t;
            return true;
        }
    }
    return false;
}

TuningTable
readTuningTable(const std::string& text, const std::string& source)
{
    JsonValue root = internal::parseJson(text, source);
    const JsonValue* devices = root.find("devices");
    if (!devices || !devices->isArray()) {
        throw Error(format("{}: a tuning table is an object with a \"devices\" array", source));
    }
    TuningTable table;
    table.source = source;
    for (size_t d = 0; d < devices->items().size(); ++d) {
        const JsonValue& block = devices->items()[d];
        std::string at = format("{}: devices[{}]", source, d);
        const JsonValue* name = block.find("device");
        const JsonValue* driver = block.find("driver");
        const JsonValue* entries = block.find("entries");
        if (!name || !name->isString() || (driver && !driver->isString()) || !entries || !entries->isArray()) {
            KP_LOG_WARN("{} is ignored: a device needs a \"device\" name, an \"entries\" array and at most a "
                        "\"driver\" string",
                        at);
            continue;
        }
        TuningDevice device{ name->asString(), driver ? driver->asString() : std::string(), {} };
        for (size_t e = 0; e < entries->items().size(); ++e) {
            std::string where = format("{}.entries[{}]", at, e);
            try {
                device.entries.push_back(readEntry(entries->items()[e], where));
            } catch (const Error& error) {
                KP_LOG_WARN("{} is ignored: {}", where, error.what());
            }
        }
        table.devices.push_back(std::move(device));
    }
    return table;
}

std::vector<std::shared_ptr<const TuningTable>>
tuningTables()
{
    std::vector<std::shared_ptr<const TuningTable>> tables;
    if (auto file = fileTable()) {
        tables.push_back(file);
    }
    const auto& builtin = builtinTables();
    tables.insert(tables.end(), builtin.begin(), builtin.end());
    return tables;
}

std::optional<TunedChoice>
findTuning(const std::vector<std::shared_ptr<const TuningTable>>& tables,
           const DeviceView& device,
           const TuningQuery& query,
           const std::function<std::string(const std::string& config)>& fits)
{
    for (const auto& table : tables) {
        // The device's blocks: its driver's, then any driver's, then others'.
        for (int rank = 0; rank < 3; ++rank) {
            for (const TuningDevice& block : table->devices) {
                if (block.device != device.name) {
                    continue;
                }
                int blockRank = block.driver == device.driver ? 0 : block.driver.empty() ? 1 : 2;
                if (blockRank != rank) {
                    continue;
                }
                // The most specific matching entry that fits, then the largest m.
                std::vector<const TuningEntry*> candidates;
                for (const TuningEntry& entry : block.entries) {
                    if (matches(entry, query)) {
                        candidates.push_back(&entry);
                    }
                }
                std::stable_sort(candidates.begin(), candidates.end(), [](const TuningEntry* x, const TuningEntry* y) {
                    int gx = givenFields(*x), gy = givenFields(*y);
                    return gx != gy ? gx > gy : x->m.value_or(0) > y->m.value_or(0);
                });
                for (const TuningEntry* entry : candidates) {
                    std::string problem = fits(entry->config);
                    if (!problem.empty()) {
                        table->reportOnce(format("{} (\"{}\") is ignored for '{}': {}", entry->where, entry->config,
                                                 device.name, problem));
                        continue;
                    }
                    return TunedChoice{ entry->config,
                                        format("table {} (device '{}', driver {})", table->source, block.device,
                                               block.driver.empty() ? std::string("any") : block.driver) };
                }
            }
        }
    }
    return std::nullopt;
}

std::string
parseQxConfig(const std::string& text, uint32_t smCount, MatVecConfig& config)
{
    std::vector<uint32_t> f;
    if (!splitFields(text, 5, 6, f)) {
        return "expected threads:rows:groupsPerSM:prefetch:stage[:interleave], e.g. 256:16:2:0:0";
    }
    if (f[3] > 2 || f[4] > 1) {
        return "prefetch is 0, 1 or 2 and stage 0 or 1";
    }
    config.threads = f[0];
    config.rows = f[1];
    config.maxGroups = f[2] * (smCount ? smCount : 1);
    config.prefetch = f[3];
    config.stage = f[4] != 0;
    if (f.size() == 6) {
        config.interleave = f[5];
    }
    return {};
}

std::string
parseCoopmatConfig(const std::string& text, CoopmatConfig& config)
{
    std::vector<uint32_t> f;
    if (!splitFields(text, 6, 7, f) || !f[0] || !f[1] || !f[2] || !f[3] || !f[4] || (f[5] != 1 && f[5] != 2) ||
        (f.size() == 7 && (f[6] < 1 || f[6] > 4))) {
        return "expected BM:BN:BK:WM:WN:STAGES[:AHEAD] (sizes above 0, stages 1 or 2, 1 to 4 tiles ahead), e.g. "
               "128:64:64:64:32:1";
    }
    config.bm = f[0];
    config.bn = f[1];
    config.bk = f[2];
    config.wm = f[3];
    config.wn = f[4];
    config.doubleBuffer = f[5] == 2;
    if (f.size() == 7) {
        config.loadAhead = f[6];
    }
    return {};
}

std::string
parseTiledConfig(const std::string& text, TiledConfig& config)
{
    std::vector<uint32_t> f;
    if (!splitFields(text, 6, 6, f) || !f[0] || !f[1] || !f[2] || !f[3] || !f[4] || (f[5] != 1 && f[5] != 2)) {
        return "expected BM:BN:BK:TM:TN:STAGES (sizes above 0, stages 1 or 2), e.g. 64:64:16:4:4:1";
    }
    config.bm = f[0];
    config.bn = f[1];
    config.bk = f[2];
    config.tm = f[3];
    config.tn = f[4];
    config.doubleBuffer = f[5] == 2;
    return {};
}

std::string
qxConfigText(const MatVecConfig& c, uint32_t smCount)
{
    return format("{}:{}:{}:{}:{}:{}", c.threads, c.rows, c.maxGroups / (smCount ? smCount : 1), c.prefetch,
                  c.stage ? 1 : 0, c.interleave);
}

std::string
coopmatConfigText(const CoopmatConfig& c)
{
    return format("{}:{}:{}:{}:{}:{}:{}", c.bm, c.bn, c.bk, c.wm, c.wn, c.doubleBuffer ? 2 : 1, c.loadAhead);
}

std::string
tiledConfigText(const TiledConfig& c)
{
    return format("{}:{}:{}:{}:{}:{}", c.bm, c.bn, c.bk, c.tm, c.tn, c.doubleBuffer ? 2 : 1);
}

} // namespace matmul
} // namespace kernels
} // namespace kp
