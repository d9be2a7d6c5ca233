"""Wake-ups between the processes that share a data dir: a datagram on loopback instead of a poll.

Two things cross processes on one machine: a job queued by one process for the workers of another
(``filekiln serve --workers 0`` with ``filekiln worker``), and a job's change made by one process for
the waiting requests, event streams and webhooks of another. Both are in the database already; what
the other process lacks is word that it should look now rather than at its next poll.

Each process that waits for either binds a UDP socket on 127.0.0.1 and records its port in the
``bells`` table with the kinds it wants (``queue``, ``events``). A process that queues a job or
commits a change sends one byte to the ports of the others on this host that want that kind. A
datagram carries no data, only "look": whoever sends one (any local program can) costs the receiver
one read of the database, which it would have made at its next poll anyway. Polling stays as the
fallback: a bell lost, a process that started less than a second ago.

Other machines cannot be reached on loopback. With the queue on Redis (``queue_url``), job changes are
also published on a Redis channel of the install (:class:`RedisRelay`), which every process on it
listens to; queued jobs need no bell there, as idle workers wait inside Redis.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable

from localapi.core.db import Database, now
from localapi.core.processes import process_is_gone

log = logging.getLogger("filekiln.bells")

QUEUE = "queue"  # a job was queued: idle workers look at the queue
EVENTS = "events"  # a job changed: the event feed reads the table
_BYTE = {QUEUE: b"q", EVENTS: b"e"}
_KIND = {v[0]: k for k, v in _BYTE.items()}
REFRESH_SECONDS = 1.0  # how long a sender trusts its list of the other bells
_opened = itertools.count(1)  # one bell per service: a process may open two on one data dir (tests do)


class Bells:
    """This process's bell (while it wants one), and the others' to ring."""

    def __init__(self, db: Database, identity: str) -> None:
        self.db = db
        self.identity = f"{identity}#{next(_opened)}"  # the process (processes.py), and which of its bells
        self.host = socket.gethostname()
        self._handlers: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sender.setblocking(False)
        self._others: dict[str, list[int]] = {}
        self._others_read = -REFRESH_SECONDS
        self.relay: RedisRelay | None = None  # job changes to and from other machines, with the queue on Redis

    # ---- receiving ----

    def listen(self, kind: str, handler: Callable[[], None]) -> None:
        """Call ``handler`` (on the bell's thread) whenever another process rings ``kind``."""
        with self._lock:
            self._handlers[kind] = handler
            if self._sock is None:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind(("127.0.0.1", 0))
                sock.settimeout(1.0)
                self._sock = sock
                self._thread = threading.Thread(target=self._receive, args=(sock,), daemon=True,
                                                name="filekiln-bell")
                self._thread.start()
            port = self._sock.getsockname()[1]
            kinds = ",".join(sorted(self._handlers))
        if self.relay is not None and kind == EVENTS:
            self.relay.start(handler)
        self.db.execute("insert into bells (id, host, port, kinds, updated_at) values (?, ?, ?, ?, ?)"
                        " on conflict (id) do update set port = excluded.port, kinds = excluded.kinds,"
                        " updated_at = excluded.updated_at", self.identity, self.host, port, kinds, now())

    def unlisten(self, kind: str) -> None:
        if self.relay is not None and kind == EVENTS:
            self.relay.stop()
        with self._lock:
            self._handlers.pop(kind, None)
            kinds = ",".join(sorted(self._handlers))
            sock, thread = (self._sock, self._thread) if not kinds else (None, None)
            if sock is not None:
                self._sock = self._thread = None
        if kinds:
            self.db.execute("update bells set kinds = ?, updated_at = ? where id = ?", kinds, now(), self.identity)
            return
        self.db.execute("delete from bells where id = ?", self.identity)
        if sock is not None and thread is not None:
            try:  # wake the thread: it sees it is no longer this process's bell, and ends
                self._sender.sendto(b"x", sock.getsockname())
            except OSError:
                pass
            thread.join(timeout=5)
            sock.close()

    def close(self) -> None:
        for kind in list(self._handlers):
            self.unlisten(kind)
        self._sender.close()

    def _receive(self, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(64)
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            if self._sock is not sock:
                return  # unlisten
            kinds = set(data[:1])
            sock.setblocking(False)  # the rest of a burst, as one wake-up
            try:
                while True:
                    kinds |= set(sock.recv(64)[:1])
            except (BlockingIOError, OSError):
                pass
            try:
                sock.settimeout(1.0)
            except OSError:
                return
            for byte in kinds:
                handler = self._handlers.get(_KIND.get(byte, ""))
                if handler is not None:
                    try:
                        handler()
                    except Exception:
                        log.exception("a wake-up handler failed")

    # ---- sending ----

    def ring(self, kind: str) -> None:
        """Wake the other processes on this host that want ``kind``; never raises, never waits."""
        try:
            ports = self._ports(kind)
        except Exception:
            log.debug("could not read the other processes' bells", exc_info=True)
            return
        for port in ports:
            try:
                self._sender.sendto(_BYTE[kind], ("127.0.0.1", port))
            except OSError:
                pass  # its socket is gone, or the buffer is full (it has wake-ups to read already)
        if self.relay is not None and kind == EVENTS:
            self.relay.publish()

    def _ports(self, kind: str) -> list[int]:
        if time.monotonic() - self._others_read >= REFRESH_SECONDS:
            others: dict[str, list[int]] = {}
            for row in self.db.all("select id, port, kinds from bells where host = ? and id != ?",
                                   self.host, self.identity):
                if process_is_gone(row["id"].partition("#")[0]):
                    self.db.execute("delete from bells where id = ? and port = ?", row["id"], row["port"])
                    continue
                for k in row["kinds"].split(","):
                    others.setdefault(k, []).append(row["port"])
            self._others, self._others_read = others, time.monotonic()
        return self._others.get(kind, [])


RELAY_RETRY = (0.5, 10.0)  # the wait before subscribing again after Redis went away: grows, then stays


class RedisRelay:
    """Job changes carried between machines: a message on the install's Redis channel for each commit,
    and a thread here that calls ``handler`` for every message another process sent.

    The channel is named after the queue's database number, as installs that share one Redis each have
    their own (pub/sub channels are not per database). A message says only "events" and who sent it;
    Redis away costs a log line, not a request: the feed's poll carries on meanwhile."""

    def __init__(self, url: str, db: str, sender: str) -> None:
        import redis  # only with the queue on Redis (the scale extra)

        self.channel = f"filekiln.{db}.events"
        self.sender = sender
        self.conn = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def publish(self) -> None:
        try:
            self.conn.publish(self.channel, f"events|{self.sender}")
        except Exception as exc:
            if not self._failing:
                log.warning("could not tell other machines of a job change through Redis: %s", exc)
            self._failing = True
        else:
            self._failing = False

    def start(self, handler: Callable[[], None]) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._listen, args=(handler,), daemon=True,
                                            name="filekiln-relay")
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _listen(self, handler: Callable[[], None]) -> None:
        pause = RELAY_RETRY[0]
        while not self._stopping.is_set():
            try:
                pubsub = self.conn.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
                pubsub.subscribe(self.channel)
                pause = RELAY_RETRY[0]
                handler()  # what was missed while not subscribed
                while not self._stopping.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None and not message["data"].decode().endswith(f"|{self.sender}"):
                        handler()
                pubsub.close()
            except Exception as exc:
                log.debug("the Redis relay lost its subscription: %s", exc)
                self._stopping.wait(pause)
                pause = min(pause * 2, RELAY_RETRY[1])
