"""Figure 10.2: tensor parallelism with and without Megatron's sequence parallelism.

The activations one transformer layer keeps for its backward pass, per micro-batch of b
sequences of s tokens, hidden size h, a heads, 16-bit values and 1-byte dropout masks
(Korthikanti et al. 2022, section 4): 34 s b h + 5 a s² b bytes, in the pieces of OPS.
Tensor parallelism over t GPUs splits the pieces between its column- and row-parallel
matmuls by heads or columns (t times fewer on each GPU), but the LayerNorms, the dropouts
and the inputs of the first matmul of each block see the whole activation: every GPU keeps
a full copy of those 10 s b h bytes. Sequence parallelism splits them by tokens instead,
so every piece falls by t: 34 s b h / t + 5 a s² b / t.

The collectives move the same bytes. TP all-reduces the layer's output twice in the
forward pass (after attention and after the MLP); SP replaces each all-reduce with a
reduce-scatter into token shards and, before the next block's first matmul, an
all-gather back to the full sequence: a ring all-reduce is exactly those two, 2(t − 1)/t
of the 2 s b h bytes per GPU either way.

Left out: the backward pass's collectives (the mirror image), the embeddings and the
logits, and activation recomputation.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuviz.core.model import Parameter, PredictFirstModel, Readout, si_readout, si_text
from gpuviz.data.models import model, model_choices
from gpuviz.models.alpha_beta import collective_cost

VALUE_BYTES = 2  # 16-bit activations
MASK_BYTES = 1  # a dropout mask keeps one byte per value
MODES = (("tp", "TP"), ("sp", "TP + SP"))
TP_DEGREES = (("2", "2"), ("4", "4"), ("8", "8"))
DEFAULT_MODEL = "llama2_70b"


@dataclass(frozen=True)
class Op:
    """One activation a layer stores: its bytes per token are `per_sbh` × h plus
    `per_as2b` × a s (the score-sized ones); `split` says how TP divides it: "heads" (by
    heads or columns) or "full" (a copy on every GPU, which SP splits by tokens)."""

    name: str
    per_sbh: float
    per_as2b: float
    split: str


# Short names so they fit their boxes: LN in, the LayerNorm's input; mask, the attention
# dropout's mask; P, V, the dropped-out probabilities and the values they weight.
OPS = (
    Op("LN in", 2, 0, "full"),
    Op("QKV in", 2, 0, "full"),
    Op("Q, K", 4, 0, "heads"),
    Op("softmax", 0, 2, "heads"),
    Op("mask", 0, 1, "heads"),
    Op("P, V", 2, 2, "heads"),
    Op("proj in", 2, 0, "heads"),
    Op("dropout", 1, 0, "full"),
    Op("LN in", 2, 0, "full"),
    Op("FC1 in", 2, 0, "full"),
    Op("GeLU in", 8, 0, "heads"),
    Op("FC2 in", 8, 0, "heads"),
    Op("dropout", 1, 0, "full"),
)
# The collectives of the forward pass, each before the op with this index.
COLLECTIVES = {"tp": ((7, "all_reduce"), (12, "all_reduce")),
               "sp": ((1, "all_gather"), (7, "reduce_scatter"), (9, "all_gather"),
                      (12, "reduce_scatter"))}
SHORT_NAMES = {"all_reduce": "AR", "all_gather": "AG", "reduce_scatter": "RS"}


def op_bytes(op: Op, seq: int, batch: int, hidden: int, heads: int) -> float:
    """What the whole layer stores for this activation (one GPU, no parallelism)."""
    return op.per_sbh * seq * batch * hidden + op.per_as2b * heads * seq * seq * batch


def stored_bytes(op: Op, full: float, tp: int, mode: str) -> float:
    """What GPU 0 stores of it: split by heads, kept whole, or split by tokens (SP)."""
    return full if op.split == "full" and mode == "tp" else full / tp


def sent_bytes(collective: str, tp: int, message: float) -> float:
    """Bytes one GPU sends in a ring collective of a message of this size."""
    return collective_cost(collective, "ring", tp).volume * message


@dataclass(frozen=True)
class SequenceParallelOut:
    stored: tuple[float, ...]  # bytes GPU 0 keeps per op
    kinds: tuple[str, ...]  # "heads", "full" or "tokens" per op
    collectives: tuple[tuple[int, str], ...]
    activation: float  # bytes GPU 0 keeps for the layer
    replicated_parts: float  # of it, the LayerNorm, dropout and first-matmul inputs
    activation_tp: float  # the same layer under TP alone
    activation_unsplit: float  # on one GPU
    sent: float  # bytes GPU 0 sends in the layer's forward collectives
    sent_tp: float  # the same under TP alone
    message: float  # bytes of the layer's output, 2 s b h


class SequenceParallelModel(PredictFirstModel):
    """Figure 10.2: what GPU 0 stores of one layer's activations and what it sends, under
    TP and under TP + SP (see the module docstring); the learner predicts what SP does to
    the bytes sent first."""

    mode = Parameter("tp", label="Parallelism", choices=list(MODES),
                     help="TP + SP splits the LayerNorm and dropout activations by tokens")
    tp = Parameter("8", label="TP degree t", choices=list(TP_DEGREES),
                   help="GPUs that share the layer (they divide the heads)")
    preset = Parameter(DEFAULT_MODEL, label="Model", choices=model_choices,
                       help="Its hidden size h and heads a")
    seq = Parameter(4096, label="Sequence s", unit="tokens", minimum=512, maximum=32768,
                    log=True, help="Tokens of one sequence; the score-sized pieces grow as s²")
    micro_batch = Parameter(1, label="Micro-batch b", unit="sequences", minimum=1, maximum=16,
                      step=1, help="Sequences per micro-batch")
    guess_sent = Parameter(2.0, label="TP + SP sends", unit="× TP alone", minimum=0.25,
                           maximum=4.0, step=0.25,
                           help="Four collectives replace two all-reduces: how many times "
                                "the bytes of TP alone do you expect GPU 0 to send?")
    guess_parameter = "guess_sent"

    def compute(self) -> SequenceParallelOut:
        cfg = model(self.preset)
        t, mode = int(self.tp), self.mode
        full = [op_bytes(op, self.seq, self.micro_batch, cfg.hidden, cfg.heads) for op in OPS]
        stored = tuple(stored_bytes(op, f, t, mode) for op, f in zip(OPS, full, strict=True))
        tp_only = [stored_bytes(op, f, t, "tp") for op, f in zip(OPS, full, strict=True)]
        kinds = tuple("tokens" if op.split == "full" and mode == "sp" else op.split
                      for op in OPS)
        replicated = sum(b for op, b in zip(OPS, stored, strict=True) if op.split == "full")
        message = VALUE_BYTES * self.seq * self.micro_batch * cfg.hidden
        sent = {m: sum(sent_bytes(name, t, message) for _, name in COLLECTIVES[m])
                for m in COLLECTIVES}
        return SequenceParallelOut(stored, kinds, COLLECTIVES[mode], sum(stored), replicated,
                                   sum(tp_only), sum(full), sent[mode], sent["tp"], message)

    def answer_text(self) -> str:
        out, guess = self.out, self.guess_sent
        ratio = out.sent / out.sent_tp
        return (f"{ratio:.2f}×: a reduce-scatter and an all-gather together move the bytes "
                f"of the all-reduce they replace, {si_text(out.sent_tp, 'B')} per layer "
                f"either way. Your guess of {guess:g}× is {self.how_close(guess, ratio)}.")

    def readouts(self) -> dict[str, Readout]:
        out = self.out
        return {
            "activation": si_readout("Activations on GPU 0", out.activation, "B"),
            "replicated": si_readout("LayerNorm, dropout, block inputs",
                                     out.replicated_parts, "B"),
            "saving": Readout("Against TP alone", out.activation_tp / out.activation, "×"),
            "unsplit": si_readout("The layer on one GPU", out.activation_unsplit, "B"),
            "sent": self.answer(si_readout("Sent by GPU 0 (forward)", out.sent, "B")),
            "sent_vs_tp": self.answer(Readout("Sent, against TP alone",
                                              out.sent / out.sent_tp, "×", digits=3)),
            "collectives": Readout("Collectives (forward)", len(out.collectives)),
        }
