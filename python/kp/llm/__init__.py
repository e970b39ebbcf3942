"""kp.llm: run Llama-family models from GGUF files on any Vulkan GPU.

The same C++ code as the ``kompute-llm`` program::

    import kp.llm
    model = kp.llm.Model("model.gguf")               # device 0, or manager=kp.Manager(...)
    ids = model.tokenizer.encode("The capital of France is")
    logits = model.logits(ids)                         # float32 [len(ids), vocabulary]
    text = model.generate("The capital of France is", n=32, temperature=0)

Also here: :class:`GgufFile` (metadata and tensor infos of a file) and
:class:`Tokenizer` (the file's own tokenizer: SentencePiece for Llama 1/2,
byte-level BPE for Llama 3). Bad files raise :class:`kp.Error` naming the
file and what is wrong.
"""

from .._kp import llm as _llm

GgufFile = _llm.GgufFile
Tokenizer = _llm.Tokenizer

__all__ = ["GgufFile", "Tokenizer"]
for _name in __all__:
    globals()[_name].__module__ = "kp.llm"
del _name
