"""Only what pyproject.toml cannot say: the top-level resources/ folder ships inside the
package as gpuviz/resources (no second copy in the repository; see gpuviz/paths.py)."""

from setuptools import find_namespace_packages, setup

# resources/ and each folder in it, as data-only packages under gpuviz.resources.
RESOURCES = ["gpuviz.resources",
             *(f"gpuviz.resources.{name}" for name in find_namespace_packages(where="resources"))]

setup(
    packages=[*find_namespace_packages(include=["gpuviz", "gpuviz.*"],
                                       exclude=["*.__pycache__"]),
              *RESOURCES],
    package_dir={"gpuviz.resources": "resources"},
    package_data={name: ["*"] for name in RESOURCES},
)
