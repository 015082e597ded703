"""An independent reading of an exported model: loads config.json and
model.safetensors as transformers' GPT2LMHeadModel or LlamaForCausalLM
define them (Conv1D weights [in, out], gelu_new, LayerNorm; Llama's RMSNorm,
SwiGLU, rotate_half RoPE, grouped-query attention), in numpy, and prints the
mean loss over the non-overlapping windows of n_positions + 1 tokens of the
shard files given, as `avf-run checkpoint eval` defines it.

Usage: hf_reference.py MODEL_DIR SHARD...
"""
import json
import struct
import sys

import numpy as np


def load_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = body[begin:end]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            sys.exit(f"{name}: dtype {t['dtype']}")
        out[name] = a.reshape(t["shape"]).astype(np.float64)
    return out


def read_tokens(paths):
    tokens = []
    for p in paths:
        data = open(p, "rb").read()
        words = struct.unpack("<256I", data[:1024])
        assert words[0] == 0x54465641, p
        width, count = words[2], words[4] | words[5] << 32
        tokens.append(np.frombuffer(data[1024:], dtype="<u2" if width == 2 else "<u4")[:count])
    return np.concatenate(tokens).astype(np.int64)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_new(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v):
    """q: [heads, T, d]; k, v: [kv_heads, T, d]; causal."""
    group = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
    t = q.shape[1]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    scores = np.where(np.tril(np.ones((t, t), dtype=bool)), scores, -np.inf)
    return softmax(scores) @ v


def gpt2_logits(c, w, ids):
    t, heads = len(ids), c["n_head"]
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:t]
    eps = c.get("layer_norm_epsilon", 1e-5)
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        q, k, v = np.split(h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"], 3, axis=-1)
        split = lambda a: a.reshape(t, heads, -1).transpose(1, 0, 2)
        a = attention(split(q), split(k), split(v)).transpose(1, 0, 2).reshape(t, -1)
        x = x + a @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        x = x + gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]) @ w[p + "mlp.c_proj.weight"] \
            + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps)
    return x @ w.get("lm_head.weight", w["transformer.wte.weight"]).T


def rope(x, theta):
    """rotate_half: dimension i pairs with i + d/2."""
    d, t = x.shape[-1], x.shape[1]
    freq = theta ** (-np.arange(0, d, 2) / d)
    angle = np.outer(np.arange(t), freq)
    cos, sin = np.cos(np.concatenate([angle, angle], -1)), np.sin(np.concatenate([angle, angle], -1))
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + rotated * sin


def llama_logits(c, w, ids):
    t, heads, kv = len(ids), c["num_attention_heads"], c["num_key_value_heads"]
    eps, theta = c["rms_norm_eps"], c.get("rope_theta", 10000.0)
    x = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        split = lambda a, n: a.reshape(t, n, -1).transpose(1, 0, 2)
        q = rope(split(h @ w[p + "self_attn.q_proj.weight"].T, heads), theta)
        k = rope(split(h @ w[p + "self_attn.k_proj.weight"].T, kv), theta)
        v = split(h @ w[p + "self_attn.v_proj.weight"].T, kv)
        a = attention(q, k, v).transpose(1, 0, 2).reshape(t, -1)
        x = x + a @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    return x @ w.get("lm_head.weight", w["model.embed_tokens.weight"]).T


def main():
    model_dir, shards = sys.argv[1], sys.argv[2:]
    c = json.load(open(model_dir + "/config.json"))
    w = load_safetensors(model_dir + "/model.safetensors")
    gpt2 = c["model_type"] == "gpt2"
    seq = c["n_positions"] if gpt2 else c["max_position_embeddings"]
    tokens = read_tokens(shards)
    windows = len(tokens) // (seq + 1)
    losses = []
    for i in range(windows):
        window = tokens[i * (seq + 1):(i + 1) * (seq + 1)]
        logits = (gpt2_logits if gpt2 else llama_logits)(c, w, window[:-1])
        logp = logits - logits.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        losses.append(-logp[np.arange(seq), window[1:]].mean())
    print(f"loss {np.mean(losses):.6f} over {windows} windows")


if __name__ == "__main__":
    main()
