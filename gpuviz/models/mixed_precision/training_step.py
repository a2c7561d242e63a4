"""Figure 5.3: one mixed-precision training step, the format of every tensor and
operation under a recipe (BF16, FP16 with loss scaling, FP8 matmuls)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuviz.core.model import FigureModel, Parameter, Readout

FP32, HALF, FP8, SCALING = "fp32", "16-bit", "fp8", "scaling"
RECIPES = [("bf16", "BF16"), ("fp16", "FP16 + loss scaling"), ("fp8", "FP8 matmuls")]


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    kind: str  # FP32, HALF, FP8 or SCALING
    format_text: str
    why: str


def training_steps(recipe: str) -> list[Step]:
    """The steps of one mixed-precision training step, in order, for a recipe."""
    half = "FP16" if recipe == "fp16" else "BF16"
    fp8 = recipe == "fp8"
    steps = [
        Step("master", "Master\nweights", FP32, "FP32",
             "The optimizer adds updates that are often a thousand times smaller than the "
             "weight. In 16 bits (8 significant bits for BF16) such an update is below half "
             "an ulp and vanishes; FP32's 24 bits keep it. This copy is the real model."),
        Step("cast", f"{half}\ncopy", HALF, half,
             "Before the forward pass the weights are rounded to 16 bits once: matmuls read "
             "half the bytes and run on the fast tensor-core path. The copy is thrown away "
             "after the step."),
        Step("forward", "Forward\nmatmuls", FP8 if fp8 else HALF,
             "E4M3 in\nFP32 sum" if fp8 else f"{half} in\nFP32 sum",
             ("Weights and activations enter the matmul in FP8 E4M3, each tensor multiplied "
              "by its own scale so its largest value lands near 448; the products are "
              "summed in FP32 and the output written in BF16. Only the matmul inputs "
              "change with FP8." if fp8 else
              f"Matmul inputs are {half}; the tensor cores sum the products in FP32 and "
              f"the output is rounded to {half}. Activations saved for backward are "
              f"{half} too, half the memory of FP32.")),
        Step("loss", "Loss", FP32, "FP32",
             "Softmax, log and the mean over tokens are reductions over many values: they "
             "run in FP32, where a sum of thousands of terms does not stall."),
    ]
    if recipe == "fp16":
        steps.append(Step("scale", "× S", SCALING, "loss × S",
                          "FP16 flushes gradients at or below 2⁻²⁵ to zero. Multiplying "
                          "the loss by S multiplies every gradient by S (the chain rule), "
                          "which lifts the small ones into FP16's range."))
    steps += [
        Step("backward", "Backward\nmatmuls", FP8 if fp8 else HALF,
             "E5M2 in\nFP32 sum" if fp8 else f"{half} in\nFP32 sum",
             ("Gradients enter the matmuls in FP8 E5M2: two mantissa bits but five "
              "exponent bits, because gradients span a wider range than activations; "
              "each tensor has its own scale. Sums stay FP32." if fp8 else
              f"The gradient matmuls run like the forward ones: {half} inputs, FP32 sums, "
              f"{half} outputs.")),
        Step("reduce", "Gradient\nreduction", FP32, "FP32",
             "Gradients are summed over micro-batches and over GPUs. Summed in 16 bits, a "
             "long sum stalls once the total is 2ᵖ times a term; in FP32 it does not."),
    ]
    if recipe == "fp16":
        steps.append(Step("unscale", "÷ S,\ninf check", SCALING, "FP32",
                          "The gradients are divided by S in FP32 and checked: if any is "
                          "inf or NaN, S was too large, the step is skipped and S halves "
                          "(PyTorch's GradScaler; it doubles S again after 2,000 clean "
                          "steps)."))
    steps.append(Step("optimizer", "Optimizer\nstep", FP32, "FP32\nAdam m, v",
                      "Adam's moments m and v and the update are FP32: v holds squared "
                      "gradients, which underflow and overflow 16 bits easily, and the "
                      "update goes into the FP32 master weights."))
    return steps


ALL_STEPS = [(s.key, s.title.replace("\n", " ")) for s in training_steps("fp16")]


@dataclass(frozen=True)
class StepOutput:
    steps: list[Step]
    selected: Step


class TrainingStepModel(FigureModel):
    """5.3: the steps of one training step coloured by the format they run in."""

    recipe = Parameter("bf16", label="Recipe", choices=RECIPES,
                       help="Which mixed-precision recipe the step follows")
    step_shown = Parameter("master", label="Read about", choices=ALL_STEPS,
                           help="The step whose format is explained (or click a box)")

    def parameter_changed(self, name: str) -> None:
        # A step the recipe does not have (× S under BF16 or FP8) cannot be read about:
        # fall back to the first step, so the selector, the boxes and the panel agree.
        if name in ("recipe", "step_shown"):
            keys = [s.key for s in training_steps(self.recipe)]
            if self.step_shown not in keys:
                self.set("step_shown", keys[0])
        super().parameter_changed(name)

    def compute(self) -> StepOutput:
        steps = training_steps(self.recipe)
        by_key = {s.key: s for s in steps}
        return StepOutput(steps, by_key.get(self.step_shown, steps[0]))

    def comment(self) -> str:
        return {
            "bf16": "BF16 keeps FP32's 8 exponent bits, so small gradients survive without "
                    "loss scaling; everything that sums many numbers or keeps state stays FP32.",
            "fp16": "FP16's range ends at 65504 and flushes below 2⁻²⁵: two loss-scaling "
                    "steps (magenta) appear, × S after the loss and ÷ S with an inf check "
                    "before the optimizer.",
            "fp8": "Only the matmul inputs become FP8 (E4M3 forward, E5M2 for gradients, "
                   "one scale per tensor); master weights, reductions and the optimizer "
                   "stay FP32.",
        }[self.recipe]

    def readouts(self) -> dict[str, Readout]:
        steps = self.out.steps
        count = {kind: sum(s.kind == kind for s in steps) for kind in (FP32, HALF, FP8,
                                                                      SCALING)}
        matmul = next(s for s in steps if s.key == "forward")
        return {
            "steps": Readout("Steps", len(steps)),
            "fp32": Readout("Steps in FP32", count[FP32]),
            "low": Readout("Steps in 16 or 8 bits", count[HALF] + count[FP8]),
            "scaling": Readout("Loss-scaling steps", count[SCALING]),
            "matmul": Readout("Forward matmul", name=matmul.format_text.replace("\n", ", ")),
        }
