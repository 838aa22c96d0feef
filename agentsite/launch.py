"""`make run`: embedded services if needed, migrate, demo user, web + worker; Ctrl-C stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from agentsite import embedded


def main() -> int:
    env = dict(os.environ)
    if not env.get("DATABASE_URL"):
        env["DATABASE_URL"] = embedded.ensure_postgres()
        env["AGENTSITE_EMBEDDED"] = "1"
        print(f"embedded Postgres: {env['DATABASE_URL']}  (data in {embedded.PG_DIR})")
    if not env.get("REDIS_URL"):
        env["REDIS_URL"] = embedded.ensure_redis()
        print(f"embedded Redis:    {env['REDIS_URL']}  (data in {embedded.REDIS_DIR})")
    py = sys.executable
    host, port = env.get("HOST", "127.0.0.1"), env.get("PORT", "8000")

    def manage(*args: str) -> None:
        subprocess.run([py, "manage.py", *args], env=env, check=True)

    manage("migrate", "--noinput")
    manage("collectstatic", "--noinput", "-v", "0")
    manage("ensure_demo_user")

    children = [
        subprocess.Popen([py, "-m", "uvicorn", "agentsite.asgi:application", "--host", host,
                          "--port", port, "--no-access-log"], env=env),
        subprocess.Popen([py, "-m", "celery", "-A", "agentsite", "worker", "--loglevel", "INFO",
                          "--concurrency", env.get("WORKER_CONCURRENCY", "2")], env=env),
    ]
    print(f"\nagentsite is up: http://{host}:{port}/admin/  ·  API: http://{host}:{port}/api/"
          "\nCtrl-C stops web, worker and the embedded services.\n", flush=True)

    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    code = 0
    while not stopping:
        for child in children:
            if child.poll() is not None:
                print(f"{child.args[2]} exited with {child.returncode}; stopping the rest")
                code, stopping = child.returncode or 1, True
        time.sleep(0.3)

    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
    embedded.stop_started()
    print("stopped.")
    return code


if __name__ == "__main__":
    sys.exit(main())
