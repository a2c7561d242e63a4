"""Lesson 12, LLM inference serving: one module per figure, with the lesson's shared,
Qt-free physics beside them (`costs`: a decode step's bytes, FLOPs and time, and the GPU's
memory budget; `decode_batch`: 12.1, the step time against the batch; `batching`: 12.2,
static against continuous batching; `kv_blocks`: 12.3, contiguous against paged KV-cache
memory)."""

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
    "MemoryBudget",
    "Policy",
    "decode_steps",
    "memory_budget",
]
