"""Dependencies run one way: no module depends on a module of a higher layer.

A dependency is every ``import`` statement (function-local ones included), every
``import_module("…")`` string, and every Celery task sent by name (``send_task("…")``,
``signature("…")``): the task's module is what the sender runs. A module's layer is that
of the longest prefix listed in LAYERS (or its exact entry in EXACT); docs/architecture.md
draws them. Settings' dotted paths (apps, middleware, URLconf, classes, agent modules, beat
tasks) must name modules and tasks that exist, in packages the table knows. A top-level
package the table does not know fails the test. Migrations (history) and tests are not
layered.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom → top. A module may import its own layer and every layer below.
LAYERS: list[tuple[str, list[str]]] = [
    ("infrastructure", ["agentsite", "streams.keys", "streams.db", "streams.publish",
                        "streams.pubsub", "streams.storage", "streams.access",
                        # What every layer records with: metrics, log context, prices.
                        "observability.metrics", "observability.logs",
                        "observability.prices", "observability.model_calls",
                        "observability.celery_hooks", "observability.tracing",
                        "observability.model_http"]),
    ("runs", ["runs", "workspace"]),
    ("hitl", ["hitl"]),
    ("protocol", ["agui.events", "agui.mapper", "agui.outcomes", "agui.open_state"]),
    ("execution", ["execution"]),
    ("delivery", ["agui", "streams", "lgapi"]),
    ("surfaces", ["api", "pages", "runs.admin", "hitl.admin", "hitl.policy_admin",
                  "hitl.card_answer", "workspace.admin", "workspace.api", "runs.management",
                  # /metrics, its state gauges, the admin's Insights page.
                  "observability"]),
    ("agents", ["agents"]),
    # What a deployment configures and starts: settings, the Celery app, the URLconf, the
    # ASGI / WSGI entry points, the launcher and process starters, manage.py.
    ("config", ["agentsite.settings", "agentsite.celery", "agentsite.urls", "agentsite.asgi",
                "agentsite.wsgi", "agentsite.launch", "agentsite.processes", "manage"]),
]
# Modules placed exactly, not by prefix: the project package's __init__ loads the Celery app
# (Celery's Django pattern), so it is configuration, unlike the modules below it.
EXACT = {"agentsite": "config"}
PACKAGES = ("agentsite", "runs", "hitl", "agui", "streams", "execution", "api", "pages",
            "workspace", "agents", "lgapi", "observability")
# Packages whose modules sit in two layers, and why (docs/architecture.md, "Packages that
# span two layers"); every other package sits in one.
SPANS = {
    "agentsite": {"infrastructure", "config"},  # Django and Celery want config here
    "streams": {"infrastructure", "delivery"},  # the event log and the doors streaming it
    "agui": {"protocol", "delivery"},  # the AG-UI vocabulary and its HTTP door
    # Django apps with their admin, commands and card posts where Django looks for them.
    "runs": {"runs", "surfaces"},
    "hitl": {"hitl", "surfaces"},
    "workspace": {"runs", "surfaces"},
    # What every layer records with, and the surfaces that read it (/metrics, Insights).
    "observability": {"infrastructure", "surfaces"},
}
# Top-level directories that hold Python but are not layered.
NOT_LAYERED = ("tests", "bench")
# Tasks a lower layer may enqueue by name although they run in a higher one: a message on
# commit, never an import or a call (the sender loads no code of that layer).
ENQUEUED_UPWARD = {
    # run_start and run_resume (an answer that completes the questions) hand a run's next
    # segment to the Celery worker (runs.services.run_enqueue): the one entry point of
    # execution.
    "runs.tasks.run_execute": "services enqueue the worker's segment task on commit",
}


def layer_of(module: str) -> int | None:
    if module in EXACT:
        return [name for name, _ in LAYERS].index(EXACT[module])
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return best[1] if best else None


def modules() -> list[tuple[str, Path]]:
    found = [("manage", ROOT / "manage.py")]
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, path))
    return found


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _package(path: Path, module: str) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _from_base(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def imported(path: Path, module: str, tree: ast.Module | None = None) -> list[tuple[int, str]]:
    tree = tree or _tree(path)
    package = _package(path, module)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            # `from pkg import name` may import the submodule pkg.name.
            out += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and _call_name(node) == "import_module" and node.args:
            if isinstance(target := node.args[0], ast.Constant) and isinstance(target.value, str):
                out.append((node.lineno, target.value))
    return out


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")


# --- Celery tasks by name ----------------------------------------------------------

def constants() -> dict[str, str]:
    """``module.NAME`` → value of every module-level string constant of ours."""
    found = {}
    for module, path in modules():
        for node in _tree(path).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found[f"{module}.{target.id}"] = node.value.value
    return found


def _string(node: ast.expr, path: Path, module: str, tree: ast.Module,
            known: dict[str, str]) -> str | None:
    """A string literal, or a constant of ours it names (``NAME``, ``mod.NAME``)."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    bound = {}  # local name → what it stands for
    package = _package(path, module)
    for item in ast.walk(tree):
        if isinstance(item, ast.ImportFrom):
            base = _from_base(item, package)
            bound |= {a.asname or a.name: f"{base}.{a.name}" for a in item.names}
        elif isinstance(item, ast.Import):
            bound |= {a.asname or a.name: a.name for a in item.names}
    if isinstance(node, ast.Name):
        return known.get(f"{module}.{node.id}") or known.get(bound.get(node.id, ""))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return known.get(f"{bound.get(node.value.id, node.value.id)}.{node.attr}")
    return None


