"""Loading and validating the shipped data (resources/hardware, resources/models)."""

import tomllib
from pathlib import Path


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


def read_header(path: Path, data: dict) -> tuple[str, str, int]:
    """The name, short name and display order every data file starts with."""
    for field in ("name", "short_name"):
        if not isinstance(data.get(field), str) or not data[field].strip():
            raise DataError(path, field, "missing or not a text")
    order = data.get("order", 99)
    if isinstance(order, bool) or not isinstance(order, int):
        raise DataError(path, "order", "must be a whole number")
    return data["name"], data["short_name"], order
