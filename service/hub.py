"""The room's hub: every table's game, scores, last action and health on one page (issue 12).

``bloxcam hub --config hub.toml`` subscribes to all tables published under the broker
prefix (see :mod:`service.mqtt` for the topics), keeps what it learns in memory and serves
one phone-friendly page with live updates (server-sent events on ``/api/stream``) and a
JSON API (OpenAPI at ``/openapi.json``). Reading is open to everyone on the network; every
change (resetting the standings, forgetting a table) needs the hub PIN in the
``X-Table-Pin`` header, as on a table's page: 401 without it, 403 when wrong or when no PIN
is set.

Configuration::

    [broker]
    host = "127.0.0.1"
    port = 1883
    username = ""             # broker credentials, if the broker wants them
    password = ""
    tls = false               # verify the broker's certificate (system CAs or ca_file)
    ca_file = ""
    prefix = "bloxcam"        # the tables' [mqtt] prefix
    client_id = "bloxcam-hub" # the hub's persistent session: the broker keeps its events while it is away

    [hub]
    host = "0.0.0.0"
    port = 8090
    pin = "1357"
    results = "hub-results.json"   # finished games kept for the standings across restarts ("" = memory only)

    [tournament]                   # optional
    name = "Café cup"
    [[tournament.groups]]
    name = "Group A"
    tables = ["table-1", "table-2"]
    [tournament.groups.seats]      # optional: who plays which colour at which table
    "table-1" = { green = "Alice", brown = "Bob", blue = "Chloé" }

Receiving: events are deduplicated by ``(table, game_id, seq)`` (the tables publish
at-least-once) and every ``seq`` missing between the first one seen for a game and the
highest one is reported as a gap in the table's health.

Standings rule (for each group of a tournament): every game that ended at one of the
group's tables since the standings were last reset counts once. In a game of ``n``
players, a player ranked ``r`` (the referee's final ranking; tied players share the better
rank) earns ``n - r + 1`` ranking points. Players are ordered by ranking points, then by
wins (games ranked first), then by total game points scored, then by name; players equal
on all three share a place. A player is the person in ``seats`` for that table and colour,
otherwise ``<table>/<colour>``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import Body, Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from pydantic import BaseModel, Field

from service.tomlconfig import TomlReader, load_toml
from service.mqtt import check_prefix, check_topic_part, configure_client
from service.text import describe_event

PIN_HEADER = "X-Table-Pin"
TOPIC_KINDS = ("status", "events", "state", "stats")


class HubConfigError(ValueError):
    """A hub configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class BrokerSettings:
    host: str = "127.0.0.1"
    port: int = 1883
    username: str = ""
    password: str = ""
    tls: bool = False
    ca_file: str = ""
    prefix: str = "bloxcam"
    client_id: str = "bloxcam-hub"


@dataclass(frozen=True)
class HubSettings:
    host: str = "127.0.0.1"
    port: int = 8090
    pin: str = ""
    results: Path | None = None


@dataclass(frozen=True)
class Group:
    name: str
    tables: tuple[str, ...]
    seats: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Tournament:
    name: str = "Tournament"
    groups: tuple[Group, ...] = ()


@dataclass(frozen=True)
class HubConfig:
    broker: BrokerSettings = field(default_factory=BrokerSettings)
    hub: HubSettings = field(default_factory=HubSettings)
    tournament: Tournament | None = None
    path: Path | None = None


def load_hub_config(path: str | Path) -> HubConfig:
    path = Path(path)
    return parse_hub_config(load_toml(path, HubConfigError), path)


