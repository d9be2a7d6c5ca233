"""Webhooks: a key's hooks, the targets they may reach, and an outbox that delivers job events at least once.

Two kinds of target receive a job's ``job.created``, ``job.done``, ``job.failed`` and ``job.canceled``:
a key's hooks (``POST /webhooks``, each with its own secret, for every job of that key) and a job's
own ``webhookUrl`` (signed with the key's *job secret*, ``GET /webhooks/job-secret``).

The path of an event:

1. the job change records a row in ``job_events`` (:mod:`localapi.core.jobs.events`);
2. the :class:`Dispatcher` reads the feed from the position it keeps in ``settings``
   (``webhook_feed_seq``) and, in one transaction, inserts a row per target into
   ``webhook_deliveries`` (``on conflict do nothing`` on ``(target, event_seq)``: a feed read twice
   after a crash makes no second delivery) and moves the position on;
3. sender threads claim due rows (a lease, so two servers never send the same attempt at once),
   POST them, and record the outcome: 2xx delivered; ``410`` disables the target; anything else
   (a redirect, which is never followed, another status, a refused connection, a timeout) is
   tried again on ``webhook_retry_seconds``.

Whatever the server was doing when it died, the rows are still there at the next start: an
event is delivered at least once, with the same ``FileKiln-Event-Id`` on every attempt.
"""

from localapi.core.webhooks.hooks import EVENTS, Webhook, Webhooks, signature
from localapi.core.webhooks.targets import TargetPolicy, TargetRefused

__all__ = ["EVENTS", "TargetPolicy", "TargetRefused", "Webhook", "Webhooks", "signature"]
