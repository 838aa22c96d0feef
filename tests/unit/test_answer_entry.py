"""One answer entry point: every surface answers interrupts through
``execution.lifecycle.interrupts_answer``; the decision rules (``hitl.decide``) have no
other caller in the product, so no surface can skip the cancel-instead-of-decline rule."""

from __future__ import annotations

from tests.unit.test_layers import imported, modules

RULES = "hitl.decide.interrupts_decide"


def test_only_the_entry_point_reaches_the_decision_rules() -> None:
    callers = {module for module, path in modules()
               if any(target == RULES for _, target in imported(path, module))}
    assert callers == {"execution.lifecycle"}
