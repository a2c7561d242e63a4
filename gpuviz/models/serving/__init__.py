"""Lesson 12, LLM inference serving: one module per figure, with the lesson's shared,
Qt-free physics beside them (`costs`: a decode step's bytes, FLOPs and time, and the GPU's
memory budget; `decode_batch`: 12.1, the step time against the batch; `batching`: 12.2,
static against continuous batching; `kv_blocks`: 12.3, contiguous against paged KV-cache
memory; `speculative_sampling`: 12.4, the accept/resample rule at one position;
`speculative_decoding`: 12.5, rounds of draft tokens and the best γ; `long_prompt`: 12.6,
a long prompt prefilled in one piece, in chunks or on a second GPU)."""

from gpuviz.models.serving.batching import BatchingModel, BatchingOut, Policy
from gpuviz.models.serving.costs import (
    CACHE_BYTES,
    CACHE_PRECISIONS,
    HEADROOM,
    WORKSPACE,
    DecodeSteps,
    MemoryBudget,
    decode_steps,
    memory_budget,
)
from gpuviz.models.serving.decode_batch import DecodeBatchModel, DecodeBatchOut
from gpuviz.models.serving.kv_blocks import KvBlocksModel, KvBlocksOut
from gpuviz.models.serving.long_prompt import LongPromptModel, LongPromptOut
from gpuviz.models.serving.speculative_decoding import (
    SpeculativeDecodingModel,
    SpeculativeDecodingOut,
)
from gpuviz.models.serving.speculative_sampling import (
    SpeculativeSamplingModel,
    SpeculativeSamplingOut,
)

__all__ = [
    "BatchingModel",
    "BatchingOut",
    "CACHE_BYTES",
    "CACHE_PRECISIONS",
    "HEADROOM",
    "WORKSPACE",
    "DecodeBatchModel",
    "DecodeBatchOut",
    "DecodeSteps",
    "KvBlocksModel",
    "KvBlocksOut",
    "LongPromptModel",
    "LongPromptOut",
    "MemoryBudget",
    "Policy",
    "SpeculativeDecodingModel",
    "SpeculativeDecodingOut",
    "SpeculativeSamplingModel",
    "SpeculativeSamplingOut",
    "decode_steps",
    "memory_budget",
]
