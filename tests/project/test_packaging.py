"""One installed package, mapped from the top-level folders: no symlinks, nothing else shipped."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folders_with_init() -> set[str]:
    """Every importable package the folders hold, named as installed (``commands`` is ``waypost``)."""
    found = set()
    for name, folder in PYPROJECT["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *relative)))
    return found


def test_the_package_list_names_every_folder_that_holds_python() -> None:
    assert set(PYPROJECT["packages"]) == _folders_with_init()


def test_the_repository_holds_no_symlinks() -> None:
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.splitlines()
    links = [line.split("\t")[1] for line in listed if line.startswith("120000")]
    assert links == []


@pytest.mark.slow
def test_the_wheel_ships_only_the_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("waypost-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"waypost", wheel.name.split("-py3")[0] + ".dist-info"}
    assert "waypost/reference/storage/migrations/0001_schema.sql" in names
    assert "waypost/adapters/d1/gateway/package-lock.json" in names
    assert "waypost/reference/consumer/migrations/0002_outbound_attachments.sql" in names
    assert "waypost/reference/http/dashboard/templates/base.html" in names
    assert "waypost/reference/http/dashboard/static/dashboard.css" in names
    assert "waypost/properties/requirements.json" in names  # the requirement table's texts
    assert "waypost/conformance/templates/comparison.html" in names  # compare's page
    assert not [name for name in names if "node_modules" in name or "__pycache__" in name]
