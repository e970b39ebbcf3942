// SPDX-License-Identifier: Apache-2.0
// The matrix kernels' tuning tables (src/kernels/MatMulTuning): the JSON
// reader under them, how a table is read (and what it reports and leaves
// out), how an entry is found for a device and a product, and that every
// built-in table reads cleanly. No device is needed; test_kernels_matmul's
// TuningTableReplacesTheRules runs OpMatMul with a table on the device.
#include "../DispatchTestHelpers.hpp"
#include "internal/JsonRead.hpp"
#include "kernels/MatMulTuning.hpp"

namespace kp_test {
namespace {

using namespace kp::kernels::matmul;
using kp::internal::parseJson;

TEST(JsonRead, ValuesOfEveryKind)
{
    kp::JsonValue v = parseJson(R"( {"a": [1, -2, 18446744073709551615, -9223372036854775808, 2.5e3, -0.125],
        "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "t": true, "f": false, "z": null, "o": {}, "e": [],
        "a": "last wins"} )",
                              "text");
    ASSERT_TRUE(v.isObject());
    EXPECT_EQ(v.members().size(), 7u);
    EXPECT_EQ(v["a"].asString(), "last wins");
    EXPECT_EQ(v["s"].asString(), "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_TRUE(v["t"].asBool());
    EXPECT_FALSE(v["f"].asBool());
    EXPECT_TRUE(v["z"].isNull());
    EXPECT_TRUE(v["o"].isObject());
    EXPECT_TRUE(v["e"].isArray());
    kp::JsonValue n = parseJson("[1, -2, 18446744073709551615, -9223372036854775808, 2.5e3, -0.125, 1e400]", "text");
    EXPECT_EQ(n.items()[0].asUnsigned(), 1u);
    EXPECT_EQ(n.items()[1].asInt(), -2);
    EXPECT_EQ(n.items()[2].asUnsigned(), UINT64_MAX);
    EXPECT_EQ(n.items()[3].asInt(), INT64_MIN);
    EXPECT_TRUE(n.items()[4].isDouble());
    EXPECT_EQ(n.items()[4].asDouble(), 2500.0);
    EXPECT_EQ(n.items()[5].asDouble(), -0.125);
    EXPECT_TRUE(n.items()[6].isDouble());
    // What it writes, it reads back.
    EXPECT_EQ(parseJson(v.toJson(2), "written").toJson(0), v.toJson(0));
}

TEST(JsonRead, ErrorsSayWhereAndWhat)
{
    auto error = [](const std::string& text) {
        try {
            parseJson(text, "file.json");
        } catch (const kp::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error("{\n  \"a\": [1, 2,]\n}"), "file.json: line 2, column 14: expected a value");
    EXPECT_EQ(error(""), "file.json: line 1, column 1: the text ends where a value was expected");
    EXPECT_EQ(error("{\"a\" 1}"), "file.json: line 1, column 6: expected ':' after a member name");
    EXPECT_EQ(error("{\"a\": 1"), "file.json: line 1, column 8: expected '}' or ',' after an object's member");
    EXPECT_EQ(error("[1] 2"), "file.json: line 1, column 5: text after the value");
    EXPECT_EQ(error("\"abc"), "file.json: line 1, column 5: the text ends inside a string");
    EXPECT_EQ(error("\"a\tb\""), "file.json: line 1, column 3: a control character inside a string (write it as an "
                                  "escape)");
    EXPECT_EQ(error("\"\\x\""), "file.json: line 1, column 3: an unknown escape in a string");
    EXPECT_EQ(error("\"\\ud800\""), "file.json: line 1, column 8: a high surrogate \\u escape without its low one");
    EXPECT_EQ(error("012"), "file.json: line 1, column 1: a number with a leading zero");
    EXPECT_EQ(error("1."), "file.json: line 1, column 3: expected a digit after the decimal point");
    EXPECT_EQ(error("-"), "file.json: line 1, column 2: expected a digit");
    EXPECT_EQ(error("tru"), "file.json: line 1, column 4: expected 'true'");
    EXPECT_EQ(error("{'a': 1}"), "file.json: line 1, column 2: expected a member name in double quotes");
    EXPECT_EQ(error(std::string(65, '[') + std::string(65, ']')),
              "file.json: line 1, column 65: nested deeper than 64 levels");
    EXPECT_EQ(error(std::string(64, '[') + std::string(64, ']')), "no error");
}

TEST(TuningTable, ReadsEntriesAndReportsWhatItLeavesOut)
{
    LogCapture log;
    TuningTable table = readTuningTable(R"({"devices": [
      {"device": "GPU", "driver": "1.2.3", "entries": [
        {"kernel": "matvec-qx", "b": "q4_0x8", "n": 14336, "k": 4096, "config": "256:16:2:1:0:4", "rate": 1.5},
        {"kernel": "coopmat", "a": "f16", "b": "f16", "m": 512, "config": "128:128:64:64:32:1:2"},
        {"kernel": "tiled", "config": "64:64:16:4:4:2"},
        {"kernel": "tiled", "config": "64:64:16:4:4:3"},
        {"kernel": "coopmat", "config": "128:128:64:64:32:1:5"},
        {"kernel": "matvec-qx", "config": "256:16:2:3:0"},
        {"kernel": "matvec-qx", "b": "q9_9", "config": "256:16:2:1:0"},
        {"kernel": "matvec-qx", "n": 0, "config": "256:16:2:1:0"},
        {"config": "256:16:2:1:0"},
        "not an entry",
        {"kernel": "matvec-qx", "k": 18446744073709551615, "config": "256:16:2:1:0"},
        {"kernel": "matvec-qx", "k": -4096, "config": "256:16:2:1:0"},
        {"kernel": "matvec-qx", "k": 4096.5, "config": "256:16:2:1:0"}]},
      {"device": 7, "entries": []}]})",
                                        "t.json");
    EXPECT_EQ(table.source, "t.json");
    ASSERT_EQ(table.devices.size(), 1u);
    const TuningDevice& d = table.devices[0];
    EXPECT_EQ(d.device, "GPU");
    EXPECT_EQ(d.driver, "1.2.3");
    ASSERT_EQ(d.entries.size(), 3u);
    EXPECT_EQ(d.entries[0].kernel, TunedKernel::eMatVecQx);
    EXPECT_EQ(d.entries[0].b, std::optional<uint32_t>(kQ4_0X8));
    EXPECT_EQ(d.entries[0].n, std::optional<uint32_t>(14336u));
    EXPECT_FALSE(d.entries[0].m.has_value());
    EXPECT_EQ(d.entries[1].a, std::optional<uint32_t>(kF16));
    EXPECT_EQ(d.entries[1].m, std::optional<uint32_t>(512u));
    EXPECT_EQ(d.entries[2].where, "t.json: devices[0].entries[2]");
    for (const char* left : { "entries[3] is ignored: config \"64:64:16:4:4:3\": expected BM:BN:BK:TM:TN:STAGES",
                              "entries[4] is ignored: config \"128:128:64:64:32:1:5\": expected BM:BN:BK:WM:WN:STAGES",
                              "entries[5] is ignored: config \"256:16:2:3:0\": prefetch is 0, 1 or 2",
                              "entries[6] is ignored: \"b\" must name an element type",
                              "entries[7] is ignored: \"n\" must be a size from 1",
                              "entries[8] is ignored: an entry needs \"kernel\" and \"config\" strings",
                              "entries[9] is ignored: not an object",
                              "entries[10] is ignored: \"k\" must be a size from 1",
                              "entries[11] is ignored: \"k\" must be a size from 1",
                              "entries[12] is ignored: \"k\" must be a size from 1",
                              "t.json: devices[1] is ignored: a device needs a \"device\" name" }) {
        EXPECT_TRUE(log.contains(kp::logger::Level::Warn, left)) << left;
    }
    EXPECT_THROW(readTuningTable("{\"entries\": []}", "t.json"), kp::Error);
    EXPECT_THROW(readTuningTable("[", "t.json"), kp::Error);
}

