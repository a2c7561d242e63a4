"""The physics of every figure: pure numpy functions, then the figure models."""
