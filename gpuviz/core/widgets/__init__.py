"""Native controls bound to model parameters (`controls`), and the panels every figure
shares: time controls, readouts, text panels and tables, predict-first."""

from gpuviz.core.widgets.controls import (
    CONTROL_COLUMN_WIDTH,
    LOG_SLIDER_STEPS,
    BoundControl,
    ChoiceBox,
    ChoiceButtons,
    Combo,
    ControlPanel,
    ExpressionEntry,
    NumberEntry,
    ParameterSlider,
    ToggleBox,
    control_for,
    error_label,
    fix_size,
)
from gpuviz.core.widgets.panels import MessageLabel, TextPanel, TextTable
from gpuviz.core.widgets.predict_reveal import PredictReveal
from gpuviz.core.widgets.readouts import ReadoutPanel
from gpuviz.core.widgets.time_controls import TimeControls

__all__ = [
    "CONTROL_COLUMN_WIDTH", "LOG_SLIDER_STEPS", "BoundControl", "ChoiceBox", "ChoiceButtons",
    "Combo", "ControlPanel", "ExpressionEntry", "MessageLabel", "NumberEntry",
    "ParameterSlider", "PredictReveal", "ReadoutPanel", "TextPanel", "TextTable",
    "TimeControls", "ToggleBox", "control_for", "error_label", "fix_size",
]
