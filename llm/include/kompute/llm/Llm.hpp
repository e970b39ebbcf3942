// SPDX-License-Identifier: Apache-2.0
// Umbrella header of the LLM runner (library kompute::llm).
#pragma once

#include "kompute/llm/Gguf.hpp"
#include "kompute/llm/GgufWriter.hpp"
#include "kompute/llm/Model.hpp"
#include "kompute/llm/ModelConfig.hpp"
#include "kompute/llm/Npy.hpp"
#include "kompute/llm/Sampler.hpp"
#include "kompute/llm/Tokenizer.hpp"
#include "kompute/llm/WeightMix.hpp"
