"""One installed package, mapped from the top-level folders: no symlinks, nothing else shipped."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import httpx
import pytest

from waypost.conformance.targets import ServerProcess

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
    assert "waypost/properties/verdicts/requirements.json" in names  # the requirement table's texts
    assert "waypost/conformance/templates/comparison.html" in names  # compare's page
    assert not [name for name in names if "node_modules" in name or "__pycache__" in name]


#: What the base install (``pip install waypost``) may add to a fresh venv, in MiB on disk:
#: 43 when this was written, 45.1 with the kit's workers and the power-cut shim; the margin
#: catches a heavy dependency of the base, not the package's own slow growth.
BASE_INSTALL_MIB = 47


def _mib_on_disk(folder: Path) -> float:
    return sum(path.lstat().st_blocks * 512 for path in folder.rglob("*")) / 2**20


@pytest.mark.slow
def test_the_base_install_serves_and_the_kit_and_mcp_are_extras(tmp_path: Path) -> None:
    """A fresh venv, the wheel with its base dependencies from the package index: it serves,
    weighs at most BASE_INSTALL_MIB, and the commands of the extras name them."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w",
                    str(tmp_path / "wheel"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "wheel").glob("waypost-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    fresh = _mib_on_disk(venv)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    added = _mib_on_disk(venv) - fresh
    print(f"the base install adds {added:.1f} MiB to a fresh venv")
    assert added <= BASE_INSTALL_MIB
    listed = subprocess.run([python, "-m", "pip", "list", "--format", "json"], check=True,
                            capture_output=True, text=True).stdout
    installed = {package["name"].lower() for package in json.loads(listed)}
    assert installed.isdisjoint({"hypothesis", "schemathesis", "mcp", "pydantic", "pytest"})
    server = ServerProcess(tmp_path / "data", "admin-token-of-the-base-install", python=python)
    try:
        assert httpx.get(f"{server.url}/v1/describe", timeout=30).status_code == 200
    finally:
        server.stop()
    for command, extra in ((["conformance", "--target", "sqlite"], "kit"),
                           (["mcp", "--url", server.url], "mcp")):
        done = subprocess.run([str(venv / "bin" / "waypost"), *command], capture_output=True,
                              text=True, timeout=60, cwd=tmp_path)
        assert (done.returncode, done.stderr.splitlines()[-1:]) == (
            2, [done.stderr.strip()]), done.stderr
        assert done.stderr.strip().endswith(f"pip install '.[{extra}]'")
