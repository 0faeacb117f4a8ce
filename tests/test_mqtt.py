"""Many tables on one MQTT broker, one hub page for the room (issue 12).

Real processes throughout: Debian's Mosquitto on a free port of 127.0.0.1 (started and
stopped here), `bloxcam serve` tables replaying recorded games and publishing, `bloxcam hub`,
and an independent paho subscriber with a persistent session that checks, by ``seq``, that
every event arrives exactly once after dedupe even when the broker restarts mid-game.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mqtt_helpers import (Broker, Subscriber, eventually_equal, hub_process, mosquitto_path, mqtt_table,
                          self_signed_certificate, wait_for)
from service_helpers import FIXTURES, PIN, chromium_path, events_in_log, http

GAME_3P = FIXTURES / "blox" / "game-3p"
GAME_2P = FIXTURES / "blox" / "game-2p"
META = {path: json.loads((path / "meta.json").read_text()) for path in (GAME_3P, GAME_2P)}
ADDED = ("table", "game_id", "committed_at")  # what the publisher adds to a logged event
SPEED = 15  # a 6-minute game in ~24 s: long enough to restart the broker in the middle

pytestmark = pytest.mark.skipif(mosquitto_path() is None, reason="needs Debian's mosquitto (scripts/setup-system.sh)")

HUB_TOURNAMENT = """
[tournament]
name = "Test cup"
[[tournament.groups]]
name = "Group A"
tables = ["table-1", "table-2"]
[tournament.groups.seats]
"table-1" = { green = "Alice", brown = "Bob", blue = "Chloe" }
"""


def deduped(messages: list[dict]) -> tuple[dict[tuple[str, int], list[dict]], int]:
    """Events per (table, game_id) after dropping repeats of a seq; also how many repeats there were."""
    seen: set[tuple[str, int, int]] = set()
    out: dict[tuple[str, int], list[dict]] = {}
    repeats = 0
    for message in messages:
        key = (message["table"], message["game_id"], message["seq"])
        if key in seen:
            repeats += 1
            continue
        seen.add(key)
        out.setdefault(key[:2], []).append({k: v for k, v in message.items() if k not in ADDED})
    return out, repeats


def logged_by_game(log: Path) -> dict[int, list[dict]]:
    db = sqlite3.connect(log)
    try:
        rows = db.execute("SELECT game_id, body FROM events ORDER BY game_id, seq").fetchall()
    finally:
        db.close()
    out: dict[int, list[dict]] = {}
    for game_id, body in rows:
        out.setdefault(game_id, []).append(json.loads(body))
    return out


def cursor(log: Path, game_id: int) -> int:
    db = sqlite3.connect(log)
    try:
        row = db.execute("SELECT seq FROM cursors WHERE name = 'mqtt' AND game_id = ?", (game_id,)).fetchone()
    finally:
        db.close()
    return row[0] if row else 0


def expected_standings(games: list[tuple[str, dict[str, int]]], seats: dict[str, dict[str, str]]) -> list[tuple]:
    """The documented rule, computed from the fixtures' true final scores (no ties in them)."""
    rows: dict[str, list[int]] = {}
    for table, scores in games:
        assert len(set(scores.values())) == len(scores), "the rule check below assumes no tied scores"
        ordered = sorted(scores, key=lambda p: -scores[p])
        for rank, player in enumerate(ordered, 1):
            name = seats.get(table, {}).get(player, f"{table}/{player}")
            row = rows.setdefault(name, [0, 0, 0])
            row[0] += len(scores) - rank + 1
            row[1] += rank == 1
            row[2] += scores[player]
    return sorted(((n, *r) for n, r in rows.items()), key=lambda x: (-x[1], -x[2], -x[3], x[0]))


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    folder = tmp_path_factory.mktemp("room")
    broker = Broker(folder / "broker")
    started = []
    try:
        subscriber = Subscriber(broker.port, "bloxcam/+/events", client_id=f"independent-{broker.port}")
        started.append(subscriber)
        hub = hub_process(folder, broker.port, HUB_TOURNAMENT)
        started.append(hub)
        tables = {
            "table-1": (mqtt_table("table-1", GAME_3P, folder, broker.port, SPEED), GAME_3P),
            "table-2": (mqtt_table("table-2", GAME_2P, folder, broker.port, SPEED), GAME_2P),
            "table-3": (mqtt_table("table-3", GAME_2P, folder, broker.port, 0), GAME_2P),
        }
        started += [t for t, _ in tables.values()]
        yield {"broker": broker, "subscriber": subscriber, "hub": hub, "tables": tables, "folder": folder}
    finally:
        for thing in reversed(started):
            try:
                (thing.close if isinstance(thing, Subscriber) else thing.stop)()
            except Exception:
                pass
        broker.stop()