TEST(TuningTable, FindsTheEntryForTheDeviceAndProduct)
{
    LogCapture log;
    auto table = std::make_shared<const TuningTable>(readTuningTable(R"({"devices": [
      {"device": "GPU", "driver": "9.9", "entries": [
        {"kernel": "coopmat", "b": "f16", "config": "64:64:32:32:32:1"}]},
      {"device": "GPU", "entries": [
        {"kernel": "coopmat", "b": "f16", "config": "128:128:32:64:32:2"},
        {"kernel": "coopmat", "b": "f16", "m": 512, "n": 4096, "k": 4096, "config": "128:128:64:64:32:1"},
        {"kernel": "coopmat", "b": "f16", "m": 2048, "n": 4096, "k": 4096, "config": "128:256:32:64:64:1"},
        {"kernel": "coopmat", "b": "q8_0", "config": "999:128:64:64:32:1"}]},
      {"device": "GPU", "driver": "1.0", "entries": [
        {"kernel": "tiled", "config": "32:32:16:4:4:1"}]},
      {"device": "Other", "entries": [
        {"kernel": "coopmat", "config": "64:64:64:32:32:1"}]}]})",
                                                                     "t.json"));
    DeviceView gpu;
    gpu.name = "GPU";
    gpu.driver = "1.0";
    auto fitsAll = [](const std::string&) { return std::string(); };
    auto find = [&](TuningQuery q) {
        auto found = findTuning({ table }, gpu, q, [&](const std::string& text) {
            CoopmatConfig c;
            parseCoopmatConfig(text, c);
            return c.bm > 256 ? std::string("too big") : std::string();
        });
        return found ? found->config : std::string("rules");
    };
    // The block of the device's driver first, then the one that names none.
    auto tiled = findTuning({ table }, gpu, { TunedKernel::eTiled, kF32, kF32, 64, 64, 64 }, fitsAll);
    ASSERT_TRUE(tiled.has_value());
    EXPECT_EQ(tiled->config, "32:32:16:4:4:1");
    EXPECT_EQ(tiled->source, "table t.json (device 'GPU', driver 1.0)");
    // Most fields given first, then the largest m not above the product's.
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 512, 4096, 4096 }), "128:128:64:64:32:1");
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 4096, 4096, 4096 }), "128:256:32:64:64:1");
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 256, 4096, 4096 }), "128:128:32:64:32:2");
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 512, 14336, 4096 }), "128:128:32:64:32:2");
    // Another driver's block only where no other block has an entry.
    gpu.driver = "2.0";
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 512, 4096, 4096 }), "128:128:64:64:32:1");
    auto other = findTuning({ table }, gpu, { TunedKernel::eTiled, kF32, kF32, 64, 64, 64 }, fitsAll);
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->source, "table t.json (device 'GPU', driver 1.0)");
    // An entry that does not fit: reported once, and the rules.
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kQ8_0, 512, 4096, 4096 }), "rules");
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kQ8_0, 512, 4096, 4096 }), "rules");
    size_t reports = 0;
    for (const auto& m : log.messages()) {
        reports += m.text.find("devices[1].entries[3] (\"999:128:64:64:32:1\") is ignored for 'GPU': too big") !=
                   std::string::npos;
    }
    EXPECT_EQ(reports, 1u);
    // Another device, another kernel: the rules.
    gpu.name = "Third";
    EXPECT_EQ(find({ TunedKernel::eCoopmat, kF16, kF16, 512, 4096, 4096 }), "rules");
    gpu.name = "Other";
    EXPECT_EQ(find({ TunedKernel::eMatVecQx, kF32, kQ4_0, 1, 4096, 4096 }), "rules");
}

