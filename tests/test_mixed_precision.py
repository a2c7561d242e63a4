"""Lesson 5 (mixed-precision training): figures 5.1 to 5.4, the "must show" numbers of
notes.md, the format limits of facts.md, roundings against oracles that do not use
ml_dtypes, the safe parser, and sweeps over every parameter."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuviz.models.mixed_precision import (
    ACCUMULATORS,
    FORMATS,
    GRADIENT_COUNT,
    AccumulationModel,
    FloatFormatsModel,
    LossScalingModel,
    TrainingStepModel,
    exact_decimal,
    gradient_log2,
    lossless_exponents,
    neighbours,
    parse_value,
    round_bits,
    round_to,
    running_sums,
    scale_gradients,
    stall_point,
    store,
    training_steps,
)


def stored(fmt: str, text: str) -> float:
    return store(FORMATS[fmt], parse_value(text)).stored


# --- 5.1: the must-show numbers ---------------------------------------------------------

def test_bf16_one_plus_two_to_minus_eight_is_a_tie_that_rounds_to_one():
    m = FloatFormatsModel()
    m.set("fmt", "bf16")
    m.set("value", "1+2**-8")
    assert m.out.value == 1 + 2 ** -8
    assert m.out.stored == 1.0
    assert m.tie()
    assert m.bracket() == (1.0, 1 + 2 ** -7)
    assert "halfway" in m.comment()[0]


@pytest.mark.parametrize("text", ["70000", "65520", "1e6", "2**16"])
def test_fp16_overflows_to_inf(text):
    out = store(FORMATS["fp16"], parse_value(text))
    assert out.stored == math.inf and out.kind == "overflow"


def test_fp16_largest_and_the_value_just_below_the_overflow_tie():
    assert FORMATS["fp16"].max == 65504
    assert stored("fp16", "65519.99") == 65504
    assert FORMATS["fp16"].overflow_threshold == 65520


def test_fp16_flushes_at_or_below_two_to_minus_twenty_five():
    assert stored("fp16", "2**-25") == 0.0  # the tie goes to the even neighbour, 0
    assert store(FORMATS["fp16"], 2.0 ** -25).kind == "underflow to zero"
    assert stored("fp16", "2**-26") == 0.0
    assert stored("fp16", "2**-25 * (1 + 2**-20)") == 2.0 ** -24  # just above the tie
    assert stored("fp16", "-2**-25") == 0.0 and math.copysign(1, stored("fp16", "-2**-25")) < 0


def test_one_e_minus_eight_in_fp16_and_bf16():
    assert stored("fp16", "1e-8") == 0.0
    assert stored("bf16", "1e-8") == pytest.approx(1.0012e-8, rel=1e-4)
    assert exact_decimal(stored("bf16", "1e-8")) == "1.001171767711639404296875×10⁻⁸"


# --- 5.1: the format table of facts.md ----------------------------------------------------

@pytest.mark.parametrize("key, exp_bits, man_bits, bias, largest, normal, subnormal", [
    ("fp32", 8, 23, 127, (2 - 2 ** -23) * 2.0 ** 127, 2.0 ** -126, 2.0 ** -149),
    ("bf16", 8, 7, 127, (2 - 2 ** -7) * 2.0 ** 127, 2.0 ** -126, 2.0 ** -133),
    ("fp16", 5, 10, 15, 65504, 2.0 ** -14, 2.0 ** -24),
    ("e4m3", 4, 3, 7, 448, 2.0 ** -6, 2.0 ** -9),
    ("e5m2", 5, 2, 15, 57344, 2.0 ** -14, 2.0 ** -16),
    ("e2m1", 2, 1, 1, 6, 1.0, 0.5),
])
def test_format_limits(key, exp_bits, man_bits, bias, largest, normal, subnormal):
    f = FORMATS[key]
    assert (f.exponent_bits, f.mantissa_bits, f.bias) == (exp_bits, man_bits, bias)
    assert (f.max, f.min_normal, f.min_subnormal) == (largest, normal, subnormal)
    assert f.eps == 2.0 ** -man_bits


def test_specials():
    assert stored("e4m3", "464") == 448  # the tie goes to 448 (mantissa 110 is even)
    assert math.isnan(stored("e4m3", "465"))  # E4M3 has no inf: NaN
    assert stored("e5m2", "1e9") == math.inf
    assert stored("e2m1", "100") == 6.0  # no inf, no NaN: ml_dtypes saturates
    for fmt in FORMATS:
        assert math.isnan(stored(fmt, "nan")) or fmt == "e2m1"
    out = store(FORMATS["fp16"], parse_value("-0"))
    assert out.kind == "negative zero" and out.sign_bits == "1" and out.pattern == 0x8000
    sub = store(FORMATS["fp16"], 2.0 ** -20)
    assert sub.kind == "subnormal" and sub.exponent_bits == "00000"


def test_bits_and_neighbours():
    out = store(FORMATS["bf16"], 1.0)
    assert (out.sign_bits, out.exponent_bits, out.mantissa_bits) == ("0", "01111111", "0000000")
    assert out.pattern == 0x3F80
    assert out.above == [1 + 2 ** -7, 1 + 2 ** -6]
    assert out.below == [1 - 2 ** -8, 1 - 2 ** -7]  # the ulp halves below a power of two
    assert out.ulp == 2 ** -7
    assert neighbours(FORMATS["fp16"], 65504.0, 1) == []
    top = store(FORMATS["fp16"], 70000.0)
    assert top.below == [65504.0, 65472.0] and top.ulp == 32.0


# --- roundings against oracles that do not use ml_dtypes --------------------------------

def random_float32(count: int, seed: int) -> np.ndarray:
    """Random float32 values over the whole exponent range, both signs, no NaN."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2 ** 32, count, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    return values[np.isfinite(values)][:count]


