"""Where the shipped resources live.

`resources/` sits at the top of the repository and is shipped inside the package as
`gpuviz/resources` (setup.py maps it): a wheel, an sdist install and the PyInstaller bundle
all have it there, found through importlib.resources. A source checkout or an editable
install has no `gpuviz/resources`, so the folder beside the package is used.
"""

from importlib.resources import files
from pathlib import Path


def resources_dir() -> Path:
    installed = Path(str(files("gpuviz"))) / "resources"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "resources"


def resource(*parts: str) -> Path:
    return resources_dir().joinpath(*parts)
