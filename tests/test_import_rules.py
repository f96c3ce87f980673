"""The dependency rules of shared/DESIGN.md ("Layout"), read from the source: every import of every
module, the ones inside functions (lazy imports) included.

`dumpcmp.cli` → agent, host, fakes → acl_config, proto → dumpcmp.errors; agent and host never
import each other (they share only proto); fakes may use proto and acl_config; agent reaches
fakes only through its runtime interface, never by an import; errors is a leaf. ``outputs`` and
``printable`` are small leaves every layer may use (atomic output files, printable names).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dumpcmp"
LEAVES = {"errors", "outputs", "printable"}  # the shared leaves below every layer
# What each part of the package may import of ours, besides itself.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "outputs": {"errors"},
    "printable": {"errors"},
    "proto": {"errors", "outputs", "printable"},
    "acl_config": LEAVES,
    "agent": LEAVES | {"proto", "acl_config", "(package)"},  # (package): dumpcmp.__version__
    "host": LEAVES | {"proto", "acl_config"},
    "fakes": LEAVES | {"proto", "acl_config"},
}


def _part(module: str) -> str:
    """The part of the package ``module`` (dotted, from ``dumpcmp``) belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(package)"


def _imports(path: Path) -> set[str]:
    """Every module of ours that ``path`` imports, anywhere in it."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(source: str, package: str) -> set[str]:
    """Every module of ours that ``source``, a module of ``package``, imports anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against the module's own package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
    return {name for name in found if name == "dumpcmp" or name.startswith("dumpcmp.")}


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_gen" not in p.parts)


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_imports_only_what_the_design_allows(part: str) -> None:
    broken = []
    for path in _sources():
        here = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if _part(here) != part and not (part in LEAVES and path.stem == part and path.parent == PACKAGE):
            continue
        for name in sorted(_imports(path)):
            target = _part(name)
            if target != part and target not in ALLOWED[part]:
                broken.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert not broken, "\n".join(broken)


def test_the_rules_see_lazy_and_relative_imports() -> None:
    # The check itself: an import inside a function, and a relative one, are both found.
    source = "import json\ndef f() -> None:\n    from ..host import verdict\n    import dumpcmp.fakes.npu\n"
    assert _imports_in(source, "dumpcmp.agent") == {"dumpcmp.host", "dumpcmp.fakes.npu"}
    assert any(name.startswith("dumpcmp.proto") for name in _imports(PACKAGE / "agent" / "uploader.py"))
