"""What a task costs the consuming process in the broker's Redis transport, with and
without kombu's ack emulation (issue 37), interleaved in one sitting.

Each round puts ``--messages`` messages of a `dev` segment task's size on a queue of its
own, then takes and acknowledges each the way a Celery worker does (kombu, the settings'
broker URL), once with ``ack_emulation`` on (kombu's default) and once off (ours,
``CELERY_BROKER_TRANSPORT_OPTIONS``). Prints the CPU time of this process per message
taken and acknowledged.

Usage: python bench/broker.py [--messages 2000] [--rounds 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from agentsite import embedded  # noqa: E402

embedded.ensure_env(os.environ)  # the embedded servers for a URL not given, as make run

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from kombu import Connection  # noqa: E402

from bench._services import load  # noqa: E402

# About a segment task's message (id, args, headers): what the emulation copies per task.
BODY = {"task": "execution.run_execute", "id": str(uuid.uuid4()),
        "args": [str(uuid.uuid4()), 3], "kwargs": {}, "headers": {"x": "y" * 600}}


def one_round(ack_emulation: bool, messages: int) -> float:
    """This process's CPU µs per message taken and acknowledged."""
    queue = f"agentsite-bench-broker-{uuid.uuid4().hex[:8]}"
    options = {"ack_emulation": ack_emulation}
    with Connection(settings.CELERY_BROKER_URL, transport_options=options) as conn:
        simple = conn.SimpleQueue(queue)
        for _ in range(messages):
            simple.put(BODY)
        cpu = time.process_time()
        for _ in range(messages):
            simple.get(timeout=5).ack()
        cpu = time.process_time() - cpu
        simple.queue.delete()
        simple.close()
    return cpu / messages * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    print(load())
    one_round(False, 200)  # warm up both paths
    one_round(True, 200)
    seen: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for emulation in (True, False):
            seen[emulation].append(one_round(emulation, args.messages))
    for emulation, ours in seen.items():
        print(f"ack_emulation={emulation!s:5}: {statistics.median(ours):6.0f} µs CPU per "
              f"task taken and acknowledged (rounds: {', '.join(f'{v:.0f}' for v in ours)})")
    print(load())


if __name__ == "__main__":
    main()
