"""Lesson 10: sequence, context and expert parallelism."""

from gpuviz.models.sequence_expert.kv_overlap import (
    KvOverlapModel,
    KvOverlapOut,
    crossing_block,
    kv_block_bytes,
    round_flops,
)

__all__ = ["KvOverlapModel", "KvOverlapOut", "crossing_block", "kv_block_bytes",
           "round_flops"]
