#!/usr/bin/env bash
# Build dist/gpuviz_<version>_amd64.deb from the one-folder bundle dist/gpuviz/.
# Usage: [DEB_COMPRESS=xz|zstd|gzip] packaging/linux/build-deb.sh VERSION   (make dist calls it)
# Only dpkg-deb is needed (no debhelper). The package installs:
#   /opt/gpuviz/                          the PyInstaller bundle
#   /usr/bin/gpuviz                       a launcher script
#   /usr/share/applications/gpuviz.desktop
#   /usr/share/icons/hicolor/*/apps/gpuviz.{png,svg}
#   /usr/share/doc/gpuviz/copyright
set -euo pipefail
VERSION=${1:?usage: build-deb.sh VERSION}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUNDLE=$ROOT/dist/gpuviz
STAGE=$ROOT/build/deb/gpuviz_${VERSION}_amd64
OUT=$ROOT/dist/gpuviz_${VERSION}_amd64.deb

[ -x "$BUNDLE/gpuviz" ] || { echo "build-deb.sh: no bundle at $BUNDLE; run make dist" >&2; exit 1; }

rm -rf "$STAGE"
mkdir -p "$STAGE/DEBIAN" "$STAGE/opt" "$STAGE/usr/bin" "$STAGE/usr/share/applications" \
         "$STAGE/usr/share/doc/gpuviz" "$STAGE/usr/share/icons/hicolor/scalable/apps"
cp -a "$BUNDLE" "$STAGE/opt/gpuviz"
install -m 755 "$HERE/gpuviz-launcher.sh" "$STAGE/usr/bin/gpuviz"
install -m 644 "$HERE/gpuviz.desktop" "$STAGE/usr/share/applications/gpuviz.desktop"
install -m 644 "$ROOT/resources/icons/gpuviz.svg" \
        "$STAGE/usr/share/icons/hicolor/scalable/apps/gpuviz.svg"
for size in 16 32 48 64 128 256; do
    dir="$STAGE/usr/share/icons/hicolor/${size}x${size}/apps"
    mkdir -p "$dir"
    install -m 644 "$ROOT/resources/icons/gpuviz-$size.png" "$dir/gpuviz.png"
done
cat > "$STAGE/usr/share/doc/gpuviz/copyright" <<COPYRIGHT
gpuviz $VERSION, an offline build of the gpuviz teaching app.
The bundle in /opt/gpuviz contains CPython (PSF License), Qt 6 and PySide6 (LGPLv3),
pyqtgraph (MIT), numpy (BSD-3-Clause, with OpenBLAS BSD-3-Clause and libgfortran
GPL-3.0+ with the GCC runtime library exception) and ICU (Unicode License).
COPYRIGHT

# Permissions as lintian expects; no file is writable by others, nothing is setuid.
find "$STAGE" -type d -exec chmod 755 {} +
find "$STAGE" -type f -exec chmod go-w {} +

depends=$(grep -v '^\s*#' "$HERE/depends.txt" | sed '/^\s*$/d' | paste -sd, - | sed 's/,/, /g')
installed_size=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@INSTALLED_SIZE@/$installed_size/" \
    -e "s/@DEPENDS@/$depends/" "$HERE/control.in" > "$STAGE/DEBIAN/control"

mkdir -p "$(dirname "$OUT")"
# DEB_COMPRESS: xz (default, level 6 as dpkg-deb's own default: ~39 MiB, ~130 s of CPU on
# this bundle), zstd (level 9: ~48 MiB, ~10 s; dpkg >= 1.21.18, i.e. Debian 12 / Ubuntu 22.04,
# which the glibc requirement demands anyway) or gzip (~56 MiB, ~10 s). The bundle tests use
# zstd to stay within their time budget; the contents are the same.
case "${DEB_COMPRESS:-xz}" in
    xz)   compress=(-Zxz -z6) ;;
    zstd) compress=(-Zzstd -z9) ;;
    gzip) compress=(-Zgzip -z6) ;;
    *) echo "build-deb.sh: DEB_COMPRESS must be xz, zstd or gzip" >&2; exit 2 ;;
esac
dpkg-deb --root-owner-group "${compress[@]}" --build "$STAGE" "$OUT"
rm -rf "$STAGE"
ls -l "$OUT"
