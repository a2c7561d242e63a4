"""gpuviz as an ordinary Python package: the wheel and the sdist carry resources/, and the
wheel installed into a fresh virtual environment outside the checkout behaves exactly like
the source.

Slow-ish (about 15 s with a warm pip cache): runs with GPUVIZ_BUNDLE_TESTS=1, as `.ci/run`
sets it. It needs the package index only for what pip's cache lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from gpuviz import __version__
from tests.app_runs import (
    FIRST_FIGURES,
    ROOT,
    assert_same_figure,
    offscreen_env,
    run,
    run_source,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("GPUVIZ_BUNDLE_TESTS") != "1",
                       reason="package tests run only with GPUVIZ_BUNDLE_TESTS=1"),
]

RESOURCE_FILES = sorted(p.relative_to(ROOT / "resources").as_posix()
                        for p in (ROOT / "resources").rglob("*") if p.is_file())


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """A wheel and an sdist of this checkout, built as `python -m build` builds them, from
    a copy of it: the build writes gpuviz.egg-info into the tree it builds, and `make dist`
    (the bundle tests, on the other worker of `make test`) writes it into the checkout."""
    tree = tmp_path_factory.mktemp("checkout") / "gpuviz"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
        ".hypothesis"))
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(tree)],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def installed(built, tmp_path_factory) -> Path:
    """The gpuviz command of the wheel installed into a fresh virtual environment."""
    prefix = tmp_path_factory.mktemp("venv")
    venv.create(prefix, with_pip=True)
    wheel = next(built.glob("gpuviz-*.whl"))
    subprocess.run([str(prefix / "bin" / "pip"), "install", "--quiet",
                    "--disable-pip-version-check", str(wheel)], check=True)
    return prefix / "bin" / "gpuviz"


@pytest.fixture(scope="session")
def env(tmp_path_factory) -> dict[str, str]:
    environment = offscreen_env(tmp_path_factory.mktemp("home"))
    environment.pop("PYTHONPATH", None)  # the installed copy must not see the checkout
    return environment


def test_wheel_and_sdist_carry_every_resource(built):
    wheel = zipfile.ZipFile(next(built.glob(f"gpuviz-{__version__}-*.whl")))
    prefix = "gpuviz/resources/"
    assert sorted(n[len(prefix):] for n in wheel.namelist() if n.startswith(prefix)) == \
        RESOURCE_FILES
    with tarfile.open(built / f"gpuviz-{__version__}.tar.gz") as sdist:
        prefix = f"gpuviz-{__version__}/resources/"
        names = sorted(m.name[len(prefix):] for m in sdist.getmembers()
                       if m.isfile() and m.name.startswith(prefix))
    assert names == RESOURCE_FILES


def test_installed_app_lives_outside_the_checkout(installed, env, tmp_path):
    where = run([str(installed.parent / "python"), "-c",
                 "import gpuviz.paths as p; print(p.resources_dir())"], env, cwd=tmp_path)
    assert Path(where.strip()).is_dir()
    assert ROOT not in Path(where.strip()).parents


def test_list_and_version_are_identical(installed, env, tmp_path):
    assert run([str(installed), "--list"], env, cwd=tmp_path) == run_source(env, "--list")
    assert run([str(installed), "--version"], env, cwd=tmp_path).strip() == \
        f"gpuviz {__version__}"


@pytest.mark.parametrize("number", FIRST_FIGURES)
def test_readout_and_screenshot_match_source(installed, env, tmp_path, number):
    assert_same_figure([str(installed)], env, number, tmp_path)
