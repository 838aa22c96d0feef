"""What a task costs the broker in the worker, counted (issue 37): no Redis ack emulation.

kombu's ack emulation wrote every delivered message into an "unacked" hash and index on
delivery and removed it on the ack (two MULTI pipelines per task, each on a new redis-py
client). Postgres is our record of owed work (the reaper resends it,
``docs/failure-model.md``), so it is off: a task is one ``BRPOP`` answered, nothing more.
"""

from __future__ import annotations

from collections import Counter

from tests.helpers import FINAL, answer_and_wait, start_run, wait_run
from tests.redis_monitor import RedisMonitor

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def test_a_full_dev_run_writes_no_unacked_bookkeeping(api) -> None:
    owner = api("owner")
    with RedisMonitor() as watch:
        run = wait_run(owner, start_run(owner, input={"topic": "broker"})["id"], "paused")
        for payload in ANSWERS:
            run = answer_and_wait(owner, run, payload)
        assert run["status"] == "completed"
        watch.mark("run")
    commands = watch.spans["run"].commands
    bookkeeping = Counter(c.name for c in commands
                          if any("unacked" in arg for arg in c.args[:1]))
    transactions = Counter(c.name for c in commands if c.name in ("MULTI", "EXEC", "WATCH"))
    print(f"\n{len(commands)} commands in all; unacked bookkeeping {dict(bookkeeping)}; "
          f"MULTI / EXEC {dict(transactions)}")
    # Six tasks (a start, four answers, the notifications) went through the broker.
    assert sum(1 for c in commands if c.name == "LPUSH") >= 6
    assert not bookkeeping, bookkeeping
    assert run["status"] in FINAL
