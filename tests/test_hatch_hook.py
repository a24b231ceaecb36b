"""The hatchling build hook, used the way another project would.

- The README's recipe runs as written (its ``bash`` blocks, with only ``path/to/kafka-specgen``
  replaced): a wheel and an sdist of this project beside the user project, a wheel of the user
  project built by pip in an isolated build environment that finds ``kafka-specgen[generator]``
  through ``--find-links``, and this project's pure wheel (``SPECGEN_NATIVE_BUILD=skip``).
- On the machine's other CPythons (pyenv's 3.12 and 3.13; skipped where missing) the user's
  wheel installs with no index: pip builds the sdist, whose engine that Python compiles; with no
  compiler on PATH, the pure wheel and the sdist's fallback both read with the pure backend.
- A compiler that fails shows its command and output, on pip's terminal without ``-v``, before
  the pure fallback; ``SPECGEN_NATIVE_BUILD=required`` makes it stop the build.
- The user's wheel installs into a clean virtualenv with ``--no-index`` and runs there with the
  stdlib-only runtime alone: no jinja2, jsonschema, ruff or click.
- mypy --strict sees the shipped codecs as typed (``py.typed``).
- Spec problems, a missing specs path and an empty specs folder stop the build with lines a user
  can act on, without a traceback, in what ``pip wheel`` prints.

Building needs hatchling and the generator's libraries from the package index (as any pip build
does); installing in the clean virtualenv needs no index.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegen.emit import OutputError
from codegen.hatch_hook import output_folder

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SPEC = ROOT / "message_specs" / "consumer_offsets" / "OffsetCommitValue.json"
# What a checkout needs to build the kafka-specgen wheel (pyproject's wheel and sdist targets).
CHECKOUT = ["pyproject.toml", "README.md", "codegen", "generated", "spark_udfs", "message_specs"]

pytestmark = pytest.mark.xdist_group("hatch_hook")  # one set of builds per test run


def _env() -> dict[str, str]:
    """This environment, without PYTHONPATH: builds and the clean venv import only what they install."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 300) -> str:
    proc = subprocess.run(
        args, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{shlex.join(args)} failed:\n{output[-4000:]}"
    return output


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def _block(section: str, language: str) -> str:
    found = re.search(rf"^```{language}\n(.*?)^```$", section, re.M | re.S)
    assert found, f"no ```{language} block in the README section"
    return found.group(1)


_BASH = re.compile(
    r"(?:^(?P<note><!-- not run:[^\n]*-->)\n)?^```bash\n(?P<code>.*?)^```$", re.M | re.S
)


def readme_recipe() -> tuple[str, list[list[list[str]]]]:
    """The build hook's pyproject.toml lines and the commands of each ``bash`` block the README
    section runs (a block after a ``<!-- not run: why -->`` line is left out)."""
    section = _section(README.read_text(), "## Generating codecs in your own project")
    blocks = [
        [
            shlex.split(line, comments=True)
            for line in m.group("code").splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
        for m in _BASH.finditer(section)
        if not m.group("note")
    ]
    return _block(section, "toml"), blocks


def _argv(
    args: list[str], project: Path, python: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """A README line as an argv and its environment: ``VAR=value`` prefixes in the environment,
    placeholders filled, globs expanded, ``pip`` and ``python`` of this interpreter (``--python``
    for the pip of another one)."""
    env = _env()
    while "=" in args[0]:
        name, value = args[0].split("=", 1)
        env[name] = value
        args = args[1:]
    if args[0] == "pip":
        out = [sys.executable, "-m", "pip", *(["--python", python] if python else [])]
    else:
        assert args[:3] == ["python", "-m", "build"], args
        out = [sys.executable, "-m", "build"]
    for arg in args[1 if args[0] == "pip" else 3 :]:
        arg = arg.replace("path/to/kafka-specgen", str(project.parent / "kafka-specgen"))
        if "*" in arg:
            matches = sorted(str(p) for p in project.glob(arg))
            assert matches, f"{arg} matches nothing in {project}"
            out.extend(matches)
        else:
            out.append(arg)
    return out, env


def _pip(args: list[str], project: Path, python: str | None = None) -> list[str]:
    argv, env = _argv(args, project, python)
    assert env == _env(), args
    return argv


@dataclass(frozen=True)
class Built:
    project: Path  # the user project
    wheels: Path  # the kafka-specgen wheel and sdist (README: ../wheels)
    pure_wheels: Path  # the pure kafka-specgen wheel (README: ../wheels-pure)
    wheel: Path  # the user project's wheel (README: dist/)
    install: list[str]  # the README's install line
    pure_install: list[str]  # the README's install line with the pure wheel


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The README's build commands, run once: kafka-specgen's wheel and sdist, the user's
    wheel, and kafka-specgen's pure wheel."""
    toml, blocks = readme_recipe()
    base = tmp_path_factory.mktemp("recipe")
    checkout = base / "kafka-specgen"
    checkout.mkdir()
    for name in CHECKOUT:
        source = ROOT / name
        if source.is_dir():
            # A clone has no built engine: the wheel build compiles its own.
            ignore = shutil.ignore_patterns(
                "__pycache__", "_engine*.so", "_records*.so", "_jsontext*.so"
            )
            shutil.copytree(source, checkout / name, ignore=ignore)
        else:
            shutil.copy2(source, checkout / name)
    project = base / "myproject"
    (project / "specs").mkdir(parents=True)
    (project / "specs" / SPEC.name).write_text(SPEC.read_text())
    (project / "src" / "myproject").mkdir(parents=True)
    (project / "src" / "myproject" / "__init__.py").write_text('"""A user project."""\n')
    (project / ".gitignore").write_text("src/myproject/kafka/\n")  # generated, not committed
    project_table = '[project]\nname = "myproject"\nversion = "1.0.0"\n'
    (project / "pyproject.toml").write_text(toml + "\n" + project_table)

    assert len(blocks) == 2, blocks  # the recipe, the pure wheel
    recipe, pure = blocks
    installs = [c for c in recipe if c[:2] == ["pip", "install"]]
    assert len(recipe) == 4 and len(installs) == 1 and recipe[-1] == installs[0], recipe
    assert len(pure) == 2 and pure[1][:2] == ["pip", "install"], pure
    for command in [*recipe[:-1], pure[0]]:
        argv, env = _argv(command, project)
        _run(argv, cwd=project, env=env)
    (wheel,) = (project / "dist").glob("myproject-*.whl")
    return Built(project, base / "wheels", base / "wheels-pure", wheel, installs[0], pure[1])


def test_readme_recipe_builds_a_wheel_with_the_codecs(built: Built) -> None:
    # kafka-specgen's wheel carries the compiled native decoder, so it is platform-specific.
    (specgen,) = built.wheels.glob("*.whl")
    assert re.fullmatch(r"kafka_specgen-0\.1\.0-cp3\d+-cp3\d+-\w+\.whl", specgen.name), specgen.name
    in_wheel = zipfile.ZipFile(specgen).namelist()
    for module in ("_engine", "_records", "_jsontext"):
        built_modules = [n for n in in_wheel if n.startswith(f"codegen/native/{module}")]
        assert len(built_modules) == 1 and built_modules[0].endswith(".so"), built_modules
    # Its sdist, for every other Python: the engine's C sources and no built module.
    (sdist,) = built.wheels.glob("*.tar.gz")
    assert sdist.name == "kafka_specgen-0.1.0.tar.gz"
    with tarfile.open(sdist) as archive:
        in_sdist = [n.split("/", 1)[1] for n in archive.getnames() if "/" in n]
    assert {
        "codegen/native/engine.c",
        "codegen/native/records.c",
        "codegen/native/jsontext.c",
        "codegen/native/shared.h",
        "codegen/native/wire.h",
        "codegen/native/base64.h",
        "codegen/native/json_values.h",
        "codegen/native/json_plans.h",
        "codegen/native/json_writer.h",
        "codegen/native/table_format.h",
        "codegen/native/tables.h",
        "codegen/native/interpreter.h",
        "codegen/native/table_loader.h",
        "codegen/native/readers.h",
        "codegen/native/column_values.h",
        "codegen/native/columns.h",
        "codegen/native/v2_records.h",
        "codegen/native/crc32c.h",
        "codegen/native/log_entries.h",
        "codegen/native/record_loop.h",
        "codegen/native/record_columns.h",
        "codegen/native/superseded_commits.h",
        "codegen/native/commit_effects.h",
    } <= set(in_sdist)
    assert not [n for n in in_sdist if n.endswith(".so")], in_sdist
    # The pure wheel (SPECGEN_NATIVE_BUILD=skip): any Python, no compiled module.
    (pure,) = built.pure_wheels.glob("*.whl")
    assert pure.name == "kafka_specgen-0.1.0-py3-none-any.whl"
    assert not [n for n in zipfile.ZipFile(pure).namelist() if n.endswith(".so")]
    archive = zipfile.ZipFile(built.wheel)
    names = set(archive.namelist())
    # src/myproject/kafka is git-ignored: the hook names its files for the wheel itself.
    for name in ("__init__.py", "offset_commit_value.py", "py.typed"):
        assert f"myproject/kafka/{name}" in names
    module = archive.read("myproject/kafka/offset_commit_value.py").decode()
    assert "DO NOT EDIT" in module and "class OffsetCommitValue" in module
    metadata = archive.read("myproject-1.0.0.dist-info/METADATA").decode()
    assert re.findall(r"^Requires-Dist: (.*)$", metadata, re.M) == ["kafka-specgen~=0.1.0"]


def test_kafka_specgen_base_distribution_needs_only_the_standard_library(built: Built) -> None:
    (wheel,) = built.wheels.glob("*.whl")
    metadata = zipfile.ZipFile(wheel).read("kafka_specgen-0.1.0.dist-info/METADATA").decode()
    requirements = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    assert requirements and all("; extra ==" in r for r in requirements), requirements
    extras = set(re.findall(r"^Provides-Extra: (.*)$", metadata, re.M))
    assert {"generator", "dumps", "all", "spark"} <= extras


@pytest.fixture(scope="session")
def clean_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv without system site packages, where the README's install line ran with no
    package index: the user's wheel and what it declares."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=venv.parent)
    python = str(venv / "bin" / "python")
    env = _env() | {"PIP_NO_INDEX": "1"}
    _run(_pip(built.install, built.project, python), cwd=built.project, env=env)
    return venv


ROUND_TRIP = """\
import importlib.util
from myproject.kafka.offset_commit_value import OffsetCommitValue
from myproject.kafka import MESSAGES

value = OffsetCommitValue(offset=100, leader_epoch=10, metadata="m", commit_timestamp=1234)
data = value.encode(3)
assert OffsetCommitValue.decode(data, 3) == value
assert MESSAGES["OffsetCommitValue"] is OffsetCommitValue
print(data.hex())
from codegen.runtime import backend
print(backend(), type(OffsetCommitValue.reader(3)).__module__)
print(sorted(m for m in ("jinja2", "jsonschema", "ruff", "click", "crc32c") if importlib.util.find_spec(m)))
"""


def test_user_wheel_runs_in_a_clean_virtualenv(built: Built, clean_venv: Path) -> None:
    python = clean_venv / "bin" / "python"
    lines = _run([str(python), "-c", ROUND_TRIP], cwd=clean_venv).splitlines()
    from generated.offset_commit_value import OffsetCommitValue

    expected = OffsetCommitValue(offset=100, leader_epoch=10, metadata="m", commit_timestamp=1234)
    # The user's codecs read through the engine compiled into kafka-specgen's wheel.
    assert lines == [expected.encode(3).hex(), "native codegen.native._engine", "[]"]
    cfg = (clean_venv / "pyvenv.cfg").read_text()
    assert "include-system-site-packages = false" in cfg


def test_user_sdist_leaves_the_generator_wheels_out(built: Built, tmp_path: Path) -> None:
    """The README's layout keeps kafka-specgen's artifacts beside the project, not in it."""
    args = [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path)]
    _run(args, cwd=built.project, env=os.environ.copy())
    (sdist,) = tmp_path.glob("myproject-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert "myproject-1.0.0/src/myproject/kafka/offset_commit_value.py" in names
    assert not [n for n in names if "kafka_specgen" in n or n.endswith((".whl", ".tar.gz"))], names


# --------------------------------------------------------------------------------------------
# Other CPythons of this machine (pyenv's): the user's wheel, built once on this one, installs
# and reads on each: natively from the sdist, and with the pure wheel where no compiler is.

OTHER_PYTHONS = ["3.12", "3.13"]


def _other_python(version: str) -> Path | None:
    """An interpreter of ``version`` that runs: pyenv's versions, then PATH."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted((root / "versions").glob(f"{version}.*/bin/python{version}"), reverse=True)
    on_path = shutil.which(f"python{version}")
    for python in [*candidates, *([Path(on_path)] if on_path else [])]:
        probe = subprocess.run(
            [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return python
    return None


@pytest.fixture(scope="session")
def build_backend_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hatchling's wheels (pure Python), so building kafka-specgen's sdist needs no index."""
    folder = tmp_path_factory.mktemp("backend")
    args = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--only-binary",
        ":all:",
        "--dest",
        str(folder),
    ]
    _run([*args, "hatchling>=1.25"], cwd=folder)
    return folder


def _venv(python: Path, where: Path) -> str:
    _run([str(python), "-m", "venv", "--without-pip", str(where)], cwd=where.parent)
    return str(where / "bin" / "python")


def _no_compiler_env(tmp_path: Path) -> dict[str, str]:
    """No C compiler on PATH (an empty folder), CC unset."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return {k: v for k, v in _env().items() if k != "CC"} | {"PATH": str(empty)}


@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_user_wheel_reads_natively_on_another_python(
    built: Built, build_backend_wheels: Path, version: str, tmp_path: Path
) -> None:
    """pip finds no kafka-specgen wheel for this Python in ../wheels, builds the sdist (its
    engine compiled by this Python) and the user's codecs read through it."""
    found = _other_python(version)
    if found is None:
        pytest.skip(f"no CPython {version} on this machine (pyenv versions, PATH)")
    python = _venv(found, tmp_path / "venv")
    install = _pip(built.install, built.project, python)
    # No wheel cache: pip would reuse the wheel an earlier test built from the same sdist.
    env = _env() | {"PIP_NO_INDEX": "1", "PIP_NO_CACHE_DIR": "1"}
    _run([*install, "--find-links", str(build_backend_wheels)], cwd=built.project, env=env)
    lines = _run([python, "-c", ROUND_TRIP], cwd=tmp_path).splitlines()
    assert lines[1:] == ["native codegen.native._engine", "[]"], lines
    from generated.offset_commit_value import OffsetCommitValue

    expected = OffsetCommitValue(offset=100, leader_epoch=10, metadata="m", commit_timestamp=1234)
    assert lines[0] == expected.encode(3).hex()
    tag = f"cpython-{version.replace('.', '')}"
    engine = _run([python, "-c", "import codegen.native._engine as e; print(e.__file__)"], tmp_path)
    assert tag in engine, engine


@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_user_wheel_reads_with_the_pure_wheel_where_no_compiler_is(
    built: Built, build_backend_wheels: Path, version: str, tmp_path: Path
) -> None:
    """No compiler on PATH: the README's pure install works and reads with the pure backend;
    building the sdist there falls back to the pure wheel too (on the newest Python only: the
    fallback does not depend on the version, and each build takes a while)."""
    found = _other_python(version)
    if found is None:
        pytest.skip(f"no CPython {version} on this machine (pyenv versions, PATH)")
    env = _no_compiler_env(tmp_path) | {"PIP_NO_INDEX": "1", "PIP_NO_CACHE_DIR": "1"}
    pure_python = _venv(found, tmp_path / "pure")
    _run(_pip(built.pure_install, built.project, pure_python), cwd=built.project, env=env)
    pythons = [pure_python]
    if version == OTHER_PYTHONS[-1]:
        from_sdist = _venv(found, tmp_path / "sdist")
        install = _pip(built.install, built.project, from_sdist)
        _run([*install, "--find-links", str(build_backend_wheels)], cwd=built.project, env=env)
        pythons.append(from_sdist)
    from generated.offset_commit_value import OffsetCommitValue

    expected = OffsetCommitValue(offset=100, leader_epoch=10, metadata="m", commit_timestamp=1234)
    for python in pythons:
        lines = _run([python, "-W", "ignore", "-c", ROUND_TRIP], cwd=tmp_path, env=env).splitlines()
        assert lines == [expected.encode(3).hex(), "pure builtins", "[]"], (python, lines)


def test_generator_command_without_its_extra_says_what_to_install(clean_venv: Path) -> None:
    python = clean_venv / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "codegen", "generate", "--specs", "specs", "--out", "out"],
        cwd=clean_venv,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: python -m codegen generate needs the generator extra: "
        "pip install 'kafka-specgen[generator]' (click is not installed)\n"
    )
    assert not (clean_venv / "out").exists()