def test_broker_restart_mid_game_every_event_exactly_once_by_seq(room):
    broker, subscriber, tables = room["broker"], room["subscriber"], room["tables"]
    live = [tables["table-1"][0], tables["table-2"][0]]
    wait_for(lambda: all(t.get("/api/state")["seq"] >= 15 for t in live), 30, "the games to get going")
    assert not any(t.get("/api/state")["finished"] for t in live), "the broker must go down mid-game"

    broker.stop()
    before = [t.get("/api/state")["seq"] for t in live]
    # The tables go on refereeing with the broker gone; their events wait in the game log: a
    # backlog of a few events each, waited for (however slowly a loaded machine runs the replays).
    wait_for(lambda: all(t.get("/api/state")["seq"] >= b + 5 for t, b in zip(live, before)), 30,
             "events committed while the broker is down")
    assert not any(t.get("/api/state")["finished"] for t in live)
    broker.start()

    for name, (table, fixture) in tables.items():
        state = wait_for(lambda: (s := table.get("/api/state"))["finished"] and s, 60, f"{name} to finish")
        assert state["scores"] == META[fixture]["final_scores"]
    logs = {name: logged_by_game(table.log) for name, (table, _) in tables.items()}
    want = {(name, game_id): events for name, games in logs.items() for game_id, events in games.items()}
    wait_for(lambda: deduped(subscriber.events())[0].keys() == want.keys()
             and all(len(deduped(subscriber.events())[0][k]) == len(v) for k, v in want.items()),
             30, "every event at the independent subscriber")
    messages = subscriber.events()
    received, repeats = deduped(messages)
    # Exactly once by seq: after dropping repeats (at-least-once re-sends), equal to the tables' logs, in order.
    assert received == want
    for events in received.values():
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert repeats <= 2 * 50, "re-sends are bounded by the unacknowledged batches"
    # The outbox cursor reaches the end of every game: nothing is left unsent. A table moves its
    # cursor after the broker's acknowledgement, which may come after the subscriber has the events.
    ends = {(name, game_id): events[-1]["seq"] for name, games in logs.items() for game_id, events in games.items()}
    cursors = lambda: {(n, g): cursor(tables[n][0].log, g) for n, g in ends}  # noqa: E731
    eventually_equal(cursors, ends, 30, "the outbox cursors at the end of every game")
    assert events_in_log(tables["table-1"][0].log) == logs["table-1"][1]
    # The two tables whose broker went away reconnected, and say so in their stats at the hub.
    hub = room["hub"]
    wait_for(lambda: all(hub.get(f"/api/tables/{n}")["stats"]["reconnects"] >= 1 for n in ("table-1", "table-2")),
             10, "stats after the reconnect")


