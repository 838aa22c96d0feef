import uuid

import redis
from django.conf import settings
from django.core.management.base import BaseCommand
from django_eventstream.storage import EVENT_TIMEOUT

from runs.models import AgentRun
from streams.keys import counter_key, run_channel

_PREFIX = counter_key(run_channel(""))  # "event_counter:run-"


class Command(BaseCommand):
    help = ("Let the event counters of ended runs expire with their events, as runs that "
            "end now do (counters of runs ended before upgrading were kept forever).")

    def handle(self, *args, **options) -> None:
        r = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)
        keys = [key for key in r.scan_iter(match=f"{_PREFIX}*", count=1000)
                if r.ttl(key) == -1]
        ids = {}
        for key in keys:
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
                pipe.expire(ids[pk], EVENT_TIMEOUT * 60)
            pipe.execute()
        self.stdout.write(f"{len(ended)} counters of ended runs now expire in "
                          f"{EVENT_TIMEOUT // 60} h; {len(ids) - len(ended)} kept "
                          f"(runs not ended, or not in this database)")


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]
