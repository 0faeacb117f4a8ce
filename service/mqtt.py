"""Publishing one table to an MQTT broker, so a hub can show the whole room (issue 12).

Topics, under ``<prefix>/<table name>/``:

``status``
    ``online`` or ``offline``; retained, QoS 1. ``offline`` is also the last will, so the
    broker announces a table that vanished (power cut, kill -9, network lost).
``events``
    Every event of the table's log, QoS 1, in ``seq`` order: the event's own JSON with
    ``table`` and ``game_id`` added, and ``committed_at`` (wall clock, seconds) when the
    publisher saw the commit live. A subscriber dedupes by ``(table, game_id, seq)`` and
    detects gaps from ``seq``.
``state``
    The table's current snapshot (what its page draws), retained, QoS 1, after each batch.
``stats``
    Every ``stats_interval`` seconds, retained, QoS 0: input rate, event rate, faults,
    the publishing backlog and the commit-to-acknowledgement time (see :meth:`stats`).

Durable outbox: the SQLite game log *is* the queue. The publisher sends the events after
the log's ``mqtt`` cursor and advances that cursor only once the broker has acknowledged
them (PUBACK). While the broker is unreachable the table goes on refereeing and
committing; when it returns the backlog is published in order, then live events follow.
Events are sent in batches and the next batch waits until the whole previous one is
acknowledged; paho re-sends an unacknowledged batch, in order, after a reconnect, so a
subscriber never sees ``seq`` go backwards except for such re-sends. Delivery is
at-least-once: a re-send after a lost PUBACK, or after a crash between the PUBACK and
the cursor update, delivers an event twice, hence the dedupe by ``seq``. Nothing is
lost: an event only leaves the outbox once the broker holds it.

Reconnection uses paho's exponential backoff (0.5 s doubling to 30 s by default).
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from typing import Any

from service.config import MqttSettings
from service.table import TableService

CURSOR = "mqtt"
#: characters MQTT gives a meaning in topic names; a table name must not contain them
TOPIC_SPECIAL = set("/+#\0")


def check_topic_part(value: str, what: str) -> str:
    if not value or TOPIC_SPECIAL & set(value):
        raise ValueError(f"{what} {value!r} cannot be used in MQTT topics: it must be non-empty, without / + # ")
    return value


def check_prefix(prefix: str) -> str:
    if not prefix or {"+", "#", "\0"} & set(prefix) or prefix.startswith("/") or prefix.endswith("/"):
        raise ValueError(f"MQTT prefix {prefix!r} must be non-empty, without + or #, and not start or end with /")
    return prefix


def table_topics(prefix: str, table: str) -> dict[str, str]:
    base = f"{check_prefix(prefix)}/{check_topic_part(table, 'table name')}"
    return {name: f"{base}/{name}" for name in ("status", "events", "state", "stats")}


def configure_client(client: Any, username: str, password: str, tls: bool, ca_file: str | None = None) -> None:
    """Credentials and TLS, the same way for the table and the hub."""
    if username:
        client.username_pw_set(username, password or None)
    if tls:
        # Verifies the broker's certificate against the system CAs, or ca_file for a private CA.
        client.tls_set(ca_certs=ca_file or None)


class TablePublisher:
    """Publishes a :class:`TableService` to MQTT; :meth:`start` / :meth:`stop` around the service's life."""

    def __init__(
        self,
        service: TableService,
        settings: MqttSettings,
        table: str | None = None,
        *,
        client_id: str | None = None,
        batch: int = 50,
        keepalive: int = 10,
        reconnect_delay: tuple[float, float] = (0.5, 30.0),
    ) -> None:
        import paho.mqtt.client as mqtt

        self.service = service
        self.settings = settings
        self.table = table or service.config.table.name
        self.topics = table_topics(settings.prefix, self.table)
        self.batch = batch
        self.stats_interval = max(0.1, float(settings.stats_interval))
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._connected = False
        self._state_dirty = True
        self._stats_due = 0.0
        self._acked: set[int] = set()
        self._committed: dict[tuple[int, int], float] = {}
        self._publish_ms: list[float] = []
        self._counters = {"events_published": 0, "events_seen": 0, "reconnects": 0, "connects": 0}
        self._last_stats: tuple[float, int, int] | None = None
        self._refused: str | None = None
        # Games with events possibly not yet acknowledged, with the last seq acknowledged.
        self._pending: dict[int, int] = {}
        log = service.log
        for record in log.games():
            cursor = log.cursor(CURSOR, record.id)
            if cursor < log.last_seq(record.id):
                self._pending[record.id] = cursor
        current = service.record.id
        self._pending.setdefault(current, log.cursor(CURSOR, current))

        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id or f"bloxcam-table-{self.table}",
            clean_session=True,  # the outgoing queue is the game log, not the broker's session
            protocol=mqtt.MQTTv311,
        )
        configure_client(self.client, settings.username, settings.password, settings.tls)
        self.client.will_set(self.topics["status"], "offline", qos=1, retain=True)
        self.client.max_inflight_messages_set(max(20, batch + 10))
        self.client.reconnect_delay_set(*reconnect_delay)  # type: ignore[arg-type]
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_publish = self._on_publish
        self._keepalive = keepalive
        self._worker = threading.Thread(target=self._run, name=f"bloxcam-mqtt-{self.table}", daemon=True)

    # ------------------------------------------------------------------ life

    def start(self) -> None:
        self.service.subscribe(self._on_events)
        self.client.connect_async(self.settings.host, self.settings.port, self._keepalive)
        self.client.loop_start()
        self._worker.start()

    def stop(self, timeout: float = 3.0) -> None:
        """Stop publishing; say ``offline`` if the broker is reachable (else the will says it)."""
        self.service.unsubscribe(self._on_events)
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._worker.is_alive():
            self._worker.join(timeout)
        if self._connected:
            try:
                self.client.publish(self.topics["status"], "offline", qos=1, retain=True).wait_for_publish(timeout)
            except (RuntimeError, ValueError):
                pass
        self.client.disconnect()
        self.client.loop_stop()

    @property
    def connected(self) -> bool:
        return self._connected

    # ------------------------------------------------------------------ callbacks (other threads)

    def _on_events(self, events: list[dict[str, Any]], reset: bool) -> None:
        # Called under the service lock right after the commit: note and wake, no I/O here.
        now = time.time()
        game_id = self.service.record.id
        with self._cond:
            if game_id not in self._pending:
                self._pending[game_id] = 0
            if len(self._committed) < 100_000:
                for event in events:
                    self._committed[(game_id, event["seq"])] = now
            self._counters["events_seen"] += len(events)
            self._state_dirty = True
            self._cond.notify_all()

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            if self._refused != str(reason):
                print(f"bloxcam: MQTT broker {self.settings.host}:{self.settings.port} refused table "
                      f"{self.table!r}: {reason}", file=sys.stderr, flush=True)
            self._refused = str(reason)
            return
        self._refused = None
        client.publish(self.topics["status"], "online", qos=1, retain=True)
        with self._cond:
            self._counters["connects"] += 1
            if self._counters["connects"] > 1:
                self._counters["reconnects"] += 1
            self._connected = True
            # A restarted broker without persistence has forgotten the retained messages.
            self._state_dirty = True
            self._stats_due = 0.0
            self._cond.notify_all()

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        with self._cond:
            self._connected = False
            self._cond.notify_all()

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason: Any, properties: Any) -> None:
        # paho calls this holding its outgoing-message lock: only note the mid, never publish here.
        with self._cond:
            self._acked.add(mid)
            self._cond.notify_all()

    # ------------------------------------------------------------------ the worker

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                timeout = max(0.0, self._stats_due - time.time()) if self._connected else 1.0
                if not self._has_work():
                    self._cond.wait(min(timeout, 1.0))
                connected = self._connected
            if self._stop.is_set():
                return
            if not connected:
                continue
            try:
                self._drain()
                if self._state_dirty and self._connected:
                    self._state_dirty = False
                    self._publish_json("state", self.service.snapshot(), qos=1, retain=True)
                if time.time() >= self._stats_due and self._connected:
                    self._stats_due = time.time() + self.stats_interval
                    self._publish_json("stats", self.stats(), qos=0, retain=True)
            except Exception as exc:  # the table must go on refereeing whatever happens here
                print(f"bloxcam: MQTT publisher of table {self.table!r}: {exc!r}", file=sys.stderr, flush=True)
                self._stop.wait(1.0)

    def _has_work(self) -> bool:
        if not self._connected:
            return False
        log = self.log
        if any(log.last_seq(g) > cursor for g, cursor in self._pending.items()):
            return True
        return self._state_dirty or time.time() >= self._stats_due

    @property
    def log(self):
        return self.service.log

    def _drain(self) -> None:
        """Publish every unacknowledged event, game by game, batch by batch, in seq order."""
        current = self.service.record.id
        for game_id in sorted(self._pending):
            while not self._stop.is_set():
                after = self._pending[game_id]
                events = self.log.events(game_id, after, self.batch)
                if not events:
                    break
                if not self._send_batch(game_id, events):
                    return
                self.log.set_cursor(CURSOR, game_id, events[-1]["seq"])
                with self._cond:
                    self._pending[game_id] = events[-1]["seq"]
            if self._stop.is_set():
                return
            if game_id != current:  # a superseded game gets no more events
                with self._cond:
                    self._pending.pop(game_id, None)

    def _send_batch(self, game_id: int, events: list[dict[str, Any]]) -> bool:
        """Publish a batch and wait for all its PUBACKs (across reconnects); False when stopping."""
        with self._cond:
            self._acked.clear()
        mids = []
        for event in events:
            message = dict(event, table=self.table, game_id=game_id)
            committed = self._committed.get((game_id, event["seq"]))
            if committed is not None:
                message["committed_at"] = committed
            info = self.client.publish(self.topics["events"], _dumps(message), qos=1)
            # NO_CONN: paho keeps the message and sends it, in order, when it reconnects.
            mids.append(info.mid)
        with self._cond:
            while not set(mids) <= self._acked:
                if self._stop.is_set():
                    return False
                self._cond.wait(1.0)
            self._acked.difference_update(mids)
            now = time.time()
            for event in events:
                committed = self._committed.pop((game_id, event["seq"]), None)
                if committed is not None:
                    self._publish_ms.append((now - committed) * 1000)
            self._counters["events_published"] += len(events)
        return True

    def _publish_json(self, name: str, data: Any, qos: int, retain: bool) -> None:
        self.client.publish(self.topics[name], _dumps(data), qos=qos, retain=retain)

    # ------------------------------------------------------------------ stats

    def backlog(self) -> int:
        """Committed events the broker has not acknowledged yet."""
        with self._cond:
            pending = dict(self._pending)
        return sum(max(0, self.log.last_seq(g) - cursor) for g, cursor in pending.items())

    def stats(self) -> dict[str, Any]:
        """The table's health for the hub.

        ``input_rate``: recording lines or camera frames handled per second since the last
        stats; ``frame_rate`` is the same figure for camera sources and null for a replay of
        observations (there are no frames); ``recognition_ms`` is null for the same reason.
        ``publish_ms``: time from an event's commit to the broker's acknowledgement.
        """
        now = time.time()
        source = self.service.source
        referee_stats = vars(self.service.referee.stats).copy()
        with self._cond:
            seen = self._counters["events_seen"]
            publish_ms, self._publish_ms = self._publish_ms, []
            counters = dict(self._counters)
        previous = self._last_stats
        self._last_stats = (now, source.position, seen)
        input_rate = event_rate = None
        if previous is not None and now > previous[0]:
            span = now - previous[0]
            input_rate = round(max(0, source.position - previous[1]) / span, 3)
            event_rate = round((seen - previous[2]) / span, 3)
        frames = source.kind in ("opencv", "picamera2")
        return {
            "table": self.table,
            "time": now,
            "interval": self.stats_interval,
            "input_rate": input_rate,
            "frame_rate": input_rate if frames else None,
            "recognition_ms": None,
            "event_rate": event_rate,
            "faults": source.faults,
            "referee": referee_stats,
            "source": {k: getattr(source, k) for k in ("kind", "position", "total", "finished", "skipped", "speed")},
            "backlog": self.backlog(),
            "publish_ms": {
                "count": len(publish_ms),
                "median": round(statistics.median(publish_ms), 2) if publish_ms else None,
                "max": round(max(publish_ms), 2) if publish_ms else None,
            },
            **counters,
        }


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"))
