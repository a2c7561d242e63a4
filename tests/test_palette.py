"""Issue 19: every pair of roles that figures set against each other stays apart for
red-green colour-blind viewers and on washed-out projectors, in every look.

Distances are CIE L*a*b* (D65) from the theme's own role table: sRGB is linearised,
colour blindness simulated with the full-severity matrices of Machado, Oliveira & Fernandes
(2009, "A physiologically-based model for simulation of color vision deficiency", table of
severity 1.0), clipped, converted to XYZ and Lab. Lightness (L*) is compared with normal
vision (what greyscale and a projector that loses saturation keep); the colour distance is
CIE76 Delta E (Euclidean in Lab) under each simulation."""

from __future__ import annotations

import numpy as np
import pytest

from gpuviz import theme

PROTANOPIA = np.array([[0.152286, 1.052583, -0.204868],
                       [0.114503, 0.786281, 0.099216],
                       [-0.003882, -0.048116, 1.051998]])
DEUTERANOPIA = np.array([[0.367322, 0.860646, -0.227968],
                         [0.280085, 0.672501, 0.047413],
                         [-0.011820, 0.042940, 0.968881]])
SIMULATIONS = {"normal": np.eye(3), "protanopia": PROTANOPIA, "deuteranopia": DEUTERANOPIA}

# Linear sRGB to XYZ (IEC 61966-2-1, D65) and the D65 white point it maps white to.
SRGB_TO_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                        [0.2126729, 0.7151522, 0.0721750],
                        [0.0193339, 0.1191920, 0.9503041]])
WHITE = SRGB_TO_XYZ.sum(axis=1)


def srgb(hex_colour: str) -> np.ndarray:
    value = hex_colour.lstrip("#")
    return np.array([int(value[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0


def linearise(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def lab(hex_colour: str, simulation: np.ndarray = SIMULATIONS["normal"]) -> np.ndarray:
    linear = np.clip(simulation @ linearise(srgb(hex_colour)), 0.0, 1.0)
    xyz = SRGB_TO_XYZ @ linear / WHITE
    delta = 6 / 29
    f = np.where(xyz > delta ** 3, np.cbrt(xyz), xyz / (3 * delta ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def distances(look: theme.Theme, a: str, b: str) -> dict[str, float]:
    """L* difference with normal vision, and Delta E 76 under each simulation."""
    out = {"lightness": abs(lab(look.roles[a])[0] - lab(look.roles[b])[0])}
    for name, matrix in SIMULATIONS.items():
        out[name] = float(np.linalg.norm(lab(look.roles[a], matrix) - lab(look.roles[b], matrix)))
    return out


def test_reference_values() -> None:
    """The conversion itself: white is L* 100, black 0, sRGB red its textbook Lab."""
    assert lab("#ffffff") == pytest.approx([100, 0, 0], abs=0.01)
    assert lab("#000000") == pytest.approx([0, 0, 0], abs=0.01)
    assert lab("#ff0000") == pytest.approx([53.24, 80.09, 67.20], abs=0.05)
    # Protanopia and deuteranopia keep greys grey.
    for matrix in (PROTANOPIA, DEUTERANOPIA):
        assert lab("#808080", matrix) == pytest.approx(lab("#808080"), abs=0.1)


def test_pairs_name_real_roles() -> None:
    for look in theme.THEMES.values():
        for a, b in theme.CONTRASTING_PAIRS:
            assert a in look.roles and b in look.roles, (look.name, a, b)


@pytest.mark.parametrize("look", sorted(theme.THEMES))
@pytest.mark.parametrize("pair", theme.CONTRASTING_PAIRS, ids="/".join)
def test_contrasting_roles_stay_apart(look: str, pair: tuple[str, str]) -> None:
    found = distances(theme.THEMES[look], *pair)
    assert found["lightness"] >= theme.MIN_LIGHTNESS_STEP, found
    for name in ("protanopia", "deuteranopia"):
        assert found[name] >= theme.MIN_SIMULATED_DELTA_E, (name, found)


def test_readable_on_picks_the_stronger_contrast(qapp) -> None:  # noqa: ANN001
    from PySide6.QtGui import QColor

    for name in theme.THEMES:
        theme.apply(name)
        current = theme.current()
        assert theme.readable_on(QColor("#ffffff")).name() == min(
            (current.text, current.background), key=lambda c: lab(c)[0])
        assert theme.readable_on(QColor("#000000")).name() == max(
            (current.text, current.background), key=lambda c: lab(c)[0])
    theme.apply("dark")
