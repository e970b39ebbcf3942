// SPDX-License-Identifier: Apache-2.0
#include "kompute/operations/OpMult.hpp"

#include "ShaderOpMult.hpp"
#include "internal/OpChecks.hpp"
#include "kompute/logger/Logger.hpp"

namespace kp {

namespace {
// Must match the local size in src/shaders/ShaderOpMult.comp.
constexpr uint32_t kOpMultLocalSize = 64;
}

const std::shared_ptr<Algorithm>&
OpMult::prepare(const std::vector<std::shared_ptr<Memory>>& memObjects,
                const std::shared_ptr<Algorithm>& algorithm)
{
    if (memObjects.size() != 3) {
        throw Error(logger::format("OpMult needs exactly 3 memory objects {{a, b, out}}, {} given",
                                   memObjects.size()));
    }
    if (!algorithm) {
        throw Error("OpMult was given a null algorithm");
    }
    for (size_t i = 0; i < 3; ++i) {
        if (!memObjects[i]) {
            throw Error(logger::format("OpMult: memory object {} is null", i));
        }
        memObjects[i]->checkInit("OpMult");
        if (memObjects[i]->type() != Memory::Type::eTensor ||
            memObjects[i]->dataType() != Memory::DataTypes::eFloat) {
            throw Error(logger::format("OpMult multiplies float tensors; memory object {} is not a "
                                       "float tensor",
                                       i));
        }
        if (memObjects[i]->size() != memObjects[0]->size()) {
            throw Error(logger::format("OpMult: the tensors differ in size ({} and {} elements)",
                                       memObjects[0]->size(),
                                       memObjects[i]->size()));
        }
    }
    internal::checkOneDevice(memObjects, "OpMult");
    if (algorithm->mDevice && algorithm->mDevice->device() !=
                                internal::MemoryInternals::device(*memObjects[0])->device()) {
        throw Error("OpMult: the algorithm belongs to another Manager than the tensors; create "
                    "it with the tensors' Manager");
    }
    uint32_t groups = (memObjects[0]->size() + kOpMultLocalSize - 1) / kOpMultLocalSize;
    // The built-in shader declares no constants: any the algorithm had
    // would not match it.
    algorithm->clearConstants();
    algorithm->rebuild(memObjects,
                       std::vector<uint32_t>(SHADEROPMULT_COMP_SPV.begin(), SHADEROPMULT_COMP_SPV.end()),
                       Workgroup{ groups, 1, 1 },
                       ConstantBytes{},
                       ConstantBytes{});
    return algorithm;
}

OpMult::OpMult(std::vector<std::shared_ptr<Memory>> memObjects, std::shared_ptr<Algorithm> algorithm)
  : OpAlgoDispatch(prepare(memObjects, algorithm), ConstantBytes{})
{
}

OpMult::~OpMult() = default;

} // namespace kp
