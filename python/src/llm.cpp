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
        "model",
        [](const llm::Tokenizer& t) {
            return t.vocabulary().model == llm::Vocabulary::Model::eSentencePiece ? "llama" : "gpt2";
        },
        "'llama' (SentencePiece) or 'gpt2' (byte-level BPE), as tokenizer.ggml.model says.")
      .def("is_end_of_generation",
           &llm::Tokenizer::isEndOfGeneration,
           "id"_a,
           "True for EOS, end of turn and the like: generation stops there.");
}

} // namespace python
} // namespace kp