def parse_hub_config(data: dict[str, Any], path: Path | None = None) -> HubConfig:
    where = str(path) if path else "hub configuration"
    base = path.parent if path else Path.cwd()
    reader = TomlReader(data, where, HubConfigError, {"broker", "hub", "tournament"})
    section, typed = reader.section, reader.typed

    b = section("broker", {"host", "port", "username", "password", "tls", "ca_file", "prefix", "client_id"})
    broker = BrokerSettings(
        host=typed("broker", b, "host", str, "127.0.0.1"),
        port=typed("broker", b, "port", int, 1883),
        username=typed("broker", b, "username", str, ""),
        password=typed("broker", b, "password", str, ""),
        tls=typed("broker", b, "tls", bool, False),
        ca_file=typed("broker", b, "ca_file", str, ""),
        prefix=typed("broker", b, "prefix", str, "bloxcam"),
        client_id=typed("broker", b, "client_id", str, "bloxcam-hub"),
    )
    if not broker.host:
        raise HubConfigError(f"{where}: [broker] host is needed")
    if not 0 < broker.port <= 65535:
        raise HubConfigError(f"{where}: [broker] port {broker.port} is not a TCP port")
    try:
        check_prefix(broker.prefix)
    except ValueError as exc:
        raise HubConfigError(f"{where}: [broker] {exc}") from exc
    if broker.ca_file:
        ca = Path(broker.ca_file).expanduser()
        ca = ca if ca.is_absolute() else base / ca
        if not ca.exists():
            raise HubConfigError(f"{where}: [broker] ca_file {ca} does not exist")
        broker = BrokerSettings(**{**vars(broker), "ca_file": str(ca)})
    if not broker.client_id:
        raise HubConfigError(f"{where}: [broker] client_id must not be empty (the hub keeps a session under it)")

    h = section("hub", {"host", "port", "pin", "results"})
    pin = h.get("pin", "")
    if isinstance(pin, bool) or not isinstance(pin, (str, int)):
        raise HubConfigError(f"{where}: [hub] pin must be a string of 4 to 12 letters or digits")
    pin = str(pin)  # an unquoted PIN arrives as an integer
    if pin and not (4 <= len(pin) <= 12 and pin.isalnum()):
        raise HubConfigError(f"{where}: [hub] pin must be 4 to 12 letters or digits")
    results = typed("hub", h, "results", str, "")
    hub = HubSettings(
        host=typed("hub", h, "host", str, "127.0.0.1"),
        port=typed("hub", h, "port", int, 8090),
        pin=pin,
        results=(Path(results) if Path(results).is_absolute() else base / results) if results else None,
    )
    if not 0 <= hub.port <= 65535:
        raise HubConfigError(f"{where}: [hub] port {hub.port} is not a TCP port")

    tournament = None
    if "tournament" in data:
        t = section("tournament", {"name", "groups"})
        groups_data = t.get("groups", [])
        if not isinstance(groups_data, list) or not groups_data:
            raise HubConfigError(f"{where}: [tournament] needs at least one [[tournament.groups]] with name and tables")
        groups: list[Group] = []
        seen_tables: dict[str, str] = {}
        for number, g in enumerate(groups_data, 1):
            label = f"[[tournament.groups]] #{number}"
            if not isinstance(g, dict) or set(g) - {"name", "tables", "seats"}:
                raise HubConfigError(f"{where}: {label} may only have name, tables and seats")
            name = g.get("name")
            if not isinstance(name, str) or not name:
                raise HubConfigError(f"{where}: {label} needs a name")
            if any(other.name == name for other in groups):
                raise HubConfigError(f"{where}: two tournament groups are called {name!r}")
            tables = g.get("tables")
            if not isinstance(tables, list) or not tables or not all(isinstance(x, str) and x for x in tables):
                raise HubConfigError(f"{where}: group {name!r}: tables must be a list of table names")
            for table in tables:
                try:
                    check_topic_part(table, "table name")
                except ValueError as exc:
                    raise HubConfigError(f"{where}: group {name!r}: {exc}") from exc
                if table in seen_tables:
                    raise HubConfigError(f"{where}: table {table!r} is in groups {seen_tables[table]!r} and {name!r}")
                seen_tables[table] = name
            seats = g.get("seats", {})
            if not isinstance(seats, dict) or not all(
                isinstance(v, dict) and all(isinstance(c, str) and isinstance(p, str) and p for c, p in v.items())
                for v in seats.values()
            ):
                raise HubConfigError(f"{where}: group {name!r}: seats must map table = {{ colour = \"person\" }}")
            if set(seats) - set(tables):
                raise HubConfigError(f"{where}: group {name!r}: seats for table(s) not in the group: "
                                     f"{sorted(set(seats) - set(tables))}")
            groups.append(Group(name, tuple(tables), {k: dict(v) for k, v in seats.items()}))
        tournament = Tournament(typed("tournament", t, "name", str, "Tournament"), tuple(groups))
    return HubConfig(broker, hub, tournament, path)


# ---------------------------------------------------------------------------- what the hub knows


