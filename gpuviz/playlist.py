"""Playlists: the figures a lecture steps through, in order, as a small text file.

Plain text with figure numbers separated by commas, spaces or new lines (`#` starts a
comment), or JSON: a list, or {"figures": [...]}. Every number must be in the catalog.
`step=N` or `step=end` after an animated figure opens it at that step (`6.3 step=end`;
in JSON, "6.3 step=end").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gpuviz import catalog

PLAYLIST_SUFFIX = ".gpuviz-playlist"
MAX_PLAYLIST_BYTES = 100_000
STEP_WORD = "step="


class PlaylistError(ValueError):
    """A playlist we refuse, with the sentence that says why."""


@dataclass(frozen=True)
class PlaylistEntry:
    """One figure of a playlist, opened at `step` of its animation when one is given
    (checked at the figure's defaults; a figure set to fewer steps opens at its end)."""

    number: str
    step: int | str | None = None

    def __str__(self) -> str:
        return self.number if self.step is None else f"{self.number} {STEP_WORD}{self.step}"


def parse_playlist(text: str) -> list[PlaylistEntry]:
    """The entries of a playlist: JSON (a list, or {"figures": [...]}) or plain text with
    numbers separated by commas, spaces or new lines; `#` starts a comment; `step=` after
    a figure gives its step. Every number must be a figure of the catalog and every step
    one of its figure's; raises PlaylistError otherwise."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise PlaylistError(f"not valid JSON: {error.msg} (line {error.lineno})") from None
        if isinstance(data, dict):
            data = data.get("figures")
        if not isinstance(data, list) or not all(isinstance(x, str | int | float)
                                                 for x in data):
            raise PlaylistError('JSON playlist must be a list of figure numbers or '
                                '{"figures": [...]}')
        words = [word for x in data for word in str(x).split()]
    else:
        words = []
        for line in text.splitlines():
            words += line.split("#", 1)[0].replace(",", " ").split()
    entries = _entries(words)
    known = {spec.number for spec in catalog.all_figures()}
    unknown = [entry.number for entry in entries if entry.number not in known]
    if unknown:
        raise PlaylistError(f"unknown figure {', '.join(repr(u) for u in unknown[:5])}; "
                            f"built figures: {', '.join(sorted(known, key=_sort_key))}")
    return [_checked(entry) for entry in entries]


def _entries(words: list[str]) -> list[PlaylistEntry]:
    """Figure numbers, each with the step= word that follows it, if any."""
    entries: list[PlaylistEntry] = []
    for word in words:
        if not word.startswith(STEP_WORD):
            entries.append(PlaylistEntry(word))
        elif not entries:
            raise PlaylistError(f"'{word}' comes before any figure; write it after one, "
                                "as in 6.3 step=end")
        elif entries[-1].step is not None:
            raise PlaylistError(f"figure {entries[-1].number} is given two steps")
        else:
            entries[-1] = PlaylistEntry(entries[-1].number, word[len(STEP_WORD):])
    if not entries:
        raise PlaylistError("the playlist names no figures")
    return entries


def _checked(entry: PlaylistEntry) -> PlaylistEntry:
    if entry.step is None:
        return entry
    try:
        return PlaylistEntry(entry.number, catalog.figure(entry.number).parse_step(
            str(entry.step)))
    except ValueError as error:
        raise PlaylistError(f"{entry}: {error}") from None


def _sort_key(number: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in number.split("."))
    except ValueError:
        return (999,)


def read_playlist(path: Path) -> list[PlaylistEntry]:
    try:
        if path.stat().st_size > MAX_PLAYLIST_BYTES:
            raise PlaylistError("the file is too large to be a playlist")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PlaylistError("the file is not text") from None
    except OSError as error:
        raise PlaylistError(error.strerror or str(error)) from None
    return parse_playlist(text)


def playlist_text(entries: list[PlaylistEntry]) -> str:
    return ("# gpuviz playlist: figure numbers in the order to show them "
            "(step=N or step=end after one opens it at that step)\n"
            + "\n".join(map(str, entries)) + "\n")


def write_playlist(path: Path, entries: list[PlaylistEntry]) -> None:
    path.write_text(playlist_text(entries), encoding="utf-8")
