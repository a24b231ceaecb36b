"""The hatchling build hook, used the way another project would: a wheel built from specs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

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