@dataclass
class GameTrack:
    """The events of one game of one table as received: for dedupe and gap detection."""

    game_id: int
    first: int = 0
    highest: int = 0
    seen: set[int] = field(default_factory=set)
    missing: set[int] = field(default_factory=set)
    duplicates: int = 0

    def add(self, seq: int) -> bool:
        """True if ``seq`` is new; records gaps when it jumps ahead."""
        if seq in self.seen:
            self.duplicates += 1
            return False
        if not self.seen:
            self.first = self.highest = seq
        elif seq > self.highest:
            self.missing.update(range(self.highest + 1, seq))
            self.highest = seq
        elif seq < self.first:
            # Joined late and an earlier event arrived after all: it fills in from below.
            self.missing.update(range(seq + 1, self.first))
            self.first = seq
        self.missing.discard(seq)
        self.seen.add(seq)
        return True

    def gaps(self) -> list[list[int]]:
        """Missing seqs as [first, last] ranges."""
        ranges: list[list[int]] = []
        for seq in sorted(self.missing):
            if ranges and ranges[-1][1] == seq - 1:
                ranges[-1][1] = seq
            else:
                ranges.append([seq, seq])
        return ranges


@dataclass
class TableView:
    name: str
    online: bool | None = None
    state: dict[str, Any] | None = None
    stats: dict[str, Any] | None = None
    last_seen: float | None = None
    games: dict[int, GameTrack] = field(default_factory=dict)
    recent: deque = field(default_factory=lambda: deque(maxlen=200))
    last_action: dict[str, Any] | None = None
    events_received: int = 0

    def track(self, game_id: int) -> GameTrack:
        track = self.games.get(game_id)
        if track is None:
            track = self.games[game_id] = GameTrack(game_id)
            # Only the last few games matter for dedupe: a table never goes back to an old game.
            for old in sorted(self.games)[:-5]:
                del self.games[old]
        return track

    def game_id(self) -> int | None:
        ids = list(self.games)
        if self.state and isinstance(self.state.get("game_id"), int):
            ids.append(self.state["game_id"])
        return max(ids) if ids else None

    def health(self, now: float) -> str:
        if self.online is None:
            return "unknown"
        if not self.online:
            return "offline"
        interval = float((self.stats or {}).get("interval") or 10.0)
        if self.last_seen is not None and now - self.last_seen > 3 * interval + 5:
            return "silent"
        return "online"

    def summary(self, now: float) -> dict[str, Any]:
        state = self.state or {}
        game_id = self.game_id()
        track = self.games.get(game_id) if game_id is not None else None
        stats = self.stats or {}
        return {
            "table": self.name,
            "health": self.health(now),
            "online": self.online,
            "last_seen": self.last_seen,
            "game": state.get("game"),
            "game_id": game_id,
            "players": state.get("players", []),
            "scores": state.get("scores", {}),
            "phase": state.get("phase"),
            "round": state.get("round"),
            "current": state.get("current"),
            "finished": bool(state.get("finished")),
            "winners": state.get("winners", []),
            "waiting": bool(state.get("waiting")),
            "state_seq": state.get("seq"),
            "last_action": self.last_action,
            "events_received": self.events_received,
            "seq": track.highest if track else 0,
            "first_seq": track.first if track else 0,
            "gaps": track.gaps() if track else [],
            "duplicates": sum(t.duplicates for t in self.games.values()),
            "stats": {k: stats.get(k) for k in ("time", "interval", "input_rate", "frame_rate", "recognition_ms",
                                                 "event_rate", "faults", "backlog", "publish_ms", "reconnects")}
            if stats else None,
        }


Broadcast = Callable[[str, Any], None]


