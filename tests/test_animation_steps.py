"""Animations open at any step: step=N is where N presses of Next from a rewound start
lead, step=end the end, for every animated figure of the catalog (readouts compared as
values, through the JSON of --readout)."""

from __future__ import annotations

import json

import pytest

from gpuviz import app as cli
from gpuviz import catalog
from gpuviz.core.model import END, UNCOUNTED_STEP_LIMIT, AnimatedModel, Parameter, Readout

ANIMATED = [spec for spec in catalog.all_figures() if spec.animated]
MOST_PRESSES = 10_000


def shown(spec, model) -> str:
    return json.dumps(cli.readout_json(spec, model), sort_keys=True)


def pressed(spec, presses: int | None = None):  # noqa: ANN201
    """A figure rewound, then Next pressed `presses` times (None: until it finishes)."""
    model = spec.make_model()
    model.rewind()
    count = 0
    while not model.finished and (presses is None or count < presses):
        model.step()
        count += 1
        assert count < MOST_PRESSES
    return model, count


def test_the_catalog_flags_exactly_the_animated_models():
    for spec in catalog.all_figures():
        assert spec.animated == isinstance(spec.make_model(), AnimatedModel), spec.number


@pytest.mark.parametrize("spec", ANIMATED, ids=lambda s: s.number)
def test_step_end_is_next_pressed_to_the_end(spec):
    model, presses = pressed(spec)
    assert presses == model.steps == model.current_step
    jumped = spec.make_model()
    jumped.go_to_step(END)
    assert jumped.finished and not jumped.playing
    assert shown(spec, jumped) == shown(spec, model)


@pytest.mark.parametrize("spec", ANIMATED, ids=lambda s: s.number)
def test_every_step_is_that_many_presses(spec):
    jumped = spec.make_model()
    jumped.go_to_step(END)  # each jump below starts from somewhere else
    model, _ = pressed(spec, 0)
    for n in range(model.steps + 1):
        jumped.go_to_step(n)
        assert jumped.current_step == model.current_step == n
        assert shown(spec, jumped) == shown(spec, model), f"step {n}"
        model.step()


@pytest.mark.parametrize("spec", ANIMATED, ids=lambda s: s.number)
def test_step_3_is_three_presses_and_play_goes_on_from_there(spec):
    model, presses = pressed(spec, 3)
    jumped = spec.make_model()
    jumped.go_to_step(3)
    assert jumped.current_step == presses == min(3, model.steps)
    assert shown(spec, jumped) == shown(spec, model)
    jumped.set_playing(True)  # a finished one rewinds first, as Play always does
    jumped.advance(1e9)
    assert jumped.finished and not jumped.playing


@pytest.mark.parametrize("text, needle", [
    ("-1", "out of range"), ("99999", "out of range"), ("abc", "not a step"),
    ("2.5", "not a step"), ("", "not a step"),
])
def test_a_bad_step_says_what_is_allowed(text, needle):
    model = catalog.figure("7.2").make_model()
    with pytest.raises(ValueError, match=needle) as error:
        model.parse_step(text)
    assert f"allowed: a whole number from 0 to {model.steps}, or end" in str(error.value)
    assert model.parse_step(" End ") == END and model.parse_step("3") == 3


def test_a_still_figure_has_no_steps():
    with pytest.raises(ValueError, match="figure 1.3 is not animated.*1.2"):
        catalog.figure("1.3").parse_step("1")


def test_a_playhead_after_play_counts_the_marks_passed():
    model = catalog.figure("1.2").make_model()
    assert model.current_step == model.steps  # it opens with the whole timeline drawn
    model.rewind()
    model.set_playing(True)
    model.advance(model.play_seconds / 2)
    model.set_playing(False)
    passed = model.current_step
    assert 0 < passed < model.steps
    model.step()
    assert model.current_step == passed + 1
    model.go_to_step(99999)  # past the end (fewer steps than when checked): the end
    assert model.finished


class RunsUntilItStops(AnimatedModel):
    """A simulation whose length shows only by running it: it stops at `stop_at` presses."""

    stop_at = Parameter(5, label="Stops after", minimum=1, maximum=2000)

    def __init__(self) -> None:
        self.presses = 0
        super().__init__()

    @property
    def steps(self) -> None:
        return None

    @property
    def current_step(self) -> int:
        return self.presses

    @property
    def finished(self) -> bool:
        return self.presses >= self.stop_at

    def reset_state(self) -> None:
        self.presses = 0

    def step_once(self) -> None:
        self.presses += not self.finished

    def compute(self) -> int:
        return self.presses

    def readouts(self) -> dict[str, Readout]:
        return {"presses": Readout("Presses", self.out)}


def test_a_figure_that_cannot_count_its_steps_presses_next():
    model = RunsUntilItStops()
    model.go_to_step(3)
    assert model.current_step == 3
    model.go_to_step(model.parse_step("end"))
    assert model.current_step == 5
    model.stop_at = 2000
    model.go_to_step(END)  # never more presses than the limit
    assert model.current_step == UNCOUNTED_STEP_LIMIT
    with pytest.raises(ValueError, match="from 0 to 1,000 .*cannot count"):
        model.parse_step("1001")


def test_a_stepped_prediction_keeps_its_place_through_guess_and_reveal():
    """A stepped predict-first figure (10.1): guessing and Reveal leave the step where it
    is; a setting the answer depends on hides it again and starts the walk over."""
    model = catalog.figure("10.1").make_model()
    model.go_to_step(2)
    model.set("guess_idle", 40.0)
    model.set("revealed", True)
    assert (model.current_step, model.revealed) == (2, True)
    model.set("ranks", 6)
    assert (model.current_step, model.revealed) == (0, False)
