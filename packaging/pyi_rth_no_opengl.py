"""PyInstaller runtime hook: stand-ins for PySide6.QtOpenGL and QtOpenGLWidgets.

pyqtgraph 0.14 imports both at start-up even with OpenGL off (PlotCurveItem, PColorMeshItem
and its Qt helpers build OpenGL classes at import). gpuviz draws nothing with OpenGL, so the
bundle leaves the two modules out (QtOpenGL's binding alone is 8.5 MiB) and these empty
modules answer the imports: every name in them is an empty class, which pyqtgraph only
subclasses or tests with isinstance. tests/test_bundle.py renders a figure of every lesson
with the frozen app and compares it with the source."""

import sys
import types


def _stand_in(name: str) -> type:
    return type(name, (), {})


for _name in ("PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets"):
    _module = types.ModuleType(_name)
    _module.__getattr__ = _stand_in
    sys.modules[_name] = _module