def test_hub_shows_every_table_with_health_and_standings(room):
    hub, tables = room["hub"], room["tables"]

    def settled():
        views = {t["table"]: t for t in hub.get("/api/tables")}
        # Stats come every second: wait for the first one sent after the last acknowledgement.
        done = all(
            name in views and views[name]["finished"]
            and views[name]["events_received"] == len(logged_by_game(table.log)[1])
            and (views[name]["stats"] or {}).get("backlog") == 0
            for name, (table, _) in tables.items()
        )
        return done and views

    try:
        views = wait_for(settled, 30, "the hub to have every table's game")
    except TimeoutError:
        pytest.fail(f"hub: {json.dumps(hub.get('/api/tables'))[:3000]}")
    assert set(views) == set(tables)
    for name, (table, fixture) in tables.items():
        view = views[name]
        last = logged_by_game(table.log)[1][-1]
        assert view["health"] == "online" and view["online"] is True
        assert view["scores"] == META[fixture]["final_scores"]
        assert view["winners"] == META[fixture]["winners"]
        assert view["gaps"] == [] and view["first_seq"] == 1 and view["seq"] == last["seq"]
        assert view["last_action"]["kind"] == "end" and view["last_action"]["seq"] == last["seq"]
        assert "game over" in view["last_action"]["text"]
        assert view["stats"] is not None and view["stats"]["backlog"] == 0
    events = hub.get("/api/tables/table-2/events?after=260")
    assert [e["seq"] for e in events] == list(range(261, 269)) and all(e["text"] for e in events)

    standings = hub.get("/api/standings")
    (group,) = standings["groups"]
    assert group["group"] == "Group A" and group["games"] == 2
    seats = {"table-1": {"green": "Alice", "brown": "Bob", "blue": "Chloe"}}
    want = expected_standings([("table-1", META[GAME_3P]["final_scores"]), ("table-2", META[GAME_2P]["final_scores"])],
                              seats)
    got = [(r["player"], r["ranking_points"], r["wins"], r["game_points"]) for r in group["rows"]]
    assert got == want
    assert [r["place"] for r in group["rows"]] == list(range(1, len(want) + 1))


def test_hub_page_in_a_browser(room):
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = chromium_path()
    if executable is None:
        pytest.fail("Chromium is not installed: scripts/setup-system.sh installs Debian's chromium")
    args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=args, headless=True)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
            page.goto(room["hub"].url + "/")
            page.wait_for_function("document.querySelectorAll('.table-card').length === 3", timeout=15000)
            card = page.locator('.table-card[data-table="table-2"]')
            for player, points in META[GAME_2P]["final_scores"].items():
                assert card.locator(f'tr[data-player="{player}"] .points').text_content() == str(points)
            assert "Game over" in card.locator(".game").text_content()
            assert card.locator(".last").text_content().startswith("game over: 1. yellow 81")
            assert card.locator(".badge").text_content() == "online"
            rows = page.locator('#standings .group[data-group="Group A"] tbody tr')
            assert rows.count() == 5 and rows.first.get_attribute("data-player") == "Chloe"
            # A change without the PIN is refused on the page, in words.
            page.click("#reset")
            page.wait_for_function("document.getElementById('answer').textContent.includes('PIN')", timeout=5000)
            assert page.locator('#standings tbody tr').count() == 5
        finally:
            browser.close()


def test_hub_changes_need_the_pin_and_bad_requests_say_why(room):
    url = room["hub"].url
    assert http("POST", url + "/api/standings/reset", {})[0] == 401
    assert http("POST", url + "/api/standings/reset", {}, pin="9999")[0] == 403
    assert http("DELETE", url + "/api/tables/table-3")[0] == 401
    status, body = http("POST", url + "/api/standings/reset", {"group": "Group Z"}, pin=PIN)
    assert status == 404 and "Group Z" in body["detail"]
    status, body = http("GET", url + "/api/tables/table-9")
    assert status == 404 and "table-9" in body["detail"]
    assert http("GET", url + "/api/tables/table-1/events?after=-1")[0] == 422
    assert room["hub"].get("/api/standings")["groups"][0]["games"] == 2  # nothing changed so far
    status, body = http("POST", url + "/api/standings/reset", {"group": "Group A"}, pin=PIN)
    assert status == 200 and body["removed_games"] == 2
    assert body["standings"]["groups"][0]["rows"] == []
    saved = json.loads((room["folder"] / "hub-results.json").read_text())
    assert [r["table"] for r in saved] == ["table-3"], "only the group's games are reset; table-3 is in no group"


