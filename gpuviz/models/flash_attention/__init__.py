"""Lesson 4, FlashAttention and online softmax: one module per figure, 4.1 the online
softmax stepper (`online_softmax`), 4.2 the tiled score matrix and its HBM traffic
(`tiling`), 4.3 the merge of two partial softmaxes (`merge`), 4.4 one head's forward pass
on the roofline (`head_roofline`), 4.5 split-KV decoding over the SMs (`split_kv`), and
what they share (`common`). Each holds its pure numpy functions (numbers in, frozen
dataclasses out), then its figure model.

Notation: N the sequence length (queries = keys), d the head dimension, B (or B_r) the
number of query rows in one tile, m a running maximum, l a running sum of exponentials,
o a running (normalised) softmax average of the values.
"""

from gpuviz.models.flash_attention.common import (
    BF16_BYTES,
    FP32_BYTES,
    SCORE_SPREAD,
    overflow_readout,
)
from gpuviz.models.flash_attention.head_roofline import (
    ROOFLINE_N_MAX,
    ROOFLINE_N_MIN,
    HeadCosts,
    HeadRooflineModel,
    RooflineState,
    backward_memory_bytes,
    head_forward_costs,
)
from gpuviz.models.flash_attention.merge import (
    Merged,
    MergeModel,
    MergeState,
    Partial,
    merge_partials,
    merge_scores,
    partial_softmax,
)
from gpuviz.models.flash_attention.online_softmax import (
    FLOAT64_EXP_LIMIT,
    HUGE_SCORE,
    OnlineSoftmaxModel,
    OnlineSoftmaxTrace,
    StepperState,
    causal_query,
    huge_index,
    naive_softmax_average,
    online_softmax_trace,
    safe_softmax_average,
    stepper_scores,
)
from gpuviz.models.flash_attention.split_kv import (
    MAX_SPLITS,
    SplitKV,
    SplitKVModel,
    SplitKVState,
    SplitTimes,
    sm_bandwidth,
    sm_stream_bandwidth,
    split_kv_time,
    split_kv_times,
)
from gpuviz.models.flash_attention.tiling import (
    PHASE_FLASH,
    PHASE_NAMES,
    PHASE_O,
    PHASE_P,
    PHASE_S,
    FlashTilingModel,
    TileSchedule,
    TilingState,
    attention_schedule,
    flash1_attention_traffic,
    flash_attention_traffic,
    standard_attention_traffic,
    tile_sizes,
)

__all__ = [
    "BF16_BYTES",
    "FLOAT64_EXP_LIMIT",
    "FP32_BYTES",
    "FlashTilingModel",
    "HUGE_SCORE",
    "HeadCosts",
    "HeadRooflineModel",
    "MAX_SPLITS",
    "MergeModel",
    "MergeState",
    "Merged",
    "OnlineSoftmaxModel",
    "OnlineSoftmaxTrace",
    "PHASE_FLASH",
    "PHASE_NAMES",
    "PHASE_O",
    "PHASE_P",
    "PHASE_S",
    "Partial",
    "ROOFLINE_N_MAX",
    "ROOFLINE_N_MIN",
    "RooflineState",
    "SCORE_SPREAD",
    "SplitKV",
    "SplitKVModel",
    "SplitKVState",
    "SplitTimes",
    "StepperState",
    "TileSchedule",
    "TilingState",
    "attention_schedule",
    "backward_memory_bytes",
    "causal_query",
    "flash1_attention_traffic",
    "flash_attention_traffic",
    "head_forward_costs",
    "huge_index",
    "merge_partials",
    "merge_scores",
    "naive_softmax_average",
    "online_softmax_trace",
    "overflow_readout",
    "partial_softmax",
    "safe_softmax_average",
    "sm_bandwidth",
    "sm_stream_bandwidth",
    "split_kv_time",
    "split_kv_times",
    "standard_attention_traffic",
    "stepper_scores",
    "tile_sizes",
]