def bf16_oracle(x: np.ndarray) -> np.ndarray:
    """Round to nearest even on the upper 16 bits of a float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def test_bf16_rounding_matches_round_half_even_on_the_upper_bits():
    x = random_float32(10_000, 1).astype(np.float64)
    assert len(x) >= 9_900
    np.testing.assert_array_equal(round_to(FORMATS["bf16"], x), bf16_oracle(x))
    # and values in the range where rounding matters most, with exact ties included
    near_one = (1 + np.arange(10_000) * 2.0 ** -16).astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(round_to(FORMATS["bf16"], near_one), bf16_oracle(near_one))


@pytest.mark.parametrize("key, numpy_type", [("fp16", np.float16), ("fp32", np.float32)])
def test_numpy_formats_match_numpy(key, numpy_type):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(10_000) * np.exp2(rng.integers(-30, 20, 10_000))
    with np.errstate(over="ignore"):
        expected = x.astype(numpy_type).astype(np.float64)
    np.testing.assert_array_equal(round_to(FORMATS[key], x), expected)


def table_of(exp_bits: int, man_bits: int, nan_top: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every finite non-negative value of a small format, decoded from its bit layout by
    hand, and whether its mantissa is even; the top pattern is NaN when nan_top (E4M3),
    the top exponent is inf/NaN in IEEE-like formats (E5M2), E2M1 has neither."""
    bias = 2 ** (exp_bits - 1) - 1
    values, even = [], []
    for e in range(2 ** exp_bits):
        for m in range(2 ** man_bits):
            if nan_top is None and e == 2 ** exp_bits - 1:
                continue  # IEEE-like: inf and NaN
            if nan_top and e == 2 ** exp_bits - 1 and m == 2 ** man_bits - 1:
                continue
            if e == 0:
                values.append(m * 2.0 ** (1 - bias - man_bits))
            else:
                values.append((1 + m / 2 ** man_bits) * 2.0 ** (e - bias))
            even.append(m % 2 == 0)
    return np.array(values), np.array(even)