def test_a_table_that_dies_is_shown_offline_by_its_last_will(room):
    hub = room["hub"]
    table3, _ = room["tables"]["table-3"]
    table2, _ = room["tables"]["table-2"]
    table3.kill()  # no goodbye: the broker publishes the will
    wait_for(lambda: hub.get("/api/tables/table-3")["health"] == "offline", 10, "the last will")
    table2.stop()  # a clean stop says offline itself
    wait_for(lambda: hub.get("/api/tables/table-2")["health"] == "offline", 10, "the offline status")
    assert hub.get("/api/tables/table-1")["health"] == "online"
    assert hub.get("/api/health")["tables"] == {"table-1": "online", "table-2": "offline", "table-3": "offline"}


def test_outbox_survives_an_unreachable_broker_and_a_kill(tmp_path):
    """Referee a whole game with no broker, kill -9, restart (a second game); all is published in order later."""
    broker = Broker(tmp_path / "broker")
    subscriber = Subscriber(broker.port, "outbox/+/events", client_id="outbox-check")
    broker.stop()
    table = mqtt_table("lonely", GAME_2P, tmp_path, broker.port, speed=0, prefix="outbox")
    try:
        wait_for(lambda: table.get("/api/state")["finished"], 30, "the game without a broker")
        assert cursor(table.log, 1) == 0
        table.kill()
        table = mqtt_table("lonely", GAME_2P, tmp_path, broker.port, speed=0, prefix="outbox")
        state = wait_for(lambda: (s := table.get("/api/state"))["finished"] and s, 30, "the second game")
        assert state["game_id"] == 2 and state["scores"] == META[GAME_2P]["final_scores"]
        logs = logged_by_game(table.log)
        assert subscriber.events() == []
        broker.start()
        want = {("lonely", g): events for g, events in logs.items()}
        # The table retries the broker with a backoff of up to 30 s: the deadline allows one full wait.
        wait_for(lambda: {k: len(v) for k, v in deduped(subscriber.events())[0].items()}
                 == {k: len(v) for k, v in want.items()}, 60, "the backlog of both games")
        messages = subscriber.events()
        received, _ = deduped(messages)
        assert received == want
        # In order: the first game's events, then the second's, each by seq.
        firsts = list(dict.fromkeys((m["game_id"], m["seq"]) for m in messages))
        assert firsts == sorted(firsts)
        # The table moves its cursor once the broker has acknowledged a batch, which can be after
        # the subscriber has the batch: wait for the cursor itself, then check it.
        cursors = lambda: (cursor(table.log, 1), cursor(table.log, 2))  # noqa: E731
        eventually_equal(cursors, (len(logs[1]), len(logs[2])), 30, "the outbox cursors of both games")
        assert all("committed_at" not in m for m in messages if m["game_id"] == 1), "game 1 was committed before the kill"
    finally:
        table.stop()
        subscriber.close()
        broker.stop()


def test_broker_credentials(tmp_path):
    broker = Broker(tmp_path / "broker", passwords={"table": "s3cret", "hub": "h0b"})
    hub = hub_process(tmp_path, broker.port, username="hub", password="wrong")
    table = mqtt_table("guarded", GAME_2P, tmp_path, broker.port, speed=0, username="table", password="s3cret")
    try:
        probe = Subscriber(broker.port, "bloxcam/+/status", client_id="probe", username="hub", password="h0b")
        wait_for(lambda: b"online" in probe.payloads("/status"), 10, "the table, with its credentials, online")
        probe.close()
        # The hub has tried the broker and been refused (not merely not tried yet).
        eventually_equal(lambda: "refused" in hub.output.read_text(), True, 30, "the hub refused by the broker")
        assert hub.get("/api/health")["ok"] is False and hub.get("/api/tables") == []
    finally:
        table.stop()
        hub.stop()
        broker.stop()


