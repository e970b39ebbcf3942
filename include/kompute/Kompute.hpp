// SPDX-License-Identifier: Apache-2.0
// Umbrella header: everything public in Kompute.
#pragma once

#include "kompute/Core.hpp"
#include "kompute/Errors.hpp"
#include "kompute/Half.hpp"
#include "kompute/Manager.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/logger/Logger.hpp"

#include "kompute/operations/OpBase.hpp"
#include "kompute/operations/OpCopy.hpp"
#include "kompute/operations/OpMemoryBarrier.hpp"
#include "kompute/operations/OpSyncDevice.hpp"
#include "kompute/operations/OpSyncLocal.hpp"