def nearest_even(x: np.ndarray, values: np.ndarray, even: np.ndarray) -> np.ndarray:
    """Round |x| to the nearest table value, ties to the even mantissa; keep the sign."""
    mag = np.abs(x)
    hi = np.clip(np.searchsorted(values, mag), 1, len(values) - 1)
    lo = hi - 1
    d_lo, d_hi = mag - values[lo], values[hi] - mag
    pick = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(even[lo], lo, hi)))
    return np.copysign(values[pick], x)


@pytest.mark.parametrize("key, nan_top", [("e4m3", True), ("e5m2", None), ("e2m1", False)])
def test_small_formats_match_a_hand_decoded_table(key, nan_top):
    f = FORMATS[key]
    values, even = table_of(f.exponent_bits, f.mantissa_bits, nan_top)
    assert values.max() == f.max
    rng = np.random.default_rng(3)
    x = rng.uniform(-f.max, f.max, 10_000) * np.exp2(-rng.integers(0, 2 * f.bias + 3, 10_000))
    ties = (values[:-1] + values[1:]) / 2  # exact ties, both signs
    x = np.concatenate([x, ties, -ties])
    np.testing.assert_array_equal(round_to(f, x), nearest_even(x, values, even))


def test_toy_rounding_matches_e4m3_in_its_normal_range():
    rng = np.random.default_rng(4)
    x = rng.uniform(2.0 ** -6, 448, 10_000) * rng.choice([-1, 1], 10_000)
    toy = np.array([round_bits(v) for v in x])
    np.testing.assert_array_equal(toy, round_to(FORMATS["e4m3"], x))
    assert round_bits(17.0) == 16.0 and round_bits(19.0) == 20.0  # ties to even
    assert round_bits(9.0, precision=3) == 8.0 and round_bits(11.0, precision=3) == 12.0


# --- the parser -------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("1+2**-8", 1 + 2 ** -8), ("65519.99", 65519.99), ("1e-8", 1e-8), ("-(3 - 5) * 2", 4.0),
    ("2^-25", 2.0 ** -25), ("1/3", 1 / 3), ("+7", 7.0), ("1_000", 1000.0), ("65,504", 65504.0),
    ("inf", math.inf), ("-Infinity", -math.inf), ("1/0", math.inf), ("10**400", math.inf),
    ("9**9**9", math.inf), ("2**-2000", 0.0), ("−2", -2.0), ("1e999", math.inf),
    ("9" * 100, 1e100 - 1),
])
def test_parser_evaluates_arithmetic(text, value):
    assert parse_value(text) == pytest.approx(value, rel=1e-15)


def test_parser_nan_and_negative_zero():
    assert math.isnan(parse_value("nan")) and math.isnan(parse_value("0/0"))
    assert math.isnan(parse_value("inf - inf"))
    zero = parse_value("-0")
    assert zero == 0 and math.copysign(1, zero) < 0


@pytest.mark.parametrize("text", [
    "", "   ", "abc", "x", "__import__('os')", "(1).real", "pow(2, 3)", "abs(-1)", "'1'",
    "[1]", "1 if 1 else 2", "lambda: 1", "True", "1j", "2 < 3", "1; 2", "1, 2)", "a.b",
    "open('f')", "1 % 2", "1 // 2", "~1", "not 1", "1 << 3", "1 & 2", "{1}", "f'{1}'",
    "(" * 300 + "1" + ")" * 300, "1+" * 200 + "1",
])
def test_parser_refuses_everything_else(text):
    with pytest.raises(ValueError):
        parse_value(text)


def test_huge_powers_are_quick():
    start = time.perf_counter()
    for text in ("9**9**9**9", "10**10**10", "(2**1000)**(2**1000)", "99999999**99999999"):
        assert parse_value(text) == math.inf
    assert time.perf_counter() - start < 0.5


