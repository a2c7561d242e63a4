"""Files the user brings: a GPU of their own (TOML), a model of their own (a Hugging Face
config.json) and their own measurements (nccl-tests output).

The menu (File > Add GPU…, Add model…) and the command line (`--import FILE`) share
`import_file`, which tells the kinds apart by content, not by the file's name. Files are
read offline, checked, and never written back; an added GPU or model joins every selector
for the run (gpuviz.data's USER_GPUS and USER_MODELS), and one copied into the user's data
folder (`user_folder()`) comes back at every start. Every problem is one DataError line
naming the file, the field or key, and what is expected.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from gpuviz.data import DataError
from gpuviz.data.hardware import USER_GPUS
from gpuviz.data.models import USER_MODELS
from gpuviz.imports.gpu import read_gpu
from gpuviz.imports.hf_config import display_name, model_id, read_config
from gpuviz.imports.nccl_tests import looks_like_nccl_tests, read_nccl_tests
from gpuviz.models.collectives import RUN_MEASUREMENTS
from gpuviz.models.transformer import parameter_count

GPU, MODEL, NCCL_TESTS = "gpu", "model", "nccl-tests"
# The kinds the user's data folder keeps, each in its own subfolder, by file pattern.
FOLDERS = {GPU: ("gpus", "*.toml"), MODEL: ("models", "*.json")}
REGISTRIES = {GPU: USER_GPUS, MODEL: USER_MODELS}
KIND_WORDS = {GPU: "GPU", MODEL: "model", NCCL_TESTS: "nccl-tests table"}


@dataclass(frozen=True)
class Imported:
    """What a file added: its kind, the id `--set` takes, its name, and for a model its
    parameter count and the part one token runs through (less than the total for a
    mixture of experts)."""

    kind: str
    id: str
    name: str
    total_params: int | None = None
    active_params: int | None = None

    def json(self) -> dict[str, object]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    def summary(self) -> str:
        """One line for messages and Preferences, counts to the last parameter."""
        text = f"{self.name} ({KIND_WORDS[self.kind]}, id {self.id})"
        if self.total_params is not None:
            text += f": {self.total_params:,} parameters"
            if self.active_params != self.total_params:
                text += f", {self.active_params:,} per token"
        return text


def _imported(kind: str, key: str, entry: object) -> Imported:
    if kind == MODEL:
        count = parameter_count(entry)
        return Imported(kind, key, entry.name, count.total, count.active)
    return Imported(kind, key, entry.name)


def import_file(path: str | Path) -> Imported:
    """Read and check a file, and add what it holds for this run."""
    imported, entry = _read(Path(path))
    if imported.kind in REGISTRIES:
        REGISTRIES[imported.kind].add(imported.id, entry)
    elif imported.kind == NCCL_TESTS:  # 7.3 and 7.4 open with it for the rest of the run
        RUN_MEASUREMENTS.append(entry)
    return imported


def _read(path: Path) -> tuple[Imported, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DataError(path, "", f"cannot be read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise DataError(path, "", "is not text; expected a GPU TOML file, a Hugging Face "
                                  "config.json or nccl-tests output") from None
    if text.lstrip().startswith("{"):
        cfg = read_config(path)
        _check_free(path, MODEL, cfg.key)
        return _imported(MODEL, cfg.key, cfg), cfg
    if looks_like_nccl_tests(text):
        measured = read_nccl_tests(path)
        return _imported(NCCL_TESTS, path.stem, measured), measured
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DataError(path, "", f"is neither a GPU TOML file ({error}), a Hugging Face "
                                  "config.json nor nccl-tests output") from None
    gpu = read_gpu(path)
    _check_free(path, GPU, gpu.key)
    return _imported(GPU, gpu.key, gpu), gpu


def _check_free(path: Path, kind: str, key: str) -> None:
    if REGISTRIES[kind].is_shipped(key):
        raise DataError(path, "", f"its id '{key}' is a built-in {KIND_WORDS[kind]}'s; "
                                  "rename the file")


# --- the user's data folder -------------------------------------------------------------
def user_folder() -> Path:
    """Where the user's GPUs and models live (Qt's AppDataLocation for gpuviz)."""
    from PySide6.QtCore import QCoreApplication, QStandardPaths

    from gpuviz import state

    QCoreApplication.setOrganizationName(state.ORGANIZATION)
    QCoreApplication.setApplicationName(state.APPLICATION)
    return Path(QStandardPaths.writableLocation(QStandardPaths.AppDataLocation))


def load_user_folder() -> list[DataError]:
    """Add every GPU and model in the user's data folder; the files that cannot be read
    are left out, each with its one line."""
    problems = []
    for folder, pattern in FOLDERS.values():
        for path in sorted((user_folder() / folder).glob(pattern)):
            try:
                import_file(path)
            except DataError as error:
                problems.append(error)
    return problems


def add_to_user_folder(path: str | Path) -> Imported:
    """Check a GPU or model file, copy it into the user's data folder (the original is
    never touched) and add it."""
    path = Path(path)
    imported, _ = _read(path)
    if imported.kind not in FOLDERS:
        raise DataError(path, "", "holds nccl-tests output, not a GPU or a model; open it "
                                  "on figure 7.3 or 7.4 with File > Open measurements")
    target = _user_file(imported.kind, path)
    replaced = user_files(imported.kind).get(imported.id)
    if target.resolve() != path.resolve():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        except OSError as error:
            raise DataError(target, "", f"cannot be written ({error.strerror})") from None
    if replaced is not None and replaced.resolve() != target.resolve():
        replaced.unlink(missing_ok=True)  # an older file of the same id
    return import_file(target)


def _user_file(kind: str, source: Path) -> Path:
    """A file's place in the user's folder: a model keeps its name (a checkpoint's
    config.json its folder's), a GPU its file name (its id)."""
    folder, pattern = FOLDERS[kind]
    stem = re.sub(r"[^\w.-]+", "_", display_name(source)) if kind == MODEL else source.stem
    return user_folder() / folder / (stem + pattern[1:])


def user_files(kind: str) -> dict[str, Path]:
    """The user's folder's files of one kind, by the id they hold."""
    folder, pattern = FOLDERS[kind]
    return {model_id(display_name(path)) if kind == MODEL else path.stem: path
            for path in sorted((user_folder() / folder).glob(pattern))}


def user_entries() -> list[Imported]:
    """Every GPU and model the user added, GPUs first."""
    return [_imported(kind, key, entry) for kind, registry in REGISTRIES.items()
            for key, entry in registry.user().items()]


def remove(kind: str, key: str) -> None:
    """Take a GPU or model out of the selectors and its file out of the user's folder."""
    path = user_files(kind).get(key)
    if path is not None:
        path.unlink(missing_ok=True)
    REGISTRIES[kind].remove(key)

