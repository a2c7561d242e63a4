"""The framework every figure is built on: parameters, models, shared widgets."""
