// SPDX-License-Identifier: Apache-2.0
// What Kompute 0.9.0's names need beyond the headers (include/kompute/
// Legacy*.hpp, Tensor::TensorTypes, ...): they are deprecated aliases of the
// current API, kept so that programs written for 0.9.0 build unchanged.
#include "kompute/Algorithm.hpp"
#include "kompute/Errors.hpp"
#include "kompute/Tensor.hpp"

#include <string>

namespace kp {

std::vector<std::shared_ptr<Tensor>>
Algorithm::getTensors() const
{
    std::vector<std::shared_ptr<Tensor>> tensors;
    tensors.reserve(mMemObjects.size());
    for (size_t i = 0; i < mMemObjects.size(); ++i) {
        auto tensor = std::dynamic_pointer_cast<Tensor>(mMemObjects[i]);
        if (mMemObjects[i] != nullptr && tensor == nullptr) {
            throw Error("Algorithm::getTensors(): binding " + std::to_string(i) +
                        " is an image, which Kompute 0.9.0's list of tensors cannot hold; "
                        "use getMemObjects()");
        }
        tensors.push_back(std::move(tensor));
    }
    return tensors;
}

} // namespace kp
