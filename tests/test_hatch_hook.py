"""The hatchling build hook, used the way another project would: a wheel built from specs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from codegen.emit import OutputError
from codegen.hatch_hook import output_folder

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = """\
[build-system]
requires = ["hatchling", "kafka-specgen"]
build-backend = "hatchling.build"

[project]
name = "demo-kafka-codecs"
version = "1.0.0"

[tool.hatch.build.targets.wheel]
packages = ["src/demo_codecs"]

[tool.hatch.build.hooks.kafka-specgen]
specs = "specs"
out = "src/demo_codecs"
"""


def test_wheel_of_another_project_contains_generated_codecs(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    (project / "specs").mkdir(parents=True)
    (project / "src" / "demo_codecs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    spec = ROOT / "message_specs" / "consumer_offsets" / "OffsetCommitValue.json"
    (project / "specs" / spec.name).write_text(spec.read_text())
    # hatchling's own CLI builds in this environment, where the plugin is installed.
    result = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    wheel = next((project / "dist").glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "demo_codecs/offset_commit_value.py" in names
    assert "demo_codecs/__init__.py" in names
    module = zipfile.ZipFile(wheel).read("demo_codecs/offset_commit_value.py").decode()
    assert "DO NOT EDIT" in module and "class OffsetCommitValue" in module


def test_hook_output_is_out_and_package_inside_the_project(tmp_path: Path) -> None:
    folder = output_folder(tmp_path, {"out": "src", "package": "demo.kafka"})
    assert folder == tmp_path / "src" / "demo" / "kafka"


def test_hook_rejects_a_package_that_is_not_a_python_name(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as caught:
        output_folder(tmp_path, {"out": "src", "package": "demo./etc"})
    assert str(caught.value) == (
        "package name 'demo./etc' is not a dotted Python name: '/etc' is not an identifier "
        "(ASCII letters, digits and underscores, not starting with a digit, not a keyword); "
        "use a name such as myproject.kafka"
    )


def test_hook_rejects_an_out_folder_outside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    project.mkdir()
    with pytest.raises(OutputError) as caught:
        output_folder(project, {"out": "../elsewhere"})
    assert str(caught.value) == (
        f"out = '../elsewhere' resolves to {tmp_path / 'elsewhere'}, outside "
        f"the project {project}; give a folder inside the project"
    )
