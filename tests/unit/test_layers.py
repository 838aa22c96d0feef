"""Dependencies run one way: no module imports a module of a higher layer.

Every ``import`` statement counts, function-local ones included. A module's layer is
that of the longest prefix listed in LAYERS; the README's Layout section draws them.
Migrations (history) and tests are not layered.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom → top. A module may import its own layer and every layer below.
LAYERS: list[tuple[str, list[str]]] = [
    ("infrastructure", ["agentsite", "streams.keys", "streams.db", "streams.publish",
                        "streams.pubsub", "streams.storage"]),
    ("runs", ["runs", "workspace"]),
    ("hitl", ["hitl"]),
    ("protocol", ["agui.events", "agui.mapper", "agui.outcomes"]),
    ("execution", ["execution"]),
    ("delivery", ["agui", "streams"]),
    ("surfaces", ["api", "pages", "runs.admin", "hitl.admin", "hitl.policy_admin",
                  "workspace.admin", "workspace.api", "runs.management", "agentsite.urls",
                  "agentsite.asgi", "agentsite.wsgi", "agentsite.launch"]),
    ("agents", ["agents"]),
]
PACKAGES = ("agentsite", "runs", "hitl", "agui", "streams", "execution", "api", "pages",
            "workspace", "agents")


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return best[1] if best else None


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


def imported(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import name` may import the submodule pkg.name.
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return out


def violations() -> list[str]:
    found = []
    for module, path in modules():
        own = layer_of(module)
        assert own is not None, f"{module} is in no layer: add it to LAYERS"
        for line, target in imported(path, module):
            other = layer_of(target)
            if other is not None and other > own:
                found.append(f"{path.relative_to(ROOT)}:{line}: {module} ({LAYERS[own][0]}) "
                             f"imports {target} ({LAYERS[other][0]})")
    return found


def test_no_module_imports_a_higher_layer() -> None:
    problems = violations()
    assert not problems, "upward imports:\n" + "\n".join(problems)


@pytest.mark.parametrize(("module", "layer"), [
    ("agentsite.settings", "infrastructure"), ("agentsite.urls", "surfaces"),
    ("streams.publish", "infrastructure"), ("streams.sse", "delivery"),
    ("agui.outcomes", "protocol"), ("agui.views", "delivery"),
    ("execution.lifecycle", "execution"), ("hitl.selectors", "hitl"),
    ("hitl.admin", "surfaces"), ("agents.dev", "agents"),
])
def test_layer_table(module: str, layer: str) -> None:
    assert LAYERS[layer_of(module)][0] == layer


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    # The check itself can fail: a runs module importing execution is reported.
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from execution.lifecycle import run_claim\n")
    targets = [t for _, t in imported(bad, "runs.bad")]
    assert targets == ["execution.lifecycle.run_claim"]
    assert layer_of(targets[0]) > layer_of("runs.bad")
