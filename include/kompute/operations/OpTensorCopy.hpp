// SPDX-License-Identifier: Apache-2.0
// Kompute 0.9.0's header of kp::OpTensorCopy, a deprecated alias (see LegacyTensorOps.hpp).
#pragma once

#include "kompute/operations/LegacyTensorOps.hpp"
