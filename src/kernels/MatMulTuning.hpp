// SPDX-License-Identifier: Apache-2.0
// Per-device tuning tables of the matrix kernels: configurations measured
// on a device (kompute-kernel-probe --write-tuning) that replace the rules
// of MatMulConfig for the shapes they name. OpMatMul looks its product up
// in the file KOMPUTE_ENV_TUNING_FILE names, then in the tables built into
// the library (src/kernels/tuning/*.json); the README's "Tuning tables"
// describes the format.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kompute/DeviceInfo.hpp"
#include "kernels/MatMulConfig.hpp"

namespace kp {
namespace kernels {
namespace matmul {

/** The tables of src/kernels/tuning/ as text, generated at build time
 * (cmake/TuningTables.cmake): {file name, JSON text}, ending with nulls. */
struct BuiltinTuningText
{
    const char* name;
    const char* text;
};
extern const BuiltinTuningText kBuiltinTuningTexts[];

/** The kernels a table tunes, by the names its entries give them. */
enum class TunedKernel
{
    eMatVecQx, ///< "matvec-qx": the int-dot mat-vec's quantized-x mode (MatVecConfig)
    eCoopmat,  ///< "coopmat": the cooperative-matrix GEMM (CoopmatConfig)
    eTiled,    ///< "tiled": the tiled GEMM (TiledConfig)
};
const char* tunedKernelName(TunedKernel kernel);

/** A product to look up: its kernel, operand types (A, and B the
 * weights: the element types of MatMulConfig.hpp) and shape (m rows of C,
 * n columns, k deep; the mat-vec's n is its rows of weights). */
struct TuningQuery
{
    TunedKernel kernel;
    uint32_t a = kF32, b = kF32;
    uint32_t m = 1, n = 0, k = 0;
};

/** One entry of a table, as read (checked for its form, not yet against
 * a device). */
struct TuningEntry
{
    TunedKernel kernel;
    std::optional<uint32_t> a, b; // element types
    std::optional<uint32_t> m, n, k;
    std::string config;
    std::string where; // "FILE: devices[0].entries[3]", for messages
};

/** The entries of one device (and driver) in a table. */
struct TuningDevice
{
    std::string device;
    std::string driver; // empty: any driver
    std::vector<TuningEntry> entries;
};

/** A table as read: `source` names it in messages and in OpMatMul's
 * report ("built-in nvidia-h100.json", or the file's path). */
struct TuningTable
{
    std::string source;
    std::vector<TuningDevice> devices;

    /** Logs `message` as a warning the first time this table is given it
     * (products are looked up each time an OpMatMul is built). */
    void reportOnce(const std::string& message) const;

  private:
    struct Reported
    {
        std::mutex mutex;
        std::set<std::string> messages;
    };
    std::shared_ptr<Reported> mReported = std::make_shared<Reported>();
};

/** Reads a table from JSON text. Throws kp::Error where the text is no
 * table (not JSON, no "devices" array); a device or an entry that is
 * malformed (no kernel or config, an unknown kernel or type name, a config
 * that does not parse) is reported with a warning naming `source` and
 * where it is, and left out. */
TuningTable
readTuningTable(const std::string& text, const std::string& source);

/** The tables OpMatMul consults, in order: the file KOMPUTE_ENV_TUNING_FILE
 * names (read again when its path, size or time changes; one it cannot
 * read or parse is reported with a warning, once for each such version,
 * and skipped), then the built-in ones. */
std::vector<std::shared_ptr<const TuningTable>>
tuningTables();

/** The entry that tunes `query` on `device` (name and driver as
 * DeviceView has them): the first table with one; within a table, devices
 * of that name whose driver is the device's first, then those that name
 * none, then the others; within a device, the entry whose given fields all
 * match (types and n, k equal; m at most the product's) with the most
 * fields given, then the largest m. Entries for which `fits` returns a
 * problem are reported (TuningTable::reportOnce) and passed over. */
struct TunedChoice
{
    std::string config;
    std::string source; // "table SOURCE (device ..., driver ...)"
};
std::optional<TunedChoice>
findTuning(const std::vector<std::shared_ptr<const TuningTable>>& tables,
           const DeviceView& device,
           const TuningQuery& query,
           const std::function<std::string(const std::string& config)>& fits);

/** The configurations' text forms (the tables', and the KOMPUTE_ENV_
 * overrides'), and their parsers: each parser sets `config`'s fields from
 * `text` and returns an empty string, or says what is wrong with its form
 * (leaving `config` as it was); whether the result fits a device is
 * matVecProblem's, coopmatProblem's and tiledProblem's to say.
 *   matvec-qx: threads:rows:groupsPerSM:prefetch:stage[:interleave]
 *              (groupsPerSM 0: a workgroup per tile of rows; `smCount` 0
 *              counts as 1; interleave left out: `config`'s kept)
 *   coopmat:   BM:BN:BK:WM:WN:STAGES[:AHEAD] (STAGES 1 or 2; AHEAD 1-4,
 *              left out: `config`'s kept)
 *   tiled:     BM:BN:BK:TM:TN:STAGES */
std::string parseQxConfig(const std::string& text, uint32_t smCount, MatVecConfig& config);
std::string parseCoopmatConfig(const std::string& text, CoopmatConfig& config);
std::string parseTiledConfig(const std::string& text, TiledConfig& config);
std::string qxConfigText(const MatVecConfig& config, uint32_t smCount);
std::string coopmatConfigText(const CoopmatConfig& config);
std::string tiledConfigText(const TiledConfig& config);

/** The element type named `name` ("f16", "q4_0x8": elementTypeName's
 * names); false if there is none. */
bool elementTypeOf(const std::string& name, uint32_t& type);

} // namespace matmul
} // namespace kernels
} // namespace kp
