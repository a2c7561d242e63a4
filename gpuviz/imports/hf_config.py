"""A model of your own: a Hugging Face `config.json` read as a `ModelConfig`.

The file next to a downloaded checkpoint names its family in `model_type` (or
`architectures`); each family below says how its layers are built (what the file does not
say) and which keys hold its sizes. A key a file leaves out takes the default of the
family's config class in Hugging Face transformers (num_key_value_heads: one per query
head, head_dim: hidden_size / num_attention_heads, GPT-2's n_inner: 4 n_embd, the tying
of the output matrix). Gemma's GeGLU MLP has SwiGLU's three matrices, so it is counted and
costed as one (the activation function's few FLOPs per element aside).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gpuviz.data import DataError, read_json
from gpuviz.data.models import ModelConfig


@dataclass(frozen=True)
class Family:
    positions: str
    norm: str
    mlp: str
    bias: bool  # every linear layer has one (GPT-2)
    qkv_bias: bool  # the Q, K and V projections have one (Qwen2)
    tied: bool  # tie_word_embeddings when the file does not say
    experts: tuple[str, str] | None = None  # keys of the expert count and the top k
    expert_width: str = "intermediate_size"  # the key of one expert's width
    shared_expert: str = ""  # the key of the shared expert's width (Qwen-MoE)
    # Keys whose other values gpuviz does not model, with the one it does (or absent).
    fixed: tuple[tuple[str, object], ...] = ()


LLAMA = Family("rope", "rmsnorm", "swiglu", False, False, False,
               fixed=(("attention_bias", False), ("mlp_bias", False)))
FAMILIES = {
    "llama": LLAMA,
    "mistral": LLAMA,
    "mixtral": Family("rope", "rmsnorm", "swiglu", False, False, False,
                      experts=("num_local_experts", "num_experts_per_tok")),
    "qwen2": Family("rope", "rmsnorm", "swiglu", False, True, False),
    "qwen2_moe": Family("rope", "rmsnorm", "swiglu", False, True, False,
                        experts=("num_experts", "num_experts_per_tok"),
                        expert_width="moe_intermediate_size",
                        shared_expert="shared_expert_intermediate_size",
                        fixed=(("decoder_sparse_step", 1), ("mlp_only_layers", []))),
    "gemma": Family("rope", "rmsnorm", "swiglu", False, False, True),
    "gpt2": Family("learned", "layernorm", "gelu", True, False, True),
}
ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
                 "MixtralForCausalLM": "mixtral", "Qwen2ForCausalLM": "qwen2",
                 "Qwen2MoeForCausalLM": "qwen2_moe", "GemmaForCausalLM": "gemma",
                 "GPT2LMHeadModel": "gpt2"}
# Each size: the Llama-style key, then GPT-2's name for it.
SIZE_KEYS = {"hidden": ("hidden_size", "n_embd"), "layers": ("num_hidden_layers", "n_layer"),
             "heads": ("num_attention_heads", "n_head"), "vocab": ("vocab_size",),
             "context": ("max_position_embeddings", "n_positions")}
# What tells a JSON file is a model's config (the content sniffing of gpuviz.imports).
MODEL_KEYS = ("model_type", "architectures", "hidden_size", "n_embd")


def looks_like_config(data: object) -> bool:
    return isinstance(data, dict) and any(key in data for key in MODEL_KEYS)


def display_name(path: Path) -> str:
    """A checkpoint's config is always called config.json: its folder names the model."""
    return path.parent.name if path.name == "config.json" and path.parent.name else path.stem


def model_id(name: str) -> str:
    """The id `--set preset=...` takes: the name in lower case, other signs as "_"."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "model"


def read_config(path: Path) -> ModelConfig:
    data = read_json(path)
    if not looks_like_config(data):
        raise DataError(path, "model_type", "missing: a Hugging Face config.json names its "
                                            "model_type, architectures and hidden_size")
    return parse_config(path, data)


def parse_config(path: Path, data: dict) -> ModelConfig:
    kind = _family_name(path, data)
    family = FAMILIES[kind]
    for key, value in family.fixed:
        if key in data and data[key] != value:
            raise DataError(path, key, f"gpuviz models {kind} only with "
                                       f"{json.dumps(value)}, not {json.dumps(data[key])}")
    sizes = {name: _whole(path, data, keys) for name, keys in SIZE_KEYS.items()}
    hidden, heads = sizes["hidden"], sizes["heads"]
    kv_heads = _whole(path, data, ("num_key_value_heads",), default=heads)
    if heads % kv_heads:
        raise DataError(path, "num_key_value_heads",
                        f"{kv_heads} KV heads do not divide {heads} attention heads")
    if "head_dim" in data:
        head_dim = _whole(path, data, ("head_dim",))
    elif hidden % heads:
        raise DataError(path, "head_dim", f"missing, and {heads} heads do not divide "
                                          f"hidden size {hidden}")
    else:
        head_dim = hidden // heads
    if kind == "gpt2":
        intermediate = _whole(path, data, ("n_inner",), default=4 * hidden)
    else:
        intermediate = _whole(path, data, (family.expert_width,))
    experts = top_k = 1
    if family.experts:
        experts = _whole(path, data, (family.experts[0],))
        top_k = _whole(path, data, (family.experts[1],))
        if top_k > experts:
            raise DataError(path, family.experts[1], f"{top_k} experts per token, but "
                                                     f"only {experts} experts")
    shared = _whole(path, data, (family.shared_expert,)) if family.shared_expert else 0
    tied = data.get("tie_word_embeddings", family.tied)
    if not isinstance(tied, bool):
        raise DataError(path, "tie_word_embeddings", f"must be true or false, not {tied!r}")
    name = display_name(path)
    return ModelConfig(
        key=model_id(name), name=name, short_name=name, intermediate=intermediate,
        kv_heads=kv_heads, head_dim=head_dim, tied_embeddings=tied,
        positions=family.positions, norm=family.norm, mlp=family.mlp, bias=family.bias,
        qkv_bias=family.qkv_bias, experts=experts, experts_per_token=top_k,
        shared_expert_intermediate=shared, sources={"file": str(path)}, **sizes)


def _family_name(path: Path, data: dict) -> str:
    kind = data.get("model_type")
    if kind is None:
        names = data.get("architectures") or []
        kind = next((ARCHITECTURES[a] for a in names if a in ARCHITECTURES), None)
        if kind is None:
            raise DataError(path, "model_type", f"missing; expected one of "
                                                f"{', '.join(FAMILIES)}")
    if kind not in FAMILIES:
        raise DataError(path, "model_type", f"{kind!r} is not a family gpuviz reads "
                                            f"(one of {', '.join(FAMILIES)})")
    return kind


def _whole(path: Path, data: dict, keys: tuple[str, ...], default: int | None = None) -> int:
    """The first of `keys` the file sets (null counts as unset), as a whole number > 0."""
    key = next((k for k in keys if data.get(k) is not None), None)
    if key is None:
        if default is not None:
            return default
        raise DataError(path, keys[0], "missing (a whole number > 0)")
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DataError(path, key, f"must be a whole number > 0, not {value!r}")
    return value
