#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    # Settings start nothing: with no DATABASE_URL / REDIS_URL, a developer's command runs
    # on the embedded servers (started here, or found running), as `make run` does.
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        from agentsite import embedded

        embedded.ensure_env()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