TYPED_USER = """\
from codegen.runtime.errors import DecodeError
from generated.offset_commit_value import OffsetCommitValue
from myproject.kafka.offset_commit_value import OffsetCommitValue as Mine

value = OffsetCommitValue.decode(b"", 3)
reveal_type(value)
reveal_type(value.encode(3))
reveal_type(value.offset)
reveal_type(Mine.decode(b"", 3))
reveal_type(OffsetCommitValue.reader(3)(b"", 0))
reveal_type(DecodeError("short").offset)
"""


def test_shipped_codecs_are_typed_for_mypy_strict(clean_venv: Path, tmp_path: Path) -> None:
    """mypy reads the packages installed in the clean virtualenv, as a user's mypy would: a
    package without ``py.typed`` would be an ``import-untyped`` error."""
    (tmp_path / "user.py").write_text(TYPED_USER)
    python = clean_venv / "bin" / "python"
    args = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache")]
    args += ["--python-executable", str(python), "user.py"]
    proc = subprocess.run(args, cwd=tmp_path, env=_env(), capture_output=True, text=True)
    notes = re.findall(r'Revealed type is "(.*)"', proc.stdout)
    assert "error" not in proc.stdout, proc.stdout
    assert notes == [
        "generated.offset_commit_value.OffsetCommitValue",
        "bytes",
        "int",
        "myproject.kafka.offset_commit_value.OffsetCommitValue",
        "tuple[generated.offset_commit_value.OffsetCommitValue, int]",
        "int",
    ], proc.stdout