def test_tls_broker_with_certificate_checks(tmp_path):
    """Table and hub verify the broker's certificate (table: system trust store, here SSL_CERT_FILE; hub: ca_file)."""
    cert, key = self_signed_certificate(tmp_path)
    broker = Broker(tmp_path / "broker", tls=(cert, key))
    hub = hub_process(tmp_path, broker.port, ca_file=cert)
    secure = mqtt_table("secure", GAME_2P, tmp_path, broker.port, speed=0, tls=True, env={"SSL_CERT_FILE": str(cert)})
    plain = mqtt_table("plain", GAME_2P, tmp_path, broker.port, speed=0)  # speaks plain MQTT to a TLS port
    try:
        view = wait_for(lambda: (v := {t["table"]: t for t in hub.get("/api/tables")}).get("secure", {}).get("finished")
                        and v["secure"], 20, "the TLS table at the hub")
        assert view["events_received"] == 268 and view["health"] == "online"
        assert hub.get("/api/health")["ok"] is True
        assert [t["table"] for t in hub.get("/api/tables")] == ["secure"]
    finally:
        plain.stop()
        secure.stop()
        hub.stop()
        broker.stop()


# ---------------------------------------------------------------------------- the hub's rules, in process


def make_hub(tmp_path, tournament: str = HUB_TOURNAMENT):
    import tomllib

    from service.hub import Hub, parse_hub_config

    text = f'[broker]\nprefix = "room/a"\n[hub]\npin = "2468"\nresults = "{tmp_path / "results.json"}"\n' + tournament
    return Hub(parse_hub_config(tomllib.loads(text), tmp_path / "hub.toml"), clock=lambda: 1000.0)


def event_message(table: str, game_id: int, seq: int, kind: str = "action", **fields) -> tuple[str, bytes]:
    body = {"seq": seq, "t": float(seq), "game": "blox", "kind": kind, "table": table, "game_id": game_id, **fields}
    return f"room/a/{table}/events", json.dumps(body).encode()


def test_hub_dedupes_by_table_game_and_seq_and_reports_gaps(tmp_path):
    hub = make_hub(tmp_path)
    seen = []
    hub.subscribe(lambda name, data: seen.append((name, data)))
    for seq in (1, 2, 2, 3, 6, 3, 7, 5):
        hub.handle(*event_message("table-1", 1, seq, player="green", action={"type": "exchange", "cards": []}))
    hub.handle(*event_message("table-2", 1, 2))  # another table's seq 2 is not a duplicate
    hub.handle(*event_message("table-1", 2, 1, kind="phase", phase=1))  # nor is seq 1 of the next game
    view = hub.tables["table-1"]
    assert [e["seq"] for e in view.recent if e["game_id"] == 1] == [1, 2, 3, 6, 7, 5]
    assert view.games[1].gaps() == [[4, 4]] and view.games[1].duplicates == 2
    assert [d["seq"] for n, d in seen if n == "event"] == [1, 2, 3, 6, 7, 5, 2, 1]
    assert hub.tables["table-2"].games[1].gaps() == []  # joined late at seq 2: not a gap
    summary = view.summary(1000.0)
    assert summary["game_id"] == 2 and summary["seq"] == 1 and summary["duplicates"] == 2
    assert summary["last_action"]["seq"] == 5
    # Malformed messages and foreign topics are counted or ignored, never fatal.
    hub.handle("room/a/table-1/events", b"{not json")
    hub.handle("room/a/table-1/events", json.dumps({"seq": "x", "game_id": 1}).encode())
    hub.handle("room/b/table-1/events", event_message("table-1", 1, 4)[1])
    hub.handle("room/a/table-1/status", b"maybe")
    assert hub.malformed == 3 and view.games[1].gaps() == [[4, 4]]


