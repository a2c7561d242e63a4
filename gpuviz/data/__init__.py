"""Loading and validating the shipped data (resources/hardware, resources/models)."""

import functools
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar


class DataError(Exception):
    """A data file is missing, unreadable or malformed; the message names file and field."""

    def __init__(self, path: object, field: str, problem: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        where = f"{path}: field '{field}'" if field else str(path)
        super().__init__(f"{where}: {problem}")


def read_toml(path: Path) -> dict:
    """A data file's tables; DataError names the file when it cannot be read or parsed."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DataError(path, "", f"cannot be read ({error.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise DataError(path, "", f"is not valid TOML ({error})") from None


def read_json(path: Path) -> object:
    """A JSON file's content; DataError names the file when it cannot be read or parsed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DataError(path, "", f"cannot be read ({error.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DataError(path, "", f"is not valid JSON ({error})") from None


def read_header(path: Path, data: dict) -> tuple[str, str, int]:
    """The name, short name and display order every data file starts with."""
    for field in ("name", "short_name"):
        if not isinstance(data.get(field), str) or not data[field].strip():
            raise DataError(path, field, "missing or not a text")
    order = data.get("order", 99)
    if isinstance(order, bool) or not isinstance(order, int):
        raise DataError(path, "order", "must be a whole number")
    return data["name"], data["short_name"], order


def cache_by_key(maxsize: int | None = None) -> Callable[[Callable], Callable]:
    """functools.lru_cache for a function of a GPU's or model's key (a string): such a
    cache is cleared whenever the user's GPUs or models change, so an entry added again
    under the same key with new numbers is computed afresh, not read from the cache."""
    def decorate(function: Callable) -> Callable:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        _BY_KEY_CACHES.append(cached)
        return cached
    return decorate


_BY_KEY_CACHES: list = []


def _user_entries_changed() -> None:
    for cached in _BY_KEY_CACHES:
        cached.cache_clear()


YOURS = " (yours)"  # how a selector marks what the user added
T = TypeVar("T")


class UserEntries(Generic[T]):
    """The GPUs or models the user added for this run, listed after the shipped ones.

    `shipped` returns the shipped entries; `all()` is both, cached until the next add or
    remove (figures look entries up on every refresh)."""

    def __init__(self, shipped: Callable[[], dict[str, T]]) -> None:
        self._shipped = shipped
        self._user: dict[str, T] = {}
        self._all: dict[str, T] | None = None

    def all(self) -> dict[str, T]:
        if self._all is None:
            self._all = {**self._shipped(), **self._user}
        return self._all

    def user(self) -> dict[str, T]:
        return dict(self._user)

    def is_shipped(self, key: str) -> bool:
        return key in self._shipped()

    def add(self, key: str, entry: T) -> None:
        """Add or replace the user's entry `key` (never a shipped one: KeyError)."""
        if self.is_shipped(key):
            raise KeyError(key)
        self._user[key] = entry
        self._all = None
        _user_entries_changed()

    def remove(self, key: str) -> None:
        self._user.pop(key, None)
        self._all = None
        _user_entries_changed()

    def clear(self) -> None:
        self._user.clear()
        self._all = None
        _user_entries_changed()

    def label(self, key: str, name: str) -> str:
        """A selector's label: the name, marked when the entry is the user's."""
        return name + YOURS if key in self._user else name
