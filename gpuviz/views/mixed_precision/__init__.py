"""Lesson 5 views. The theme has no colour per number format, so the formats borrow roles
and every figure names them in a legend: FP32 is blue (compute), 16-bit aqua (network),
FP8 yellow (onchip), loss-scaling steps and lost values magenta (highlight)."""

from gpuviz.models.mixed_precision import FP8, FP32, HALF, SCALING

KIND_ROLE = {FP32: "compute", HALF: "network", FP8: "onchip", SCALING: "highlight"}
KIND_LABEL = {FP32: "FP32", HALF: "16-bit", FP8: "FP8", SCALING: "loss scaling"}
