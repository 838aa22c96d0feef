"""Through Pushpin too, the queue stream's ``stream-open`` names "now" (streams.grip), and
a client that lost the stream before its first event resumes from it with nothing missed
(tests/streams/test_queue_resume.py is the direct path)."""

from __future__ import annotations

import pytest

from tests.streams.test_queue_resume import check_resume_from_open

pytestmark = pytest.mark.django_db(transaction=True)


def test_queue_stream_through_the_proxy_resumes_from_where_it_opened(via_edge, edge, users):
    check_resume_from_open(via_edge, users)