@given(st.text(max_size=60))
def test_parser_either_refuses_or_gives_a_float(text):
    try:
        value = parse_value(text)
    except ValueError:
        return
    assert isinstance(value, float)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).filter(lambda v: v != 0)


@given(finite, finite, st.sampled_from(["+", "-", "*", "/"]))
def test_parser_agrees_with_float_arithmetic(a, b, op):
    expected = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]
    assert parse_value(f"({a!r}) {op} ({b!r})") == expected


def test_the_model_refuses_text_that_is_not_a_number_and_keeps_its_value():
    m = FloatFormatsModel()
    m.set("value", "70000")
    with pytest.raises(ValueError, match="not a number"):
        m.set("value", "hello")
    with pytest.raises(ValueError):
        m.set("value", "__import__('os').system('true')")
    assert m.value == "70000"
    assert m.parameter("value").parse("2**-25") == "2**-25"


def test_the_entry_refuses_inline(qtbot):
    from gpuviz.core.widgets import ExpressionEntry

    m = FloatFormatsModel()
    entry = ExpressionEntry(m, "value")
    qtbot.addWidget(entry)
    entry.combo.lineEdit().setText("exec(1)")
    entry._on_edit()
    assert not entry.error.isHidden() and "Not accepted" in entry.error.text()
    assert m.value == "1+2**-8"
    entry.combo.lineEdit().setText("1e-8")
    entry._on_edit()
    assert entry.error.isHidden() and m.value == "1e-8"
    entry.combo.setCurrentIndex(entry.combo.findData("70000"))
    assert m.value == "70000"


@given(st.sampled_from(list(FORMATS)),
       st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
           [0.0, -0.0, 2.0 ** -25, 65520.0, 448.0, 464.0, 6.0, 7.0, 1e-45]))
def test_store_sweep(fmt, value):
    out = store(FORMATS[fmt], value)
    assert len(out.sign_bits + out.exponent_bits + out.mantissa_bits) == FORMATS[fmt].bits
    shown = [*out.below, *out.above]
    assert all(math.isfinite(v) for v in shown)
    assert out.below == sorted(out.below, reverse=True) and out.above == sorted(out.above)
    if math.isfinite(out.stored) and math.isfinite(value):
        # the stored number is the nearest: no neighbour is closer to the value
        assert all(abs(v - value) >= abs(out.stored - value) for v in shown)
    m = FloatFormatsModel()
    m.set("fmt", fmt)
    m.set("value", repr(value))
    for readout in m.readouts().values():
        assert readout.text
    assert m.comment()[0]


# --- 5.2 accumulation -------------------------------------------------------------------

def test_bf16_naive_accumulation_of_an_eighth_stops_at_32_after_256_terms():
    sums = running_sums("bf16", "naive", 0.125)
    assert sums[255] == 32.0 and sums[254] == 31.875
    assert (sums[255:] == 32.0).all()
    m = AccumulationModel()
    assert m.out.naive_stall_index == 256 and m.out.naive_stall_value == 32.0
    assert m.out.formula == 32.0


def test_bf16_naive_accumulation_of_one_stops_at_256():
    sums = running_sums("bf16", "naive", 1.0)
    assert sums[-1] == 256.0 and sums[255] == 256.0 and sums[254] == 255.0


@pytest.mark.parametrize("acc, factor", [("bf16", 256), ("fp16", 2048), ("toy", 16)])
@pytest.mark.parametrize("k", range(-6, 3))
def test_power_of_two_terms_stall_at_t_times_two_to_the_p(acc, factor, k):
    t = 2.0 ** k
    assert stall_point(t, ACCUMULATORS[acc].precision) == factor * t
    sums = running_sums(acc, "naive", t)
    assert sums[-1] == factor * t
    assert np.flatnonzero(sums == factor * t)[0] + 1 == factor  # reached at term 2^p


