import uuid

import redis
from django.conf import settings
from django.core.management.base import BaseCommand

from runs.models import AgentRun
from streams.keys import EVENT_TTL_SECONDS, counter_key, run_channel

_PREFIX = counter_key(run_channel(""))  # "agentsite:event-counter:run-"


class Command(BaseCommand):
    help = ("Let the event counters of ended runs expire with their events, as runs that "
            "end now do: those kept by an older version, or of a run that ended while "
            "Redis was unreachable.")

    def handle(self, *args, **options) -> None:
        r = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)
        ids = {}
        for chunk in _chunks(list(r.scan_iter(match=f"{_PREFIX}*", count=1000)), 1000):
            with r.pipeline(transaction=False) as pipe:
                for key in chunk:
                    pipe.ttl(key)
                ttls = pipe.execute()
            for key, ttl in zip(chunk, ttls, strict=True):
                if ttl != -1:
                    continue  # expiring already
                try:
                    ids[uuid.UUID(key.decode()[len(_PREFIX):])] = key
                except ValueError:
                    continue  # not a run's channel
        # Only runs this database knows as ended: a paused run's ids must go on, and an
        # unknown id may be another deployment's sharing this Redis.
        ended = [pk for chunk in _chunks(list(ids), 1000) for pk in AgentRun.objects.filter(
            pk__in=chunk, status__in=AgentRun.FINISHED).values_list("pk", flat=True)]
        with r.pipeline(transaction=False) as pipe:
            for pk in ended:
                pipe.expire(ids[pk], EVENT_TTL_SECONDS)
            pipe.execute()
        self.stdout.write(f"{len(ended)} counters of ended runs now expire in "
                          f"{EVENT_TTL_SECONDS // 3600} h; {len(ids) - len(ended)} kept "
                          f"(runs not ended, or not in this database)")


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]
