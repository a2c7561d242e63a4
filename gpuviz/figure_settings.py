"""A figure's settings as typed text: `NAME=VALUE` for a parameter and `step=N` or
`step=end` for an animated figure's position. One parser for the command line's `--set`
and the worked questions' settings (gpuviz.questions); no Qt widgets."""

from __future__ import annotations

from typing import Any

STEP = "step"  # step=N or step=end: where an animated figure opens


class SettingsError(ValueError):
    """A setting we refuse, with the sentence that says why and what is allowed."""


def parse_settings(spec, assignments: list[str]) -> dict[str, Any]:  # noqa: ANN001
    """Strictly parse NAME=VALUE pairs against the figure's parameters. `step` is an
    animated figure's position, not a parameter (an animated model cannot have one of
    that name: AnimatedModel.step() holds it), checked last, against the figure as set."""
    model = spec.make_model()
    known = model.parameters()
    values: dict[str, Any] = {}
    step_text = None
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SettingsError(f"'{assignment}' is not NAME=VALUE")
        if name == STEP and name not in known:
            step_text = text
            continue
        if name not in known:
            raise SettingsError(f"figure {spec.number} has no parameter '{name}'; "
                                f"parameters: {', '.join(known)}")
        try:
            values[name] = known[name].parse(text.strip())
        except ValueError as error:
            raise SettingsError(f"{name}: {error}") from None
    if step_text is not None:
        try:
            values[STEP] = spec.parse_step(step_text, make_model(spec, values))
        except ValueError as error:
            raise SettingsError(f"{STEP}: {error}") from None
    return values


def make_model(spec, values: dict[str, Any]):  # noqa: ANN001, ANN201
    model = spec.make_model()
    apply_settings(model, values)
    return model


def apply_settings(model, values: dict[str, Any]) -> None:  # noqa: ANN001
    """The typed parameters in one batch, in the order the model declares them (a choice
    that brings its own settings, 2.1's op with its scale, comes before them, however
    they were typed), then an animated figure's typed step (after them: a parameter
    change may rewind the animation). `revealed` goes last among the parameters, since
    a guess set after it would hide the answer again."""
    parameters = model.parameters()
    declared = {name: i for i, name in enumerate(parameters)}
    in_order = sorted(values.items(), key=lambda item: (
        item[0] == "revealed", declared.get(item[0], len(declared))))
    with model.batch():  # not model.batch: a parameter may be named `batch`
        for name, value in in_order:
            if name in parameters:
                model.set(name, value)
        if STEP in values and STEP not in parameters:
            model.go_to_step(values[STEP])
