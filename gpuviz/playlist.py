"""Playlists: the figures a lecture steps through, in order, as a small text file.

Plain text with figure numbers separated by commas, spaces or new lines (`#` starts a
comment), or JSON: a list, or {"figures": [...]}. Every number must be in the catalog.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuviz import catalog

PLAYLIST_SUFFIX = ".gpuviz-playlist"
MAX_PLAYLIST_BYTES = 100_000


class PlaylistError(ValueError):
    """A playlist we refuse, with the sentence that says why."""


def parse_playlist(text: str) -> list[str]:
    """Figure numbers from a playlist: JSON (a list, or {"figures": [...]}) or plain text
    with numbers separated by commas, spaces or new lines; `#` starts a comment.
    Every number must be a figure of the catalog; raises PlaylistError otherwise."""
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
        words = [str(x) for x in data]
    else:
        words = []
        for line in text.splitlines():
            words += line.split("#", 1)[0].replace(",", " ").split()
    if not words:
        raise PlaylistError("the playlist names no figures")
    known = {spec.number for spec in catalog.all_figures()}
    unknown = [word for word in words if word not in known]
    if unknown:
        raise PlaylistError(f"unknown figure {', '.join(repr(u) for u in unknown[:5])}; "
                            f"built figures: {', '.join(sorted(known, key=_sort_key))}")
    return words


def _sort_key(number: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in number.split("."))
    except ValueError:
        return (999,)


def read_playlist(path: Path) -> list[str]:
    try:
        if path.stat().st_size > MAX_PLAYLIST_BYTES:
            raise PlaylistError("the file is too large to be a playlist")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PlaylistError("the file is not text") from None
    except OSError as error:
        raise PlaylistError(error.strerror or str(error)) from None
    return parse_playlist(text)


def playlist_text(numbers: list[str]) -> str:
    return ("# gpuviz playlist: figure numbers in the order to show them\n"
            + "\n".join(numbers) + "\n")


def write_playlist(path: Path, numbers: list[str]) -> None:
    path.write_text(playlist_text(numbers), encoding="utf-8")
