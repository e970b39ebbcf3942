// SPDX-License-Identifier: Apache-2.0
// Umbrella header: everything public in Kompute.
#pragma once

#include "kompute/Algorithm.hpp"
#include "kompute/Capabilities.hpp"
#include "kompute/Core.hpp"
#include "kompute/DeviceInfo.hpp"
#include "kompute/Errors.hpp"
#include "kompute/Half.hpp"
#include "kompute/Image.hpp"
#include "kompute/Manager.hpp"
#include "kompute/Memory.hpp"
#include "kompute/Sequence.hpp"
#include "kompute/Shader.hpp"
#include "kompute/Tensor.hpp"
#include "kompute/logger/Logger.hpp"

#include "kompute/operations/OpAlgoDispatch.hpp"
#include "kompute/operations/OpBase.hpp"
#include "kompute/operations/OpCopy.hpp"
#include "kompute/operations/OpMemoryBarrier.hpp"
#include "kompute/operations/OpMult.hpp"
#include "kompute/operations/OpSyncDevice.hpp"
#include "kompute/operations/OpSyncLocal.hpp"

// Kompute 0.9.0's names, deprecated (OpTensorSyncDevice, OpTensorSyncLocal,
// OpTensorCopy; Tensor::TensorTypes and the tensor-list overloads are in
// their classes).
#include "kompute/operations/LegacyTensorOps.hpp"

#include "kompute/kernels/Kernels.hpp"

// The built-in shaders, as upstream exposes them (kp::SHADEROPMULT_COMP_SPV,
// kp::SHADERLOGISTICREGRESSION_COMP_SPV).
#include "ShaderLogisticRegression.hpp"
#include "ShaderOpMult.hpp"