class Hub:
    """Everything the hub knows, updated from MQTT messages; thread-safe.

    :meth:`handle` is called by the MQTT client's thread; the web handlers read. Listeners
    get ``(name, data)`` messages for the live stream, in the order things happened.
    """

    def __init__(self, config: HubConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.prefix = config.broker.prefix
        self.clock = clock
        self.lock = threading.RLock()
        self.tables: dict[str, TableView] = {}
        self.results: list[dict[str, Any]] = self._load_results()
        self.listeners: list[Broadcast] = []
        self.broker_connected = False
        self.malformed = 0

    # ------------------------------------------------------------------ results file

    def _load_results(self) -> list[dict[str, Any]]:
        path = self.config.hub.results
        if path is None or not path.exists():
            return []
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise HubConfigError(f"{path}: the hub's results file cannot be read ({exc}); move it away") from exc
        if not isinstance(data, list):
            raise HubConfigError(f"{path}: the hub's results file must hold a JSON list")
        return data

    def _save_results(self) -> None:
        path = self.config.hub.results
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(path.suffix + ".tmp")
        temporary.write_text(json.dumps(self.results, indent=1), "utf-8")
        os.replace(temporary, path)  # atomic: a crash leaves the old or the new file, never half of one

    # ------------------------------------------------------------------ listeners

    def subscribe(self, listener: Broadcast) -> None:
        with self.lock:
            self.listeners.append(listener)

    def unsubscribe(self, listener: Broadcast) -> None:
        with self.lock:
            if listener in self.listeners:
                self.listeners.remove(listener)

    def _broadcast(self, name: str, data: Any) -> None:
        for listener in list(self.listeners):
            listener(name, data)

    def set_broker_connected(self, connected: bool) -> None:
        with self.lock:
            self.broker_connected = connected
            self._broadcast("broker", {"connected": connected})

    # ------------------------------------------------------------------ messages

    def split_topic(self, topic: str) -> tuple[str, str] | None:
        head = self.prefix + "/"
        if not topic.startswith(head):
            return None
        parts = topic[len(head):].split("/")
        if len(parts) != 2 or parts[1] not in TOPIC_KINDS or not parts[0]:
            return None
        return parts[0], parts[1]

    def handle(self, topic: str, payload: bytes) -> None:
        where = self.split_topic(topic)
        if where is None:
            return
        name, kind = where
        now = self.clock()
        with self.lock:
            if not payload:  # a cleared retained message
                return
            try:
                if kind == "status":
                    text = payload.decode("utf-8")
                    if text not in ("online", "offline"):
                        raise ValueError(text)
                    data: Any = text
                else:
                    data = json.loads(payload)
                    if not isinstance(data, dict):
                        raise ValueError("not an object")
            except (ValueError, UnicodeDecodeError):
                self.malformed += 1
                return
            table = self.tables.get(name)
            if table is None:
                table = self.tables[name] = TableView(name)
            table.last_seen = now
            if kind == "status":
                table.online = data == "online"
            elif kind == "stats":
                table.stats = data
            elif kind == "state":
                if not self._newer_state(table.state, data):
                    return
                table.state = data
            elif kind == "events":
                if not self._event(table, data, now):
                    return
                return  # _event broadcast what changed
            self._broadcast("table", table.summary(now))

    @staticmethod
    def _newer_state(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
        # Retained states can arrive again (reconnects): never step back to an older one.
        if old is None:
            return True
        key = lambda s: (s.get("game_id") or 0, s.get("seq") or 0)  # noqa: E731
        return key(new) >= key(old)

    def _event(self, table: TableView, event: dict[str, Any], now: float) -> bool:
        game_id, seq = event.get("game_id"), event.get("seq")
        if not isinstance(game_id, int) or not isinstance(seq, int) or isinstance(seq, bool):
            self.malformed += 1
            return False
        if not table.track(game_id).add(seq):
            return False  # a duplicate from an at-least-once re-send
        table.events_received += 1
        event = dict(event, text=describe_event(event), received_at=now)
        table.recent.append(event)
        if event.get("kind") in ("action", "illegal", "unrecognised", "correction", "end"):
            table.last_action = {k: event.get(k) for k in ("seq", "game_id", "kind", "player", "legal", "text", "t")}
        self._broadcast("event", event)
        if event.get("kind") == "end" and isinstance(event.get("ranking"), list):
            self._record_result(table.name, game_id, event, now)
        self._broadcast("table", table.summary(now))
        return True

    def _record_result(self, table: str, game_id: int, event: dict[str, Any], now: float) -> None:
        if any(r["table"] == table and r["game_id"] == game_id for r in self.results):
            return  # already counted (the hub restarted and the end event came again)
        ranking = [
            {"rank": int(r["rank"]), "player": str(r["player"]), "points": int(r.get("points", 0))}
            for r in event["ranking"]
            if isinstance(r, dict) and "rank" in r and "player" in r
        ]
        self.results.append({"table": table, "game_id": game_id, "game": event.get("game"), "ended": now,
                             "ranking": ranking})
        self._save_results()
        if self.group_of(table) is not None:
            self._broadcast("standings", self.standings())

    # ------------------------------------------------------------------ standings

    def group_of(self, table: str) -> Group | None:
        if self.config.tournament is None:
            return None
        return next((g for g in self.config.tournament.groups if table in g.tables), None)

    def standings(self) -> dict[str, Any] | None:
        """Each group's standings by the rule in this module's docstring."""
        tournament = self.config.tournament
        if tournament is None:
            return None
        with self.lock:
            results = list(self.results)
        groups = []
        for group in tournament.groups:
            rows: dict[str, dict[str, Any]] = {}
            games = 0
            for result in results:
                if result["table"] not in group.tables:
                    continue
                games += 1
                n = len(result["ranking"])
                seats = group.seats.get(result["table"], {})
                for entry in result["ranking"]:
                    player = seats.get(entry["player"], f"{result['table']}/{entry['player']}")
                    row = rows.setdefault(player, {"player": player, "ranking_points": 0, "wins": 0,
                                                   "game_points": 0, "games": 0})
                    row["ranking_points"] += n - entry["rank"] + 1
                    row["wins"] += entry["rank"] == 1
                    row["game_points"] += entry["points"]
                    row["games"] += 1
            key = lambda r: (-r["ranking_points"], -r["wins"], -r["game_points"])  # noqa: E731
            ordered = sorted(rows.values(), key=lambda r: (*key(r), r["player"]))
            for index, row in enumerate(ordered):
                same = index > 0 and key(ordered[index - 1]) == key(row)
                row["place"] = ordered[index - 1]["place"] if same else index + 1
            groups.append({"group": group.name, "tables": list(group.tables), "games": games, "rows": ordered})
        return {"tournament": tournament.name, "groups": groups,
                "rule": "n - rank + 1 ranking points per finished game; ties by wins, then game points"}

    def reset_standings(self, group: str | None = None) -> int:
        """Forget finished games (of one group, or all); returns how many were removed."""
        with self.lock:
            if group is None:
                removed = len(self.results)
                self.results = []
            else:
                tables = next(g.tables for g in self.config.tournament.groups if g.name == group)  # type: ignore[union-attr]
                kept = [r for r in self.results if r["table"] not in tables]
                removed = len(self.results) - len(kept)
                self.results = kept
            self._save_results()
            self._broadcast("standings", self.standings())
            return removed

    def forget(self, table: str) -> None:
        with self.lock:
            del self.tables[table]
            self._broadcast("forget", {"table": table})

    # ------------------------------------------------------------------ reading

    def overview(self) -> dict[str, Any]:
        now = self.clock()
        with self.lock:
            return {
                "broker": {"connected": self.broker_connected, "host": self.config.broker.host,
                           "port": self.config.broker.port, "prefix": self.prefix},
                "tables": [self.tables[name].summary(now) for name in sorted(self.tables)],
                "standings": self.standings(),
                "malformed": self.malformed,
                "time": now,
            }


# ---------------------------------------------------------------------------- the MQTT side


class HubSubscriber:
    """The hub's MQTT client: a persistent session subscribed at QoS 1 to ``<prefix>/+/+``."""

    def __init__(self, hub: Hub, reconnect_delay: tuple[float, float] = (0.5, 30.0)) -> None:
        import paho.mqtt.client as mqtt

        self.hub = hub
        settings = hub.config.broker
        self.settings = settings
        # clean_session=False: while the hub is away, the broker keeps the QoS 1 events for it.
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=settings.client_id,
                                  clean_session=False, protocol=mqtt.MQTTv311)
        configure_client(self.client, settings.username, settings.password, settings.tls, settings.ca_file)
        self.client.reconnect_delay_set(*reconnect_delay)  # type: ignore[arg-type]
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self._refused: str | None = None

    def start(self) -> None:
        self.client.connect_async(self.settings.host, self.settings.port, 10)
        self.client.loop_start()

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            if self._refused != str(reason):
                print(f"bloxcam hub: broker {self.settings.host}:{self.settings.port} refused the hub: {reason}",
                      file=sys.stderr, flush=True)
            self._refused = str(reason)
            return
        self._refused = None
        client.subscribe(f"{self.settings.prefix}/+/+", qos=1)
        self.hub.set_broker_connected(True)

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        self.hub.set_broker_connected(False)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        try:
            self.hub.handle(message.topic, message.payload)
        except Exception as exc:  # one bad message must not stop the hub
            print(f"bloxcam hub: message on {message.topic} not handled: {exc!r}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- the web side


class ResetStandings(BaseModel):
    group: str | None = Field(default=None, description="only this group's games (default: all groups)")


def create_hub_app(hub: Hub) -> FastAPI:
    app = FastAPI(
        title="bloxcam hub",
        version="1",
        description="Every table of the room: games, scores, last actions, health and tournament standings. "
        f"Reading is open; changes need the hub PIN in the `{PIN_HEADER}` header.",
    )
    app.state.hub = hub

    def require_pin(x_table_pin: str | None = Header(default=None, description="the hub PIN")) -> None:
        expected = hub.config.hub.pin
        if not expected:
            raise HTTPException(403, "changes are disabled: no hub PIN was set ([hub] pin)")
        if x_table_pin is None:
            raise HTTPException(401, f"this change needs the hub PIN in the {PIN_HEADER} header")
        if not hmac.compare_digest(x_table_pin.encode(), expected.encode()):
            raise HTTPException(403, "wrong hub PIN")

    def table_or_404(name: str) -> TableView:
        table = hub.tables.get(name)
        if table is None:
            raise HTTPException(404, f"no table {name!r} has published to this hub (known: {sorted(hub.tables)})")
        return table

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return resources.files("service").joinpath("static/hub.html").read_text("utf-8")

    @app.get("/api/hub", summary="Everything: tables, standings, broker connection")
    def overview() -> dict[str, Any]:
        return hub.overview()

    @app.get("/api/tables", summary="Every table's game, scores, last action and health")
    def tables() -> list[dict[str, Any]]:
        return hub.overview()["tables"]

    @app.get("/api/tables/{name}", summary="One table, with its current state as published", responses={404: {}})
    def table(name: str) -> dict[str, Any]:
        with hub.lock:
            view = table_or_404(name)
            return {**view.summary(hub.clock()), "state": view.state, "full_stats": view.stats}

    @app.get("/api/tables/{name}/events", summary="Recent events of a table (as received, deduplicated)",
             responses={404: {}})
    def table_events(name: str, game_id: int | None = Query(None, ge=1), after: int = Query(0, ge=0),
                     limit: int = Query(200, ge=1, le=1000)) -> list[dict[str, Any]]:
        with hub.lock:
            view = table_or_404(name)
            wanted = game_id if game_id is not None else view.game_id()
            events = [e for e in view.recent if e.get("game_id") == wanted and e["seq"] > after]
        return events[:limit]

    @app.get("/api/standings", summary="Tournament standings per group", responses={404: {}})
    def standings() -> dict[str, Any]:
        result = hub.standings()
        if result is None:
            raise HTTPException(404, "no tournament is configured on this hub ([tournament] in its configuration)")
        return result

    @app.get("/api/health", summary="Is the hub connected to the broker")
    def health() -> dict[str, Any]:
        overview = hub.overview()
        return {"ok": overview["broker"]["connected"], "broker": overview["broker"],
                "tables": {t["table"]: t["health"] for t in overview["tables"]}}

    @app.post("/api/standings/reset", summary="Forget the finished games of one group or all",
              dependencies=[Depends(require_pin)], responses={404: {}})
    def reset(body: ResetStandings | None = Body(default=None)) -> dict[str, Any]:
        if hub.config.tournament is None:
            raise HTTPException(404, "no tournament is configured on this hub")
        group = body.group if body else None
        if group is not None and all(g.name != group for g in hub.config.tournament.groups):
            names = [g.name for g in hub.config.tournament.groups]
            raise HTTPException(404, f"no group {group!r} in the tournament (groups: {names})")
        removed = hub.reset_standings(group)
        return {"removed_games": removed, "standings": hub.standings()}

    @app.delete("/api/tables/{name}", summary="Forget a table (it reappears if it publishes again)",
                dependencies=[Depends(require_pin)], responses={404: {}})
    def forget(name: str) -> dict[str, Any]:
        with hub.lock:
            table_or_404(name)
            hub.forget(name)
        return {"forgotten": name}

    @app.get("/api/stream", summary="Live updates (server-sent events)")
    async def stream(request: Request) -> StreamingResponse:
        """``hub`` (everything) on connect, then ``event``, ``table``, ``standings``, ``broker`` and ``forget``."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def listener(name: str, data: Any) -> None:
            # Encoded once here, in order, under the hub lock; the loop only writes bytes out.
            loop.call_soon_threadsafe(queue.put_nowait, (name, _sse(name, data)))

        async def messages():
            hub.subscribe(listener)
            try:
                yield _sse("hub", hub.overview())
                while True:
                    try:
                        _, text = await asyncio.wait_for(queue.get(), timeout=15)
                    except TimeoutError:
                        if await request.is_disconnected():
                            return
                        yield ": keep-alive\n\n"
                        continue
                    if queue.qsize() > 5000:  # a reader that cannot keep up: let it reconnect
                        return
                    yield text
            finally:
                hub.unsubscribe(listener)

        return StreamingResponse(messages(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return app


def _sse(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
