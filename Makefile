# gpuviz: one command to set up and run, one to set up and test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-screens clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)  ## set everything up and open the app
	$(BIN)/gpuviz

lint: $(STAMP)
	$(BIN)/ruff check gpuviz tests benchmarks
	$(BIN)/lint-imports

# One worker per core (pytest-xdist) for the tests, then the slow packaging tests, a file
# per worker: the bundle (make dist, in the checkout's build/ and dist/) beside the wheel
# (built from a copy of the checkout), so each build runs once and neither sees the other.
test: $(STAMP) lint  ## set everything up and run the tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -n auto -m "not slow"
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -m slow -n 2 --dist loadfile

bench: $(STAMP)  ## update + repaint latency, frame rate and start-up time
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/latency.py

# FIGURES=8.2,1.1 measures those figures only
bench-screens: $(STAMP)  ## latency and fps on four screens (1280x800, 1920x1080, 2560x1440, ratio 2)
	QT_QPA_PLATFORM=offscreen $(BIN)/python benchmarks/latency.py --screens \
		$(if $(FIGURES),--figures $(FIGURES)) $(if $(PASSES),--passes $(PASSES))

clean:
	rm -rf $(VENV) build dist *.egg-info

# ---- offline installers (docs/installers.md) --------------------------------------------
# make dist: dist/gpuviz/ (one-folder bundle), dist/gpuviz-<version>-linux-x86_64.tar.gz,
# dist/gpuviz_<version>_amd64.deb, and the wheel and sdist beside them. PyInstaller comes from
# the `dist` extra of pyproject.toml, pinned: the spec's exclusions were checked by running
# the frozen binary built with those versions.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
# .deb compression: xz, or zstd for a bigger .deb in a tenth of the time (build-deb.sh)
DEB_COMPRESS ?= xz

.PHONY: dist dist-clean

dist: $(STAMP)  ## offline Linux bundle, tarball, .deb, wheel and sdist in dist/
	$(BIN)/pip install --quiet -e '.[dev,dist]'
	rm -rf dist/gpuviz
	$(BIN)/pyinstaller --noconfirm --log-level WARN --distpath dist \
		--workpath build/pyinstaller packaging/gpuviz.spec
	tar -C dist -czf dist/gpuviz-$(VERSION)-linux-x86_64.tar.gz gpuviz
	DEB_COMPRESS=$(DEB_COMPRESS) packaging/linux/build-deb.sh $(VERSION)
	$(BIN)/python -m build --outdir dist .
	@du -sh dist/gpuviz dist/gpuviz-$(VERSION)-linux-x86_64.tar.gz dist/gpuviz_$(VERSION)_amd64.deb \
		dist/gpuviz-$(VERSION)-py3-none-any.whl dist/gpuviz-$(VERSION).tar.gz

dist-clean:
	rm -rf dist build/pyinstaller build/deb