def test_a_toy_with_two_fraction_bits_stalls_at_8t():
    s = 0.0
    for _ in range(100):
        s = round_bits(s + 0.5, precision=3)
    assert s == 8 * 0.5 == stall_point(0.5, 3)


@pytest.mark.parametrize("acc, method", [("fp32", "naive"), ("bf16", "pairwise"),
                                         ("bf16", "kahan"), ("fp16", "pairwise"),
                                         ("fp16", "kahan"), ("fp32", "kahan")])
@pytest.mark.parametrize("term, exact", [(0.125, 125.0), (1.0, 1000.0)])
def test_good_methods_stay_close_to_the_exact_sum(acc, method, term, exact):
    assert running_sums(acc, method, term)[999] == pytest.approx(exact, rel=1e-3)


def test_every_partial_sum_is_a_number_of_the_format():
    for acc in ("bf16", "fp16", "fp32"):
        for method in ("naive", "pairwise", "kahan"):
            sums = running_sums(acc, method, 0.1)
            np.testing.assert_array_equal(round_to(FORMATS[acc], sums), sums)
    toy = running_sums("toy", "kahan", 0.1)
    assert all(round_bits(v) == v for v in toy)


@given(st.sampled_from(list(ACCUMULATORS)), st.sampled_from(["naive", "pairwise", "kahan"]),
       st.sampled_from(AccumulationModel.parameter("term").choice_values()),
       st.integers(1, 4096))
def test_accumulation_sweep(acc, method, term, count):
    m = AccumulationModel()
    with m.batch():
        m.set("accumulator", acc)
        m.set("method", method)
        m.set("term", term)
        m.set("count", count)
    out = m.out
    assert len(out.sums) == count and np.isfinite(out.sums).all()
    assert (np.diff(out.sums) >= 0).all() or method == "kahan"
    # The classic error bounds (Higham ch. 4): gamma_m * sum |x| with m = n - 1 additions
    # in a chain (naive) or ceil(log2 n) levels (pairwise), gamma_m = m u / (1 - m u).
    u = 2.0 ** -out.acc.precision
    depth = {"naive": count - 1, "pairwise": math.ceil(math.log2(count))}.get(method)
    if depth is not None and depth * u < 0.5:
        bound = depth * u / (1 - depth * u) * out.exact[-1]
        assert abs(out.sums[-1] - out.exact[-1]) <= bound * (1 + 1e-9)
    for readout in m.readouts().values():
        assert readout.text
        if isinstance(readout.value, float):
            assert math.isfinite(readout.value)
    assert m.comment()[0]


# --- 5.3 the training step --------------------------------------------------------------

def test_training_step_boxes():
    bf16 = {s.key: s for s in training_steps("bf16")}
    assert [s.kind for s in bf16.values()].count("scaling") == 0
    for key in ("master", "loss", "reduce", "optimizer"):
        assert bf16[key].kind == "fp32"
    for key in ("cast", "forward", "backward"):
        assert bf16[key].kind == "16-bit"
    fp16 = [s.key for s in training_steps("fp16")]
    assert fp16.index("scale") == fp16.index("loss") + 1
    assert fp16.index("unscale") == fp16.index("optimizer") - 1
    assert {s.kind for s in training_steps("fp16") if s.key in ("scale", "unscale")} == {
        "scaling"}
    fp8 = {s.key: s for s in training_steps("fp8")}
    changed = {k for k in bf16 if (bf16[k].kind, bf16[k].format_text)
               != (fp8[k].kind, fp8[k].format_text)}
    assert changed == {"forward", "backward"}  # only the matmul inputs
    assert "E4M3" in fp8["forward"].format_text and "E5M2" in fp8["backward"].format_text


@given(st.sampled_from(["bf16", "fp16", "fp8"]),
       st.sampled_from(TrainingStepModel.parameter("step_shown").choice_values()))
