"""Remembered state: the settings file, each figure's parameter values, preferences.

Everything lives in one QSettings store (an INI file, `~/.config/gpuviz/gpuviz.conf` on
Linux). Each figure keeps its parameters in the group `figures/<number>`, only the values
that differ from the defaults, so a changed default in a later version still reaches users
who never touched that control. Values are read back through `Parameter.coerce`; unknown
names and values of the wrong kind are ignored, never fatal.

A settings file that cannot be read (binary junk, broken INI syntax) never stops the app:
`recover_corrupt_settings()` moves it aside to `<file>.bak` (or `.bak.1`, `.bak.2`, ... so an
older copy is not overwritten) and returns one sentence for the user.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

ORGANIZATION = APPLICATION = "gpuviz"
FIGURES_GROUP = "figures"
THEME_KEY = "view/theme"
TEXT_SCALE_KEY = "view/text_scale"
REDUCED_MOTION_KEY = "view/reduced_motion"
EXPORT_FOLDER_KEY = "export/folder"
PLAYLIST_FOLDER_KEY = "playlist/folder"
PROGRESS_GROUP = "questions"  # the worked questions answered right
TOUR_SEEN_KEY = "tour/seen"
THEME_CHOICES = ("system", "dark", "light", "projector")
TEXT_SCALES = (0.85, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0)
MIN_TEXT_SCALE, MAX_TEXT_SCALE = 0.75, 2.5


def settings() -> QSettings:
    """The application's settings store (the same file in every process)."""
    return QSettings(ORGANIZATION, APPLICATION)


def settings_path() -> Path:
    return Path(settings().fileName())


# --- corrupt files --------------------------------------------------------------------------
def is_corrupt(path: Path) -> bool:
    """True when the file exists but is not a readable INI settings file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if b"\x00" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return QSettings(str(path), QSettings.IniFormat).status() != QSettings.NoError


def backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    index = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{index}")
        index += 1
    return candidate


def recover_corrupt_settings(path: Path | None = None) -> str | None:
    """Move an unreadable settings file aside; return the message for the user, or None."""
    path = path or settings_path()
    if not is_corrupt(path):
        return None
    backup = backup_path(path)
    try:
        shutil.copy2(path, backup)
        path.unlink()
    except OSError as error:
        return (f"The settings file {path} could not be read and could not be moved aside "
                f"({error}); starting with default settings.")
    store = QSettings(str(path), QSettings.IniFormat)  # drop anything Qt cached
    store.clear()
    store.sync()
    return (f"The settings file could not be read, so gpuviz started with default settings. "
            f"The old file was kept as {backup}.")


def reset_all(store: QSettings | None = None) -> Path:
    """Forget every saved setting. Returns the settings file's path."""
    store = store or settings()
    store.clear()
    store.sync()
    return Path(store.fileName())


# --- figure parameter values ----------------------------------------------------------------
def _group(number: str) -> str:
    return f"{FIGURES_GROUP}/{number}"


def save_figure(store: QSettings, number: str, model: Any) -> None:
    """Write the model's non-default parameter values under `figures/<number>`."""
    store.remove(_group(number))
    store.beginGroup(_group(number))
    try:
        for name, param in model.parameters().items():
            value = model.get(name)
            if value != param.default:
                store.setValue(name, value)
    finally:
        store.endGroup()


def load_figure(store: QSettings, number: str, model: Any) -> list[str]:
    """Apply saved values to the model; returns the names that were ignored as invalid."""
    known = model.parameters()
    ignored: list[str] = []
    store.beginGroup(_group(number))
    try:
        saved = {name: store.value(name) for name in store.childKeys()}
    finally:
        store.endGroup()
    with model.batch():
        for name, raw in saved.items():
            param = known.get(name)
            if param is None:
                ignored.append(name)
                continue
            try:
                value = param.coerce(raw)
                if isinstance(value, float) and not math.isfinite(value):
                    raise ValueError(name)
                model.set(name, value)
            except (ValueError, TypeError, OverflowError):
                ignored.append(name)
    return ignored


def forget_figure(store: QSettings, number: str) -> None:
    store.remove(_group(number))


# --- preferences ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Preferences:
    theme: str = "system"
    text_scale: float = 1.0
    reduced_motion: bool = False


def load_preferences(store: QSettings) -> Preferences:
    theme = str(store.value(THEME_KEY, "system"))
    if theme not in THEME_CHOICES:
        theme = "system"
    try:
        scale = float(store.value(TEXT_SCALE_KEY, 1.0))
    except (TypeError, ValueError):
        scale = 1.0
    if not math.isfinite(scale) or not MIN_TEXT_SCALE <= scale <= MAX_TEXT_SCALE:
        scale = 1.0
    motion = str(store.value(REDUCED_MOTION_KEY, "false")).strip().lower() in ("true", "1")
    return Preferences(theme, scale, motion)


def save_preferences(store: QSettings, prefs: Preferences) -> None:
    store.setValue(THEME_KEY, prefs.theme)
    store.setValue(TEXT_SCALE_KEY, prefs.text_scale)
    store.setValue(REDUCED_MOTION_KEY, prefs.reduced_motion)


# --- worked questions answered right -------------------------------------------------------
def load_progress(store: QSettings) -> set[str]:
    """The keys of the questions answered right (gpuviz.questions: "<lesson>-<id>")."""
    store.beginGroup(PROGRESS_GROUP)
    try:
        return {key for key in store.childKeys()
                if str(store.value(key)).strip().lower() in ("true", "1")}
    finally:
        store.endGroup()


def save_progress(store: QSettings, key: str) -> None:
    store.setValue(f"{PROGRESS_GROUP}/{key}", True)


def forget_progress(store: QSettings) -> None:
    store.remove(PROGRESS_GROUP)


def tour_seen(store: QSettings) -> bool:
    return str(store.value(TOUR_SEEN_KEY, "false")).strip().lower() in ("true", "1")
