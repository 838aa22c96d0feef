"""``builder`` (and ``initial_state``) must be dotted path strings: every process loads
the agent catalog, but only the worker imports graph code, by that path. A function
given instead is refused when the catalog loads, naming the agent and saying why, and
``manage.py check`` (run by ``migrate`` when the site starts) reports it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from runs.registry import Agent, AgentPathError

ROOT = Path(__file__).resolve().parents[2]


class NoInput(BaseModel):
    pass


def build() -> None:
    """Stands for a graph factory."""


def _agent(**paths: object) -> Agent:
    fields = {"builder": "myagents.graphs.build", "initial_state": "myagents.graphs.state",
              **paths}
    return Agent(name="mailer", version="1", description="d", input_model=NoInput,
                 **fields)  # type: ignore[arg-type]


def test_a_function_is_refused_naming_the_agent_and_why():
    with pytest.raises(AgentPathError) as refused:
        _agent(builder=build)
    message = str(refused.value)
    assert "agent 'mailer'" in message and "builder must be a dotted path string" in message
    # It names the path to write instead, and why a path.
    assert f"'{__name__}.build'" in message, message
    assert "only the worker imports builder" in message and "never import graph code" in message


@pytest.mark.parametrize("value", [None, "", "build", 42])
def test_not_a_dotted_path_is_refused(value):
    with pytest.raises(AgentPathError, match="agent 'mailer': initial_state must be"):
        _agent(initial_state=value)


def test_manage_check_reports_it_at_startup():
    env = {**os.environ, "AGENTSITE_AGENT_MODULES": "tests.function_builder_catalog",
           "DATABASE_URL": "postgresql://u@db.invalid/app", "REDIS_URL": "redis://r.invalid/0",
           "DJANGO_SETTINGS_MODULE": "agentsite.settings", "SECRET_KEY": "x" * 50}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "agentsite.E001" in done.stderr, done.stderr
    assert "agent 'mailer': builder must be a dotted path string" in done.stderr, done.stderr
    assert "'tests.function_builder_catalog.build'" in done.stderr, done.stderr
