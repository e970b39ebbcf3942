// SPDX-License-Identifier: Apache-2.0
// The kernel library: machine-learning operations recorded into Sequences
// over Tensors (see the README's kernel table).
#pragma once

#include "kompute/kernels/Attention.hpp"
#include "kompute/kernels/Elementwise.hpp"
#include "kompute/kernels/GetRows.hpp"
#include "kompute/kernels/KernelOp.hpp"
#include "kompute/kernels/MatMul.hpp"
#include "kompute/kernels/Norm.hpp"
#include "kompute/kernels/Quantization.hpp"
#include "kompute/kernels/Reduce.hpp"
#include "kompute/kernels/RoPE.hpp"
#include "kompute/kernels/SetRows.hpp"
