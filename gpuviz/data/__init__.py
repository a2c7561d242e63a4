"""Loading and validating the shipped data (resources/hardware, resources/models)."""


class DataError(Exception):
    """A data file is missing, unreadable or malformed; the message names file and field."""

    def __init__(self, path: object, field: str, problem: str) -> None:
        self.path = path
        self.field = field
        self.problem = problem
        where = f"{path}: field '{field}'" if field else str(path)
        super().__init__(f"{where}: {problem}")
