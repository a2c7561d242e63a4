"""Transformer model presets from resources/models/*.toml, each field with its source.

A file has `name`, `short_name` and `order`, an `[architecture]` table whose every entry is
an inline table {value = ..., source = "..."}, and a `[published]` table with the
parameter count the authors report (`rounded_to` says how coarsely it was printed, for
counts such as "1.3B"). `load_models()` reads and validates them once; a bad file raises
DataError naming the file and the field, like the hardware loader.

`ModelConfig` is also what `gpuviz.models.transformer` takes, so a lesson can build a
variant with `dataclasses.replace(config, kv_heads=8)` or a toy config by hand.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from gpuviz.data import DataError, UserEntries, read_header, read_toml
from gpuviz.paths import resource

POSITIONS = ("learned", "rope")
NORMS = ("layernorm", "rmsnorm")
MLPS = ("gelu", "swiglu")

# field -> (type, allowed values or None)
INT_FIELDS = ("layers", "hidden", "intermediate", "heads", "kv_heads", "head_dim", "vocab",
              "context")
BOOL_FIELDS = ("tied_embeddings", "bias")
CHOICE_FIELDS = {"positions": POSITIONS, "norm": NORMS, "mlp": MLPS}


@dataclass(frozen=True)
class ModelConfig:
    """One transformer's shape. Sizes are counts (layers, features, heads, tokens).

    context: the longest sequence the model was trained for (tokens); with learned
    positions it is also the number of position embeddings.
    A mixture of experts routes each token through `experts_per_token` of `experts` MLPs
    (plus a shared one when `shared_expert_intermediate` is set); the per-token costs of
    gpuviz.models.transformer follow those active experts.
    published_params: the count its authors report; published_rounded_to: the unit it was
    printed in (0 when exact).
    """

    key: str
    name: str
    short_name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    tied_embeddings: bool
    positions: str  # "learned" or "rope"
    norm: str  # "layernorm" or "rmsnorm"
    mlp: str  # "gelu" (2 matrices) or "swiglu" (3 matrices)
    bias: bool
    # Shapes the shipped presets do not use, for imported models (gpuviz.imports):
    qkv_bias: bool = False  # biases on the Q, K and V projections only (Qwen2)
    experts: int = 1  # MLP experts per layer (mixture of experts), each `intermediate` wide
    experts_per_token: int = 1  # experts each token runs through
    shared_expert_intermediate: int = 0  # an always-on shared expert's width (Qwen-MoE)
    published_params: float = 0.0
    published_rounded_to: float = 0.0
    order: int = 99
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def attention_kind(self) -> str:
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"

    def source(self, name: str) -> str:
        return self.sources.get(name, "")


def parse_model(path: Path) -> ModelConfig:
    data = read_toml(path)
    title, short_name, order = read_header(path, data)
    arch = data.get("architecture")
    if not isinstance(arch, dict):
        raise DataError(path, "architecture", "missing section")
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for name in (*INT_FIELDS, *BOOL_FIELDS, *CHOICE_FIELDS):
        where = f"architecture.{name}"
        value, source = _entry(path, where, arch.get(name))
        if name in INT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise DataError(path, where, f"value must be a positive whole number, "
                                             f"not {value!r}")
        elif name in BOOL_FIELDS:
            if not isinstance(value, bool):
                raise DataError(path, where, f"value must be true or false, not {value!r}")
        elif value not in CHOICE_FIELDS[name]:
            allowed = ", ".join(CHOICE_FIELDS[name])
            raise DataError(path, where, f"value must be one of {allowed}, not {value!r}")
        values[name] = value
        sources[name] = source
    unknown = sorted(set(arch) - set(values))
    if unknown:
        raise DataError(path, f"architecture.{unknown[0]}", "unknown field")
    if values["heads"] % values["kv_heads"]:
        raise DataError(path, "architecture.kv_heads",
                        f"{values['kv_heads']} KV heads do not divide {values['heads']} heads")

    published = data.get("published")
    if not isinstance(published, dict):
        raise DataError(path, "published", "missing section")
    count, source = _entry(path, "published.parameters", published.get("parameters"))
    if isinstance(count, bool) or not isinstance(count, int | float) or not count > 0:
        raise DataError(path, "published.parameters",
                        f"value must be a positive number, not {count!r}")
    rounded_to = published["parameters"].get("rounded_to", 0)
    if isinstance(rounded_to, bool) or not isinstance(rounded_to, int | float) \
            or rounded_to < 0:
        raise DataError(path, "published.parameters",
                        f"rounded_to must be a number >= 0, not {rounded_to!r}")
    sources["published_params"] = source
    return ModelConfig(key=path.stem, name=title, short_name=short_name,
                       published_params=float(count), published_rounded_to=float(rounded_to),
                       order=order, sources=sources, **values)


def _entry(path: Path, where: str, entry: object) -> tuple[object, str]:
    if entry is None:
        raise DataError(path, where, "missing")
    if not isinstance(entry, dict) or "value" not in entry:
        raise DataError(path, where, "must be a table {value = ..., source = \"...\"}")
    source = entry.get("source")
    if not isinstance(source, str) or not source.strip():
        raise DataError(path, where, "needs a source")
    return entry["value"], source


def models_dir() -> Path:
    return resource("models")


def load_models(directory: Path | None = None) -> dict[str, ModelConfig]:
    """All model presets, in display order, then the user's (`USER_MODELS`) when no
    directory is given. Raises DataError for the first bad file."""
    return _load(directory) if directory else USER_MODELS.all()


def shipped_models() -> dict[str, ModelConfig]:
    return _load(models_dir())


@functools.cache
def _load(directory: Path) -> dict[str, ModelConfig]:
    paths = sorted(directory.glob("*.toml"))
    if not paths:
        raise DataError(directory, "", "holds no model files (*.toml)")
    models = [parse_model(path) for path in paths]
    return {m.key: m for m in sorted(models, key=lambda m: (m.order, m.key))}


def model(key: str) -> ModelConfig:
    return load_models()[key]


def model_choices() -> list[tuple[str, str]]:
    return [(key, USER_MODELS.label(key, m.name)) for key, m in load_models().items()]


# The models the user added (gpuviz.imports fills it); every selector lists them too.
USER_MODELS: UserEntries[ModelConfig] = UserEntries(shipped_models)
DEFAULT_MODEL = "llama2_7b"
