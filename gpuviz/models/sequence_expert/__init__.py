"""Lesson 10: sequence, context and expert parallelism."""

from gpuviz.models.sequence_expert.kv_overlap import (
    KvOverlapModel,
    KvOverlapOut,
    crossing_block,
    kv_block_bytes,
    round_flops,
)
from gpuviz.models.sequence_expert.moe_routing import (
    MoeOut,
    MoeRoutingModel,
    capacity,
    kept_copies,
    moe_step,
    route,
)
from gpuviz.models.sequence_expert.ring_attention import (
    RingAttentionModel,
    RingAttentionOut,
    chunk_owners,
    round_work,
)
from gpuviz.models.sequence_expert.sequence_parallel import (
    SequenceParallelModel,
    SequenceParallelOut,
    op_bytes,
    stored_bytes,
)
from gpuviz.models.sequence_expert.ulysses import (
    UlyssesModel,
    UlyssesOut,
    all_to_all_sent,
    head_owner,
    sequence_owner,
    shard_bytes,
)

__all__ = ["KvOverlapModel", "KvOverlapOut", "crossing_block", "kv_block_bytes",
           "round_flops", "RingAttentionModel", "RingAttentionOut", "chunk_owners",
           "round_work", "SequenceParallelModel", "SequenceParallelOut", "op_bytes",
           "stored_bytes", "UlyssesModel", "UlyssesOut", "all_to_all_sent", "head_owner",
           "sequence_owner", "shard_bytes", "MoeOut", "MoeRoutingModel", "capacity",
           "kept_copies", "moe_step", "route"]
