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
