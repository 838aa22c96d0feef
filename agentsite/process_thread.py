"""A daemon thread each process runs one of, started on first use."""

from __future__ import annotations

import os
import threading
from typing import Any, ClassVar, Self


class OnePerProcess(threading.Thread):
    """``of_this_process()`` gives this process's one instance of the subclass, started.
    A forked child (a Celery prefork child) starts its own: the parent's thread did not
    come with the fork."""

    _current: ClassVar[Any] = None
    _current_lock: ClassVar[threading.Lock]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._current, cls._current_lock = None, threading.Lock()  # one per subclass

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.pid = os.getpid()

    @classmethod
    def of_this_process(cls) -> Self:
        with cls._current_lock:
            if cls._current is None or cls._current.pid != os.getpid():
                cls._current = cls()
                cls._current.start()
            return cls._current