# --------------------------------------------------------------------------------------------
# The hook in this environment (no isolated build env): fast, for what it reports.

PYPROJECT = """\
[build-system]
requires = ["hatchling", "kafka-specgen[generator]"]
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


def _user_project(tmp_path: Path, spec_text: str | None = SPEC.read_text()) -> Path:
    project = tmp_path / "demo"
    (project / "specs").mkdir(parents=True)
    (project / "src" / "demo_codecs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    if spec_text is not None:
        (project / "specs" / SPEC.name).write_text(spec_text)
    return project


def _pip_wheel_here(project: Path) -> subprocess.CompletedProcess[str]:
    """``pip wheel`` with this environment's hatchling and plugin; PYTHONPATH is kept so the
    hook is this checkout's."""
    args = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", "dist", "."]
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_wheel_of_another_project_contains_generated_codecs(tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    (project / ".gitignore").write_text("/src/demo_codecs/\n")
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
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for name in ("offset_commit_value.py", "__init__.py", "_spark_schemas.py", "py.typed"):
        assert f"demo_codecs/{name}" in names, names
    module = archive.read("demo_codecs/offset_commit_value.py").decode()
    assert "DO NOT EDIT" in module and "class OffsetCommitValue" in module
    metadata = archive.read("demo_kafka_codecs-1.0.0.dist-info/METADATA").decode()
    assert "Requires-Dist: kafka-specgen~=0.1.0" in metadata.splitlines()


def _failed_build_output(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    return output


def test_spec_problems_stop_the_build_one_line_each(tmp_path: Path) -> None:
    text = SPEC.read_text()
    text = text.replace('"type": "int64"', '"type": "int65"', 1)
    text = text.replace('"type": "int32"', '"type": "int33"', 1)
    project = _user_project(tmp_path, text)
    lines = text.splitlines()
    line_of = {t: 1 + next(i for i, ln in enumerate(lines) if t in ln) for t in ("int65", "int33")}
    output = _failed_build_output(_pip_wheel_here(project))
    shown = [ln.strip() for ln in output.splitlines()]
    assert (
        f"specs/OffsetCommitValue.json:{line_of['int65']}: $.fields[0].type: unknown type 'int65'"
        in shown
    )
    assert (
        f"specs/OffsetCommitValue.json:{line_of['int33']}: $.fields[1].type: unknown type 'int33'"
        in shown
    )
    assert "kafka-specgen: 2 problems in the specs; nothing built" in shown
    assert not list((project / "src" / "demo_codecs").iterdir())


def test_missing_specs_path_stops_the_build(tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    shutil.rmtree(project / "specs")
    output = _failed_build_output(_pip_wheel_here(project))
    assert (
        "kafka-specgen: specs path 'specs' does not exist; set specs = \"<folder of your JSON specs>\" "
        "under [tool.hatch.build.hooks.kafka-specgen]"
    ) in output


def test_specs_folder_without_specs_stops_the_build(tmp_path: Path) -> None:
    project = _user_project(tmp_path, spec_text=None)
    (project / "specs" / "README.md").write_text("specs go here\n")
    output = _failed_build_output(_pip_wheel_here(project))
    assert (
        "kafka-specgen: no specs (*.json files) in 'specs'; put your Kafka-style JSON specs there"
        in output
    )
    assert not list((project / "src" / "demo_codecs").iterdir())


HATCHLING_WITHOUT_JINJA2 = """\
import sys
sys.modules["jinja2"] = None
from hatchling.cli import hatchling
sys.argv = ["hatchling", "build", "-t", "wheel"]
hatchling()
"""


def test_build_requirements_without_the_generator_extra_say_what_to_list(tmp_path: Path) -> None:
    project = _user_project(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", HATCHLING_WITHOUT_JINJA2],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    output = _failed_build_output(result)
    assert (
        "the kafka-specgen build hook needs the generator extra: pip install "
        "'kafka-specgen[generator]' (jinja2 is not installed); list it in [build-system]: "
        'requires = ["hatchling", "kafka-specgen[generator]"]'
    ) in output


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


FALLBACK = """\
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from codegen.runtime import NativeFallbackWarning, backend
    from generated.consumer_protocol_subscription import ConsumerProtocolSubscription
    from generated.offset_commit_value import OffsetCommitValue

    value = OffsetCommitValue.decode(OffsetCommitValue(offset=7).encode(3), 3)
    print(backend(), value.offset, type(OffsetCommitValue.reader(3)).__name__)
print([str(w.message) for w in caught if issubclass(w.category, NativeFallbackWarning)])
"""


def test_without_a_compiler_the_wheel_is_pure_python_and_says_so(
    tmp_path: Path, built: Built
) -> None:
    """No C compiler (CC names none): the build warns and makes a pure wheel; reading works
    with the pure backend, which says so once."""
    checkout = built.project.parent / "kafka-specgen"
    env = _env() | {"CC": "no-such-cc"}
    args = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation"]
    args.append("--no-index")
    output = _run([*args, "--wheel-dir", str(tmp_path / "wheels"), str(checkout)], tmp_path, env)
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    assert wheel.name == "kafka_specgen-0.1.0-py3-none-any.whl"
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]
    assert "no C compiler: CC names 'no-such-cc'" in output, output
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = str(venv / "bin" / "python")
    install = [sys.executable, "-m", "pip", "--python", python, "install", "--no-index"]
    _run([*install, "--no-deps", str(wheel)], tmp_path, env)
    lines = _run([python, "-c", FALLBACK], tmp_path).splitlines()
    assert lines[0] == "pure 7 function"
    (message,) = eval(lines[1])
    assert message.startswith(
        "kafka-specgen reads with the pure-Python backend: the native engine is not built"
    )


ON_A_TERMINAL = """\
import os, pty, sys

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # the child closed the terminal
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _pip_wheel_of_checkout(built: Built, out: Path, env: dict[str, str]) -> list[str]:
    checkout = built.project.parent / "kafka-specgen"
    args = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    return [*args, "--wheel-dir", str(out), str(checkout)]


def test_a_failing_compiler_is_shown_then_the_wheel_is_pure(built: Built, tmp_path: Path) -> None:
    """CC=/bin/false: pip, without -v, on a terminal, shows the compiler's command and that the
    wheel is pure Python; the wheel is ``py3-none-any``."""
    env = _env() | {"CC": "/bin/false"}
    pip = _pip_wheel_of_checkout(built, tmp_path / "wheels", env)
    output = _run([sys.executable, "-c", ON_A_TERMINAL, *pip], tmp_path, env)
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    assert wheel.name == "kafka_specgen-0.1.0-py3-none-any.whl"
    # pip's spinner may share the first line.
    warnings = [ln[ln.index("WARNING: ") :] for ln in output.splitlines() if "WARNING: " in ln]
    assert re.match(
        r"WARNING: kafka-specgen: compiling engine\.c failed with exit status 1: /bin/false -\S+ .* -shared -I \S+ \S+/codegen/native/engine\.c -o \S+_engine\.\S+\.so\r?$",
        warnings[0],
    ), output
    assert warnings[1].strip() == "WARNING: (the compiler printed nothing)", output
    assert warnings[2].startswith(
        "WARNING: kafka-specgen: building a pure-Python wheel instead: it reads messages with "
        "the pure-Python backend (same results, 3-6x slower); set SPECGEN_NATIVE_BUILD=required"
    ), output


def test_a_failing_compiler_shows_its_output_and_stops_a_required_build(
    built: Built, tmp_path: Path
) -> None:
    """SPECGEN_NATIVE_BUILD=required: the compiler's own error output, then a clear stop."""
    broken = tmp_path / "cc"
    broken.write_text(
        "#!/bin/sh\necho 'cc: fatal error: no licence for this compiler' >&2\nexit 4\n"
    )
    broken.chmod(0o755)
    env = _env() | {"CC": str(broken), "SPECGEN_NATIVE_BUILD": "required"}
    pip = _pip_wheel_of_checkout(built, tmp_path / "wheels", env)
    proc = subprocess.run(pip, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    output = _failed_build_output(proc)
    shown = [ln.strip() for ln in output.splitlines()]
    assert any(
        ln.startswith(f"kafka-specgen: compiling engine.c failed with exit status 4: {broken} ")
        for ln in shown
    ), output
    assert "cc: fatal error: no licence for this compiler" in shown
    assert (
        "kafka-specgen: SPECGEN_NATIVE_BUILD=required, so the build stops; fix the compiler "
        "(or CC), or unset SPECGEN_NATIVE_BUILD to build a pure-Python wheel"
    ) in shown
    assert not (tmp_path / "wheels").exists() or not list((tmp_path / "wheels").iterdir())


def test_an_unknown_native_build_mode_stops_the_build(built: Built, tmp_path: Path) -> None:
    env = _env() | {"SPECGEN_NATIVE_BUILD": "yes"}
    pip = _pip_wheel_of_checkout(built, tmp_path / "wheels", env)
    proc = subprocess.run(pip, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert (
        "kafka-specgen: SPECGEN_NATIVE_BUILD='yes' is not one of auto, required, skip"
        in _failed_build_output(proc)
    )