TASK_DECORATORS = ("shared_task", "task")
SENDERS = ("send_task", "signature")


def task_modules(known: dict[str, str] | None = None) -> dict[str, str]:
    """Celery task name → the module of ours that defines it."""
    known = constants() if known is None else known
    found = {}
    for module, path in modules():
        tree = _tree(path)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                name = (_call_name(call) if call else
                        deco.id if isinstance(deco, ast.Name) else
                        deco.attr if isinstance(deco, ast.Attribute) else "")
                if name not in TASK_DECORATORS:
                    continue
                given = [k.value for k in (call.keywords if call else []) if k.arg == "name"]
                task = (_string(given[0], path, module, tree, known) if given
                        else f"{module}.{node.name}")
                assert task, f"{path}:{node.lineno}: a task name the check cannot read"
                found[task] = module
    return found


def tasks_sent(path: Path, module: str, known: dict[str, str],
               tree: ast.Module | None = None) -> list[tuple[int, str]]:
    """(line, task name) of every task this module sends by name."""
    tree = tree or _tree(path)
    # A helper that sends whatever name it is given (hitl.notify.send_task): its callers'
    # names are what count, and they are checked where they call it.
    params = {a.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
              for a in (*node.posonlyargs, *node.args, *node.kwonlyargs)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in SENDERS and node.args:
            if isinstance(node.args[0], ast.Name) and node.args[0].id in params:
                continue
            task = _string(node.args[0], path, module, tree, known)
            assert task, f"{path}:{node.lineno}: a task sent by a name the check cannot read"
            out.append((node.lineno, task))
    return out


def violations() -> list[str]:
    known = constants()
    tasks = task_modules(known)
    found = []
    for module, path in modules():
        own = layer_of(module)
        assert own is not None, f"{module} is in no layer: add it to LAYERS"
        tree = _tree(path)
        edges = [(line, target, "imports") for line, target in imported(path, module, tree)]
        for line, task in tasks_sent(path, module, known, tree):
            if task not in tasks:
                found.append(f"{path.relative_to(ROOT)}:{line}: sends unknown task {task!r}")
            elif task not in ENQUEUED_UPWARD:
                edges.append((line, tasks[task], f"sends task {task!r} of"))
        for line, target, how in edges:
            other = layer_of(target)
            if other is not None and other > own:
                found.append(f"{path.relative_to(ROOT)}:{line}: {module} ({LAYERS[own][0]}) "
                             f"{how} {target} ({LAYERS[other][0]})")
    return found


# --- Settings' dotted paths and unknown packages --------------------------------------

def _exists(dotted: str) -> bool:
    """A module of ours, or a name its module defines at top level (read, not imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        file = base.with_suffix(".py") if base.with_suffix(".py").is_file() else (
            base / "__init__.py")
        if file.is_file():
            if cut == len(parts):
                return True
            defined = set()
            for node in _tree(file).body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defined.add(node.name)
                elif isinstance(node, ast.Assign):
                    defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
            return parts[cut] in defined
    return False


def _python_dirs() -> set[str]:
    return {p.name for p in ROOT.iterdir()
            if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.py"))}


def settings_paths(path: Path = ROOT / "agentsite" / "settings.py") -> list[tuple[int, str]]:
    """(line, string) of every string in settings that names something of ours: its first
    dotted part is a top-level directory of the project."""
    tops = _python_dirs()
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.split(".")[0] in tops and all(p.isidentifier() for p in text.split(".")):
                out.append((node.lineno, text))
    return out


def settings_problems(path: Path = ROOT / "agentsite" / "settings.py") -> list[str]:
    tasks = task_modules()
    problems = []
    for line, text in settings_paths(path):
        if text.split(".")[0] not in PACKAGES:
            problems.append(f"settings:{line}: {text!r} is in no known package")
        elif not _exists(text) and text not in tasks:
            problems.append(f"settings:{line}: {text!r} names no module or task of ours")
    for line, task in beat_tasks(path):
        if task not in tasks:
            problems.append(f"settings:{line}: beat sends unknown task {task!r}")
    return problems


def beat_tasks(path: Path = ROOT / "agentsite" / "settings.py") -> list[tuple[int, str]]:
    """(line, task name) of CELERY_BEAT_SCHEDULE's entries."""
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (isinstance(key, ast.Constant) and key.value == "task"
                        and isinstance(value, ast.Constant)):
                    out.append((value.lineno, value.value))
    return out


def unknown_packages() -> list[str]:
    """Top-level directories with Python in them that the layer table does not know."""
    skip = {"migrations", "node_modules"}
    found = []
    for entry in sorted(ROOT.iterdir()):
        if (entry.is_dir() and not entry.name.startswith((".", "_")) and entry.name not in skip
                and entry.name not in (*PACKAGES, *NOT_LAYERED)
                and any(entry.rglob("*.py"))):
            found.append(entry.name)
    return found


def test_no_module_imports_a_higher_layer() -> None:
    problems = violations()
    assert not problems, "upward imports:\n" + "\n".join(problems)


@pytest.mark.parametrize(("module", "layer"), [
    ("agentsite.settings", "config"), ("agentsite.urls", "config"),
    ("agentsite.celery", "config"), ("agentsite.asgi", "config"), ("agentsite", "config"),
    ("agentsite.embedded", "infrastructure"), ("manage", "config"),
    ("streams.publish", "infrastructure"), ("streams.sse", "delivery"),
    ("streams.eventstream", "delivery"), ("streams.follow", "delivery"),
    ("agui.outcomes", "protocol"), ("agui.open_state", "protocol"), ("agui.views", "delivery"),
    ("lgapi.views", "delivery"),
    ("execution.stream_modes", "execution"),
    ("execution.lifecycle", "execution"), ("hitl.selectors", "hitl"),
    ("hitl.admin", "surfaces"), ("hitl.admin.decide", "surfaces"), ("agents.dev", "agents"),
])
def test_layer_table(module: str, layer: str) -> None:
    assert LAYERS[layer_of(module)][0] == layer


def layers_by_package() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for module, _ in modules():
        layer = layer_of(module)
        if layer is not None:
            found.setdefault(module.split(".")[0], set()).add(LAYERS[layer][0])
    return found


def test_only_the_named_packages_span_two_layers() -> None:
    """A package that starts spanning another layer (or stops) is told here: name it in
    SPANS and in docs/architecture.md, or move the module."""
    spanning = {p: layers for p, layers in layers_by_package().items() if len(layers) > 1}
    assert spanning == SPANS


def test_the_check_catches_an_upward_import(tmp_path: Path) -> None:
    # The check itself can fail: a runs module importing execution is reported.
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from execution.lifecycle import run_claim\n")
    targets = [t for _, t in imported(bad, "runs.bad")]
    assert targets == ["execution.lifecycle.run_claim"]
    assert layer_of(targets[0]) > layer_of("runs.bad")


def test_settings_name_only_what_exists_in_known_packages() -> None:
    assert settings_paths(), "the check found no dotted path in settings"
    assert {"agentsite.urls", "runs", "hitl"} <= {text for _, text in settings_paths()}
    problems = settings_problems()
    assert not problems, "\n".join(problems)


def test_every_top_level_package_is_layered() -> None:
    assert unknown_packages() == [], "add these to PACKAGES and LAYERS (or NOT_LAYERED)"


def test_tasks_are_found_by_name() -> None:
    tasks = task_modules()
    assert tasks["runs.tasks.run_execute"] == "execution.tasks"
    assert {"hitl.sweep", "execution.checkpoints_prune"} <= set(tasks)
    assert {task for _, task in beat_tasks()} <= set(tasks)


# --- Each new check catches a planted violation ------------------------------------------

def _plant(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def test_the_check_catches_an_import_module_string(tmp_path: Path) -> None:
    bad = _plant(tmp_path, "bad.py", "import importlib\n"
                 "def f():\n    return importlib.import_module('execution.tasks')\n")
    targets = [t for _, t in imported(bad, "runs.bad")]
    assert "execution.tasks" in targets and layer_of("execution.tasks") > layer_of("runs.bad")


def test_the_check_catches_a_task_sent_upward(tmp_path: Path) -> None:
    known = {"hitl.notify.NOTIFY_TASK": "hitl.notify", **constants()}
    bad = _plant(tmp_path, "bad.py", "from agentsite.celery import app\n"
                 "from hitl import notify\nLOCAL = 'hitl.sweep'\n"
                 "def f():\n    app.send_task(notify.NOTIFY_TASK)\n"
                 "    app.send_task(LOCAL)\n    app.signature('execution.checkpoints_prune')\n")
    known["runs.bad.LOCAL"] = "hitl.sweep"
    sent = [task for _, task in tasks_sent(bad, "runs.bad", known)]
    assert sent == ["hitl.notify", "hitl.sweep", "execution.checkpoints_prune"]
    tasks = task_modules()
    assert all(layer_of(tasks[t]) > layer_of("runs.bad") for t in sent)
    # ... and a lower layer importing the Celery app reaches into config.
    assert layer_of("agentsite.celery.app") > layer_of("runs.bad")


def test_the_check_catches_a_bad_settings_path(tmp_path: Path) -> None:
    bad = _plant(tmp_path, "settings.py",
                 "INSTALLED_APPS = ['django.contrib.admin', 'runs', 'tests']\n"
                 "ROOT_URLCONF = 'agentsite.nourls'\n"
                 "X_CLASS = 'streams.storage.NoSuchClass'\n"
                 "CELERY_BEAT_SCHEDULE = {'x': {'task': 'hitl.no_such_task', 'schedule': 1}}\n")
    problems = "\n".join(settings_problems(bad))
    assert "'tests' is in no known package" in problems
    assert "'agentsite.nourls' names no module" in problems
    assert "unknown task 'hitl.no_such_task'" in problems
    assert "'streams.storage.NoSuchClass' names no module" in problems
    assert "django.contrib" not in problems and "'runs'" not in problems


def test_the_check_catches_an_unknown_package(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "newpkg").mkdir()
    (tmp_path / "newpkg" / "__init__.py").write_text("")
    (tmp_path / "templates").mkdir()
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert unknown_packages() == ["newpkg"]
