"""Write a tiny random-weight llama GGUF for protocol and timing tests of `acceval llm`.

usage: make_tiny_gguf.py VOCAB.gguf OUT.gguf

VOCAB.gguf is a vocabulary-only GGUF, e.g. vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf
from the llama-cpp-python sdist. The model copies its 32k-token vocabulary and adds random
F32 weights (n_embd 64, 2 layers, 4 heads, ff 128, context 512): llama.cpp loads and runs it,
and it generates gibberish, which is all a serving benchmark needs. Needs `gguf` and `numpy`.
"""

import sys

import gguf
import numpy as np

src, out = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(src)


def values(name):
    f = r.fields[name]
    return [f.parts[i] for i in f.data]


tokens = [bytes(p).decode("utf-8", "replace") for p in values("tokenizer.ggml.tokens")]
scores = [float(p[0]) for p in values("tokenizer.ggml.scores")]
types = [int(p[0]) for p in values("tokenizer.ggml.token_type")]
n_vocab, n_embd, n_layer, n_head, n_ff, ctx = len(tokens), 64, 2, 4, 128, 512

w = gguf.GGUFWriter(out, "llama")
w.add_name("tiny-llama-random")
w.add_context_length(ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(0)
w.add_tokenizer_model("llama")
w.add_tokenizer_pre("default")
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)
w.add_add_eos_token(False)
w.add_chat_template("{% for m in messages %}{{ m['content'] }}\n{% endfor %}")

rng = np.random.default_rng(0)


def rand(name, shape):
    w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))


def ones(name, n):
    w.add_tensor(name, np.ones(n, dtype=np.float32))


rand("token_embd.weight", (n_vocab, n_embd))
ones("output_norm.weight", n_embd)
rand("output.weight", (n_vocab, n_embd))
for i in range(n_layer):
    ones(f"blk.{i}.attn_norm.weight", n_embd)
    for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
        rand(f"blk.{i}.{t}.weight", (n_embd, n_embd))
    ones(f"blk.{i}.ffn_norm.weight", n_embd)
    rand(f"blk.{i}.ffn_gate.weight", (n_ff, n_embd))
    rand(f"blk.{i}.ffn_up.weight", (n_ff, n_embd))
    rand(f"blk.{i}.ffn_down.weight", (n_embd, n_ff))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(out)
