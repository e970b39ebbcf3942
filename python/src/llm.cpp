// SPDX-License-Identifier: Apache-2.0
// Bindings of the LLM runner (kp.llm): the GGUF reader, the tokenizer and
// the model. Logic lives in the C++ library kompute::llm; this file only
// converts arguments and results.
#include "common.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <kompute/llm/Llm.hpp>

using namespace nb::literals;

namespace kp {
namespace python {

namespace {

nb::object
valueToPython(const llm::GgufValue& value)
{
    return std::visit(
      [](const auto& v) -> nb::object {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
              PyObject* text = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "replace");
              if (text == nullptr) {
                  throw nb::python_error();
              }
              return nb::steal(text);
          } else if constexpr (std::is_same_v<T, llm::GgufArray>) {
              nb::list list;
              for (const llm::GgufValue& element : v.elements) {
                  list.append(valueToPython(element));
              }
              return std::move(list);
          } else {
              return nb::cast(v);
          }
      },
      value.value);
}

nb::bytes
toBytes(const std::string& text)
{
    return nb::bytes(text.data(), text.size());
}

std::string
toText(const std::string& bytes)
{
    PyObject* text = PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace");
    if (text == nullptr) {
        throw nb::python_error();
    }
    nb::object owned = nb::steal(text);
    return nb::cast<std::string>(owned);
}

/** A float32 numpy array of shape [rows, cols] that owns `values`. */
nb::ndarray<nb::numpy, float, nb::ndim<2>>
matrix(std::vector<float> values, size_t rows, size_t cols)
{
    auto* owned = new std::vector<float>(std::move(values));
    nb::capsule deleter(owned, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
    size_t shape[2] = { rows, cols };
    return nb::ndarray<nb::numpy, float, nb::ndim<2>>(owned->data(), 2, shape, deleter);
}

/** kp.llm.Model: a model, its tokenizer and one context (KV cache). The
 * Manager is the caller's (kept alive by nanobind) or one of its own. */
struct PyModel
{
    std::unique_ptr<kp::Manager> ownManager;
    std::optional<llm::GgufFile> file;
    std::optional<llm::Tokenizer> tokenizer;
    std::optional<llm::WeightMix> mix; // random weights
    std::shared_ptr<llm::Model> model;
    std::unique_ptr<llm::Context> context;
};

llm::Logits
logitsNamed(const std::string& which)
{
    if (which == "none") {
        return llm::Logits::eNone;
    }
    if (which == "last") {
        return llm::Logits::eLast;
    }
    if (which == "all") {
        return llm::Logits::eAll;
    }
    throw nb::value_error("logits must be 'none', 'last' or 'all'");
}

} // namespace

void
bindLlm(nb::module_& parent)
{
    nb::module_ m = parent.def_submodule(
      "llm",
      "The LLM runner: GGUF files, tokenizers and Llama-family models (import kp.llm, not this module).");

    // --- GGUF files ------------------------------------------------------------------------

    nb::class_<llm::GgufFile>(m,
                              "GgufFile",
                              "A GGUF model file (versions 2 and 3), memory-mapped: its metadata and "
                              "tensor infos. Bad files raise kp.Error naming the file and the problem.")
      .def(
        "__init__",
        [](llm::GgufFile* self, const std::string& path) {
            ReleaseGil release;
            new (self) llm::GgufFile(llm::GgufFile::open(path));
        },
        "path"_a,
        "Opens and maps the file and reads its header, metadata and tensor infos.")
      .def_prop_ro("name", &llm::GgufFile::name, "The path the file was opened with.")
      .def_prop_ro("version", &llm::GgufFile::version, "The GGUF version (2 or 3).")
      .def_prop_ro("alignment", &llm::GgufFile::alignment, "general.alignment (32 when absent).")
      .def_prop_ro(
        "metadata",
        [](const llm::GgufFile& file) {
            nb::dict dict;
            for (const llm::GgufKeyValue& entry : file.metadata()) {
                dict[nb::str(entry.key.c_str())] = valueToPython(entry.value);
            }
            return dict;
        },
        "The metadata as a dict (arrays as lists), in file order.")
      .def(
        "get",
        [](const llm::GgufFile& file, const std::string& key, nb::object fallback) {
            // One value, without converting the whole metadata (a Llama 3
            // vocabulary is 128,000 strings) as `metadata` does.
            const llm::GgufValue* value = file.find(key);
            return value == nullptr ? fallback : valueToPython(*value);
        },
        "key"_a,
        "default"_a = nb::none(),
        "The metadata value of `key` (arrays as lists), or `default` when the file has no such key.")
      .def_prop_ro(
        "tensors",
        [](const llm::GgufFile& file) {
            nb::list list;
            for (const llm::GgufTensorInfo& info : file.tensors()) {
                nb::dict entry;
                entry["name"] = info.name;
                entry["shape"] = nb::tuple(nb::cast(info.shape));
                entry["type"] = llm::toString(info.type);
                entry["offset"] = info.offset;
                entry["nbytes"] = info.byteSize;
                list.append(entry);
            }
            return list;
        },
        "The tensor infos: dicts of name, shape (ne0 first, as GGUF stores it), type ('F16', "
        "'Q4_0', ...), offset (in the data section) and nbytes.");

    // --- Tokenizer ---------------------------------------------------------------------------

    nb::class_<llm::Tokenizer>(m,
                               "Tokenizer",
                               "Text to token ids and back, with the vocabulary of a GGUF file: the "
                               "SentencePiece model (tokenizer.ggml.model 'llama') or byte-level BPE "
                               "('gpt2', Llama 3).")
      .def_static(
        "from_gguf",
        [](const std::string& path) {
            ReleaseGil release;
            return llm::Tokenizer::fromGguf(llm::GgufFile::open(path));
        },
        "path"_a,
        "The tokenizer of a GGUF file (its tokenizer.ggml.* metadata).")
      .def(
        "encode",
        [](const llm::Tokenizer& t, const std::string& text, bool addSpecial, bool parseSpecial) {
            return t.encode(text, addSpecial, parseSpecial);
        },
        "text"_a,
        "add_special"_a = true,
        "parse_special"_a = true,
        "Token ids of text. add_special adds BOS/EOS as the vocabulary asks; parse_special turns "
        "the texts of control tokens ('<s>', '<|eot_id|>') into those tokens.")
      .def(
        "decode",
        [](const llm::Tokenizer& t, const std::vector<uint32_t>& ids, bool renderSpecial) {
            return toText(t.decode(ids, renderSpecial));
        },
        "ids"_a,
        "render_special"_a = false,
        "The text of ids (invalid UTF-8 replaced by U+FFFD); control tokens are left out unless "
        "render_special.")
      .def(
        "decode_bytes",
        [](const llm::Tokenizer& t, const std::vector<uint32_t>& ids, bool renderSpecial) {
            return toBytes(t.decode(ids, renderSpecial));
        },
        "ids"_a,
        "render_special"_a = false,
        "The bytes of ids, exactly as the tokens stand for them.")
      .def(
        "piece",
        [](const llm::Tokenizer& t, uint32_t id, bool renderSpecial) { return toBytes(t.piece(id, renderSpecial)); },
        "id"_a,
        "render_special"_a = false,
        "The bytes one token stands for.")
      .def("token_text",
           [](const llm::Tokenizer& t, uint32_t id) {
               t.checkId(id);
               return t.vocabulary().tokens[id];
           },
           "id"_a,
           "The token's text as stored in the vocabulary.")
      .def("__len__", &llm::Tokenizer::size)
      .def_prop_ro("bos", [](const llm::Tokenizer& t) { return t.vocabulary().bos; }, "The BOS id, or None.")
      .def_prop_ro("eos", [](const llm::Tokenizer& t) { return t.vocabulary().eos; }, "The EOS id, or None.")
      .def_prop_ro(
        "add_bos",
        [](const llm::Tokenizer& t) { return t.vocabulary().addBos && t.vocabulary().bos.has_value(); },
        "Whether encode() with add_special puts BOS first (tokenizer.ggml.add_bos_token).")
      .def_prop_ro(
        "model",
        [](const llm::Tokenizer& t) {
            return t.vocabulary().model == llm::Vocabulary::Model::eSentencePiece ? "llama" : "gpt2";
        },
        "'llama' (SentencePiece) or 'gpt2' (byte-level BPE), as tokenizer.ggml.model says.")
      .def("is_end_of_generation",
           &llm::Tokenizer::isEndOfGeneration,
           "id"_a,
           "True for EOS, end of turn and the like: generation stops there.");

    // --- Sampler -------------------------------------------------------------------------------

    nb::class_<llm::Sampler>(m, "Sampler", "Picks the next token from logits: greedy, or temperature, top-k, top-p.")
      .def(
        "__init__",
        [](llm::Sampler* self, float temperature, uint32_t topK, float topP, uint64_t seed) {
            new (self) llm::Sampler(llm::SamplerParams{ temperature, topK, topP, seed });
        },
        "temperature"_a = 0.8f,
        "top_k"_a = 40,
        "top_p"_a = 0.95f,
        "seed"_a = 0,
        "temperature 0 is greedy; top_k 0 keeps every token; top_p 1 keeps every token.")
      .def_prop_ro("is_greedy", &llm::Sampler::isGreedy)
      .def(
        "sample",
        [](llm::Sampler& sampler, nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu> logits) {
            return sampler.sample(logits.data(), logits.shape(0));
        },
        "logits"_a,
        "The next token for a float32 row of logits.");

    // --- Model ---------------------------------------------------------------------------------

    nb::class_<PyModel>(m,
                        "Model",
                        "A Llama-family model (architecture llama, qwen2 or qwen3) on the device with one "
                        "context (KV cache): from a GGUF file, or random weights of a named shape.")
      .def(
        "__init__",
        [](PyModel* self, std::optional<std::string> path, std::optional<std::string> random,
           kp::Manager* manager, uint32_t device, uint32_t contextSize, uint32_t batchSize, uint64_t seed) {
            if (path.has_value() == random.has_value()) {
                throw nb::value_error("give a GGUF file path, or random='SHAPE:TYPE' (e.g. 'tiny:f32'), not both");
            }
            new (self) PyModel();
            ReleaseGil release;
            if (manager == nullptr) {
                self->ownManager = std::make_unique<kp::Manager>(device);
                manager = self->ownManager.get();
            }
            if (path) {
                self->file.emplace(llm::GgufFile::open(*path));
                llm::ModelConfig::fromGguf(*self->file);
                self->tokenizer.emplace(llm::Tokenizer::fromGguf(*self->file));
                self->model = llm::Model::load(*manager, *self->file);
            } else {
                size_t colon = random->find(':');
                if (colon == std::string::npos) {
                    throw kp::Error("random takes 'SHAPE:TYPE', e.g. 'tiny:f32' or 'llama-8b:q4_0'");
                }
                self->mix = llm::WeightMix::parse(random->substr(colon + 1));
                self->model = llm::Model::random(*manager, llm::ModelConfig::named(random->substr(0, colon)),
                                                 *self->mix, seed);
            }
            llm::ContextOptions options;
            options.contextSize = contextSize;
            options.batchSize = batchSize;
            self->context = std::make_unique<llm::Context>(self->model, options);
        },
        "path"_a = nb::none(),
        "random"_a = nb::none(),
        "manager"_a = nb::none(),
        "device"_a = 0,
        "context_size"_a = 0,
        "batch_size"_a = 512,
        "seed"_a = 1,
        nb::keep_alive<1, 4>(),
        "Loads a GGUF file (checked: architecture, hyperparameters, every weight's shape and "
        "type) onto `manager`'s device (a Manager of its own on `device` when None), or makes "
        "random weights: random='llama-8b:q4_0' (or a mix such as 'llama-8b:q4_k_m', 'tiny:q4_0/q6_k'). context_size: tokens of the KV cache (0: the "
        "model's context length, at most 4096); batch_size: most tokens per prompt step.")
      .def_prop_ro(
        "config",
        [](const PyModel& self) {
            const llm::ModelConfig& c = self.model->config();
            nb::dict d;
            d["name"] = c.name;
            d["context_length"] = c.contextLength;
            d["embedding_length"] = c.embeddingLength;
            d["block_count"] = c.blockCount;
            d["feed_forward_length"] = c.feedForwardLength;
            d["head_count"] = c.headCount;
            d["head_count_kv"] = c.headCountKv;
            d["head_dim"] = c.headDim;
            d["rope_dimension_count"] = c.ropeDims;
            d["rope_freq_base"] = c.ropeTheta;
            d["rms_epsilon"] = c.rmsEpsilon;
            d["vocab_size"] = c.vocabSize;
            d["tied_output"] = c.tiedOutput;
            d["weight_type"] = llm::toString(self.model->weightType());
            d["architecture"] = c.architecture;
            d["rope_freq_scale"] = c.ropeFreqScale;
            d["rope_freqs"] = c.ropeFreqFactors;
            nb::dict counts;
            for (const auto& [type, count] : self.model->typeCounts()) {
                counts[llm::toString(type).c_str()] = count;
            }
            d["type_counts"] = counts;
            d["type_mix"] = self.model->typeMix();
            return d;
        },
        "The hyperparameters, as a dict: the file's architecture ('llama', 'qwen2', 'qwen3'), sizes, "
        "RoPE settings (rope_freq_scale: linear scaling; rope_freqs: Llama 3.1's per-frequency factors), "
        "weight_type (of the layers' matrices), and the file's type mix: type_counts (tensors of each "
        "type) and type_mix ('7 Q4_0, 5 F32').")
      .def(
        "__repr__",
        [](const PyModel& self) {
            const llm::ModelConfig& c = self.model->config();
            return "<kp.llm.Model " + (c.name.empty() ? c.architecture : c.name) + " (" + c.architecture + ", " +
                   std::to_string(c.blockCount) + " layers, width " + std::to_string(c.embeddingLength) + "): " +
                   self.model->typeMix() + ">";
        },
        "The model's name, architecture, size and type mix.")
      .def_prop_ro(
        "tokenizer",
        [](PyModel& self) -> llm::Tokenizer* { return self.tokenizer ? &*self.tokenizer : nullptr; },
        nb::rv_policy::reference_internal,
        "The file's tokenizer (None for random weights).")
      .def_prop_ro(
        "file",
        [](PyModel& self) -> llm::GgufFile* { return self.file ? &*self.file : nullptr; },
        nb::rv_policy::reference_internal,
        "The GGUF file the model was loaded from, with its metadata (None for random weights).")
      .def_prop_ro("position", [](const PyModel& self) { return self.context->position(); },
                   "Tokens in the KV cache.")
      .def_prop_ro("context_size", [](const PyModel& self) { return self.context->capacity(); })
      .def("reset", [](PyModel& self) { self.context->reset(); }, "Empties the KV cache.")
      .def(
        "evaluate",
        [](PyModel& self, const std::vector<uint32_t>& tokens, const std::string& which) -> nb::object {
            llm::Logits kind = logitsNamed(which);
            std::vector<float> logits;
            {
                ReleaseGil release;
                self.context->evaluate(tokens, kind, kind == llm::Logits::eNone ? nullptr : &logits);
            }
            if (kind == llm::Logits::eNone) {
                return nb::none();
            }
            size_t vocab = self.model->config().vocabSize;
            size_t rows = logits.size() / vocab;
            return nb::cast(matrix(std::move(logits), rows, vocab));
        },
        "tokens"_a,
        "logits"_a = "last",
        "Runs tokens after those in the KV cache. logits: 'last' returns float32 [1, vocabulary], "
        "'all' [len(tokens), vocabulary], 'none' None.")
      .def(
        "evaluate_greedy",
        [](PyModel& self, const std::vector<uint32_t>& tokens) {
            ReleaseGil release;
            return self.context->evaluateGreedy(tokens);
        },
        "tokens"_a,
        "Runs tokens after those in the KV cache; returns the argmax of the last logits, "
        "computed on the device.")
      .def(
        "logits",
        [](PyModel& self, const std::vector<uint32_t>& tokens) {
            std::vector<float> logits;
            {
                ReleaseGil release;
                self.context->reset();
                self.context->evaluate(tokens, llm::Logits::eAll, &logits);
            }
            size_t vocab = self.model->config().vocabSize;
            return matrix(std::move(logits), tokens.size(), vocab);
        },
        "tokens"_a,
        "Teacher forcing from an empty cache: float32 logits [len(tokens), vocabulary], the "
        "same as kompute-llm --dump-logits.");
}

} // namespace python
} // namespace kp