def test_hub_state_never_steps_back_and_status_gives_health(tmp_path):
    hub = make_hub(tmp_path)
    state = lambda game_id, seq, **kw: json.dumps({"game_id": game_id, "seq": seq, "game": "blox", **kw}).encode()  # noqa: E731
    hub.handle("room/a/t/state", state(1, 10, scores={"green": 3}))
    hub.handle("room/a/t/state", state(1, 8, scores={"green": 1}))  # an older retained copy
    assert hub.tables["t"].state["scores"] == {"green": 3}
    hub.handle("room/a/t/state", state(2, 1, scores={"green": 0}))
    assert hub.tables["t"].state["game_id"] == 2
    assert hub.tables["t"].health(1000.0) == "unknown"
    hub.handle("room/a/t/status", b"online")
    hub.handle("room/a/t/stats", json.dumps({"interval": 1.0, "faults": 2, "backlog": 0}).encode())
    assert hub.tables["t"].health(1000.0) == "online" and hub.tables["t"].health(1009.0) == "silent"
    hub.handle("room/a/t/status", b"offline")
    assert hub.tables["t"].summary(1000.0)["health"] == "offline"


def test_standings_rule_ties_seats_and_reset(tmp_path):
    """n - rank + 1 points per finished game; ties share a rank; order by points, wins, game points."""
    hub = make_hub(tmp_path)

    def end(table, game_id, ranking):
        hub.handle(*event_message(table, game_id, 50, kind="end", ranking=[
            {"rank": r, "player": p, "points": pts} for r, p, pts in ranking]))

    end("table-1", 1, [(1, "blue", 54), (2, "green", 30), (3, "brown", 20)])
    end("table-1", 1, [(1, "blue", 54), (2, "green", 30), (3, "brown", 20)])  # a re-send: counted once
    end("table-2", 1, [(1, "yellow", 30), (1, "blue", 30)])  # a tie: both first, both 2 points
    end("table-2", 2, [(1, "blue", 25), (2, "yellow", 24)])
    end("table-9", 1, [(1, "red", 99), (2, "blue", 1)])  # not in any group
    rows = hub.standings()["groups"][0]["rows"]
    got = [(r["place"], r["player"], r["ranking_points"], r["wins"], r["game_points"], r["games"]) for r in rows]
    assert got == [
        (1, "table-2/blue", 4, 2, 55, 2),
        (2, "Chloe", 3, 1, 54, 1),  # equal on all three with table-2/yellow: they share the place
        (2, "table-2/yellow", 3, 1, 54, 2),
        (4, "Alice", 2, 0, 30, 1),
        (5, "Bob", 1, 0, 20, 1),
    ]
    # Saved, so a restarted hub keeps its standings.
    assert make_hub(tmp_path).standings() == hub.standings()
    assert hub.reset_standings("Group A") == 3
    assert hub.standings()["groups"][0]["rows"] == [] and len(hub.results) == 1


def test_hub_configuration_errors_say_what_to_fix(tmp_path):
    import tomllib

    from service.hub import HubConfigError, parse_hub_config

    def error(text: str) -> str:
        with pytest.raises(HubConfigError) as info:
            parse_hub_config(tomllib.loads(text), tmp_path / "hub.toml")
        return str(info.value)

    assert "prefix" in error('[broker]\nprefix = "a/#"')
    assert "port" in error("[broker]\nport = 70000")
    assert "pin" in error('[hub]\npin = "12"')
    assert "unknown key" in error('[hub]\nbogus = 1')
    assert "ca_file" in error('[broker]\ntls = true\nca_file = "nope.pem"')
    two = '[tournament]\n[[tournament.groups]]\nname = "A"\ntables = ["t1"]\n[[tournament.groups]]\nname = "B"\ntables = ["t1"]'
    assert "'t1' is in groups 'A' and 'B'" in error(two)
    assert "seats" in error('[tournament]\n[[tournament.groups]]\nname = "A"\ntables = ["t1"]\nseats = { t2 = { green = "X" } }')
    assert "table name" in error('[tournament]\n[[tournament.groups]]\nname = "A"\ntables = ["a/b"]')


def test_a_table_name_unusable_in_topics_is_refused(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--recording", str(GAME_2P), "--log", str(tmp_path / "t.sqlite"),
         "--mqtt-host", "127.0.0.1", "--table-name", "room/1", "--port", "0"],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 2 and "table name 'room/1'" in done.stderr