TEST(TuningTable, ConfigurationsReadBackWhatTheyWrite)
{
    MatVecConfig qx;
    ASSERT_EQ(parseQxConfig("128:32:4:1:0:8", 132, qx), "");
    EXPECT_EQ(qx.maxGroups, 4u * 132);
    EXPECT_EQ(qxConfigText(qx, 132), "128:32:4:1:0:8");
    qx.interleave = 4;
    ASSERT_EQ(parseQxConfig("64:8:0:2:1", 0, qx), ""); // interleave kept
    EXPECT_EQ(qxConfigText(qx, 0), "64:8:0:2:1:4");
    EXPECT_NE(parseQxConfig("64:8:0:2", 0, qx), "");
    EXPECT_NE(parseQxConfig("64:8:0:2:1:4:1", 0, qx), "");
    EXPECT_NE(parseQxConfig("64:-8:0:2:1", 0, qx), "");
    CoopmatConfig cm;
    cm.loadAhead = 3;
    ASSERT_EQ(parseCoopmatConfig("128:64:64:64:32:2", cm), ""); // ahead kept
    EXPECT_EQ(coopmatConfigText(cm), "128:64:64:64:32:2:3");
    EXPECT_NE(parseCoopmatConfig("128:64:64:64:0:2", cm), "");
    TiledConfig t;
    ASSERT_EQ(parseTiledConfig("128:64:16:8:4:2", t), "");
    EXPECT_EQ(tiledConfigText(t), "128:64:16:8:4:2");
    EXPECT_NE(parseTiledConfig("128:64:16:8:4", t), "");
}

// Every table built into the library (src/kernels/tuning/*.json) reads
// without a warning, names its device and has entries (a table of no
// entries, where the rules won everywhere, is not added).
TEST(TuningTable, BuiltInTablesReadCleanly)
{
    for (const BuiltinTuningText* t = kBuiltinTuningTexts; t->name; ++t) {
        SCOPED_TRACE(t->name);
        LogCapture log;
        TuningTable table = readTuningTable(t->text, t->name);
        EXPECT_TRUE(log.messages().empty());
        ASSERT_FALSE(table.devices.empty());
        for (const TuningDevice& d : table.devices) {
            EXPECT_FALSE(d.device.empty());
            EXPECT_FALSE(d.entries.empty());
        }
    }
}

} // namespace
} // namespace kp_test
