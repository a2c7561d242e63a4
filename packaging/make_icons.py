"""Render resources/icons/gpuviz.svg to the PNG sizes the desktop entry uses, plus
packaging/windows/gpuviz.ico and packaging/macos/gpuviz.icns for the other installers.

The outputs are committed, so a build never needs this; rerun it after editing the SVG:
    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/make_icons.py
"""

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

HERE = Path(__file__).resolve().parent
ICONS = HERE.parent / "resources" / "icons"
SIZES = (16, 32, 48, 64, 128, 256)


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> None:
    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 - fonts/painter need it
    renderer = QSvgRenderer(str(ICONS / "gpuviz.svg"))
    outputs = [(render(renderer, size), ICONS / f"gpuviz-{size}.png", "PNG") for size in SIZES]
    # Qt's ICO and ICNS writers (imageformats plugins of the PySide6 wheel) store one image.
    outputs.append((render(renderer, 256), HERE / "windows" / "gpuviz.ico", "ICO"))
    outputs.append((render(renderer, 512), HERE / "macos" / "gpuviz.icns", "ICNS"))
    for image, path, kind in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(path), kind):
            raise SystemExit(f"could not write {path}")
        print(path)


if __name__ == "__main__":
    main()