def test_training_step_sweep(recipe, shown):
    m = TrainingStepModel()
    m.set("recipe", recipe)
    m.set("step_shown", shown)
    assert m.out.selected in m.out.steps
    assert m.out.selected.key == shown or shown in ("scale", "unscale")
    assert m.step_shown == m.out.selected.key  # the selector never names a missing step
    assert all(r.text for r in m.readouts().values()) and m.comment()


# --- 5.4 loss scaling -------------------------------------------------------------------

def test_gradient_population():
    logs = gradient_log2()
    assert len(logs) == GRADIENT_COUNT
    assert logs.min() == pytest.approx(-43.958, abs=1e-3)
    assert logs.max() == pytest.approx(-3.962, abs=1e-3)
    assert logs.max() - logs.min() == pytest.approx(39.995, abs=1e-3)


def test_loss_scaling_must_show_numbers():
    at_one = scale_gradients("fp16", 0)
    assert int(at_one.flushed.sum()) == 4198 and at_one.flushed_pct == pytest.approx(41.98)
    assert not at_one.overflowed.any()
    assert scale_gradients("fp16", 14).flushed_pct >= 0.1
    for k in range(15, 25):
        assert scale_gradients("fp16", k).flushed_pct < 0.1
    assert lossless_exponents("fp16") == (19,)
    over = scale_gradients("fp16", 20)
    assert over.overflowed.any() and over.skip and not over.flushed.any()
    assert scale_gradients("bf16", 0).lossless
    assert at_one.flush_limit == 2.0 ** -25 and at_one.overflow_limit == 65520


def test_histogram_counts_every_gradient():
    for k in (0, 19, 20, 24):
        out = scale_gradients("fp16", k)
        total = out.normal_counts.sum() + out.subnormal_counts.sum() + out.lost_counts.sum()
        assert total == GRADIENT_COUNT
        assert out.lost_counts.sum() == out.flushed.sum() + out.overflowed.sum()


def test_predict_and_reveal():
    m = LossScalingModel()
    m.set("guess_exp", 19)
    m.set("revealed", True)
    assert "2¹⁹" in m.answer_text() and "right" in m.answer_text()
    assert m.readouts()["answer"].text == "2¹⁹" and m.readouts()["answer"].value == 2 ** 19
    m.set("guess_exp", 12)
    assert not m.revealed


@given(st.sampled_from(["fp16", "bf16"]), st.integers(0, 24), st.integers(0, 24),
       st.booleans())
def test_loss_scaling_sweep(fmt, k, guess, revealed):
    m = LossScalingModel()
    with m.batch():
        m.set("fmt", fmt)
        m.set("scale_exp", k)
        m.set("guess_exp", guess)
        m.set("revealed", revealed)
    out = m.out
    assert 0 <= out.flushed_pct <= 100 and 0 <= out.overflowed_pct <= 100
    assert out.lossless == (out.flushed_pct == 0 and out.overflowed_pct == 0)
    if fmt == "bf16":
        assert out.lossless
    for readout in m.readouts().values():
        if isinstance(readout.value, float):
            assert math.isfinite(readout.value)
    assert m.comment()[0] and m.answer_text()


def test_clicking_a_box_selects_its_step(themed, qtbot):
    from gpuviz import catalog
    from tests import figure_driver as drive

    page = drive.build_page(catalog.figure("5.3"))
    qtbot.addWidget(page)
    page.model.set("recipe", "fp16")
    drive.settle()
    keys = [s.key for s in page.model.out.steps]
    page.view.boxes.clicked.emit(keys.index("unscale"))
    drive.settle()
    assert page.model.step_shown == "unscale"
    assert "inf" in page.view.why.text()
    page.model.set("recipe", "bf16")  # no such step there: the first one is explained
    drive.settle()
    assert page.model.out.selected.key == "master"
    assert page.model.step_shown == "master"
    combo = page.view._step_combo
    assert combo.currentData() == "master"
    shown = {combo.itemData(i) for i in range(combo.count())
             if not combo.view().isRowHidden(i)}
    assert "scale" not in shown and "unscale" not in shown
