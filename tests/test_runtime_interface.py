"""The runtime's interface to generated code: exactly the names of ``codegen.runtime.generated_api``.

The shipped package and the tagged-fields golden package (together they hold every construct
the templates write) use every listed name and no other name of the runtime; the templates name
nothing else either (a construct no spec of these two uses would still be caught here).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import codegen.runtime.generated_api as api

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (ROOT / "generated", ROOT / "tests" / "golden" / "tagged_demo")
TEMPLATES = ROOT / "codegen" / "templates"
RUNTIME_ALIAS = "_rt"


def _runtime_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names used of the runtime, runtime modules imported) by one generated module."""
    names: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("codegen"):
            for alias in node.names:
                if node.module == "codegen.runtime" and alias.name == "generated_api":
                    modules.add("codegen.runtime.generated_api")
                else:
                    modules.add(node.module)
                    names.add(alias.name)
        elif isinstance(node, ast.Import):
            modules.update(a.name for a in node.names if a.name.startswith("codegen"))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == RUNTIME_ALIAS
        ):
            names.add(node.attr)
    return names, modules


def test_generated_code_uses_exactly_the_declared_names() -> None:
    used: set[str] = set()
    for package in PACKAGES:
        for path in sorted(package.glob("*.py")):
            names, modules = _runtime_names(ast.parse(path.read_text(encoding="utf-8")))
            assert modules <= {"codegen.runtime.generated_api"}, (path.name, modules)
            undeclared = names - set(api.__all__)
            assert not undeclared, (
                f"{path.name} uses runtime names not in generated_api: {undeclared}"
            )
            used |= names
    assert used == set(api.__all__), f"declared but never used: {set(api.__all__) - used}"


def test_templates_name_only_declared_names() -> None:
    attribute = re.compile(rf"\b{RUNTIME_ALIAS}\.([A-Za-z_][A-Za-z_0-9]*)")
    imported = re.compile(r"from codegen\.runtime\.generated_api import (\w+)")
    for path in sorted(TEMPLATES.glob("*.j2")):
        text = path.read_text(encoding="utf-8")
        assert "from codegen import runtime" not in text, path.name
        named = set(attribute.findall(text)) | set(imported.findall(text))
        assert named <= set(api.__all__), (path.name, named - set(api.__all__))
        for line in text.splitlines():
            if line.startswith("from codegen") or line.lstrip().startswith("from codegen"):
                assert "codegen.runtime.generated_api" in line or line.strip().endswith(
                    "import generated_api as _rt"
                ), (path.name, line)


def test_every_declared_name_is_defined() -> None:
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing
    assert len(set(api.__all__)) == len(api.__all__)
