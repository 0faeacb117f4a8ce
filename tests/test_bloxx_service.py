"""The Bloxx! referee (service/referees/bloxx.py) and the live service refereeing Bloxx!.

Rolls come from the camera, placements from the phones (or sheet photos); the engine
checks each placement at once (R-BLOXX-2..5), forfeits a player who cannot draw
(R-BLOXX-6), awards row bonuses (R-BLOXX-7) and ends the game (R-BLOXX-8/9).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from engine.bloxx import BloxxGame, Roll
from service.recording import load_recording
from service.referees.bloxx import BloxxReferee, sheet_observation
from service_helpers import FIXTURES, PIN, Server, events_in_log, http

GAME = FIXTURES / "bloxx" / "game-3p"
FIRST_ROLL = FIXTURES / "bloxx" / "first-roll"
META = json.loads((GAME / "meta.json").read_text())
PLAYERS = ["ann", "ben", "cleo"]


def feed_all(referee, lines):
    return [e for line in lines for e in referee.feed(line)]


def dice(white, black, stable=True, t=1.0):
    return {"game": "bloxx", "t": t, "stable": stable, "state": {"dice": {"white": white, "black": black}}}


def declare(player, action, t=2.0):
    return {"t": t, "declare": {"player": player, "action": action}}


def rolled(white="w3", black="b1"):
    """A referee after ann's first roll (white w3 = L-tromino, black b1 = 2x2 square)."""
    referee = BloxxReferee(PLAYERS)
    [event] = referee.feed(dice(white, black))
    assert event["kind"] == "action" and event["action"]["dice"] == {"white": white, "black": black}
    return referee


# ---------------------------------------------------------------------- the recorded game


def test_recorded_game_reaches_the_true_final_scores_r_bloxx_8_9():
    recording = load_recording(GAME)
    referee = BloxxReferee(recording.players)
    events = feed_all(referee, recording.lines)
    assert referee.state.scores() == META["final_scores"]
    assert {n: referee.state.score(i).to_json() for i, n in enumerate(PLAYERS)} == META["score_details"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    actions = [e["action"]["type"] for e in events if e["kind"] == "action"]
    assert actions.count("roll") == META["rolls"] and actions.count("place") == META["placements"]
    assert actions.count("forfeit") == META["forfeits"]  # nobody declared them: R-BLOXX-6
    kinds = [e["kind"] for e in events]
    assert kinds.count("illegal") == META["illegal"] and kinds.count("unrecognised") == META["unrecognised"]
    illegal = next(e for e in events if e["kind"] == "illegal")
    assert illegal["rule"] == "R-BLOXX-3" and "bottom row" in illegal["why"]
    flagged = next(e for e in events if e["kind"] == "unrecognised")
    assert flagged["source"] == "sheet photo" and len(flagged["squares"]) == 1
    # Placements from all three inputs: tapped squares, a whole sheet, a photo.
    sources = {e["source"] for e in events if e["kind"] == "action" and e["action"]["type"] == "place"}
    assert sources == {"page", "sheet photo"}
    assert sum(1 for e in events if e.get("source") == "sheet photo" and e["kind"] == "action") == META["photos"]
    # Row bonuses as they are won add up to the final bonus of each player (R-BLOXX-7).
    won = {p: 0 for p in PLAYERS}
    for e in events:
        for row in e.get("rows", []):
            won[e["player"]] += row["points"]
    assert won == {p: META["score_details"][p]["bonus"] for p in PLAYERS} and any(won.values())
    # R-BLOXX-9: the game ends after a turn in which two or more players could not place.
    end = events[-1]
    assert end["kind"] == "end" and end["winners"] == META["winners"]
    last_turn = events[max(i for i, e in enumerate(events) if e["kind"] == "action" and e["action"]["type"] == "roll"):]
    assert sum(1 for e in last_turn if e["kind"] == "action" and e["action"]["type"] == "forfeit") >= 2
    assert referee.stats.unstable == sum(1 for l in recording.lines if "game" in l and not l["stable"])


def test_inputs_that_caused_no_event_are_not_needed_to_rebuild_the_game():
    """The game log keeps only inputs that caused events; a restart re-feeds just those."""
    lines = load_recording(GAME).lines
    live = BloxxReferee(PLAYERS)
    kept, events = [], []
    for line in lines:
        new = live.feed(line)
        if new:
            kept.append(line)
            events += new
    rebuilt = BloxxReferee(PLAYERS)
    assert feed_all(rebuilt, kept) == events
    assert rebuilt.snapshot() | {"sheet_checks": None} == live.snapshot() | {"sheet_checks": None}
    assert len(kept) < len(lines)


def test_replay_command_reaches_the_true_final_scores():
    result = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(GAME), "--json"],
                            capture_output=True, text=True, check=True)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["kind"] == "end" and events[-1]["scores"] == META["final_scores"]
    assert "match the recording" in result.stderr
    human = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(GAME)],
                           capture_output=True, text=True, check=True)
    assert "ILLEGAL (R-BLOXX-3) ann: the first shape must touch the bottom row" in human.stdout
    assert "completes the" in human.stdout and "cross instead of the circle" in human.stdout


def test_served_game_reaches_the_true_final_scores_and_survives_kill_9(tmp_path):
    log = tmp_path / "table.sqlite"
    server = Server(GAME, log, speed=30)
    try:
        deadline = time.time() + 60
        while server.get("/api/state")["seq"] < 40:
            assert time.time() < deadline
            time.sleep(0.05)
        page = urlopen_text(server.url + "/")
        assert "Bloxx!" in page and 'id="mysheet"' in page  # the Bloxx! page for a Bloxx! table
    finally:
        server.kill()
    committed = events_in_log(log)
    assert committed and committed[-1]["kind"] != "end", "killed in the middle of the game"
    restarted = Server(GAME, log, speed=0)
    try:
        state = restarted.wait_finished()
        events = restarted.get("/api/events?after=0&limit=5000")
    finally:
        restarted.stop()
    assert state["game"] == "bloxx" and state["finished"] and state["winners"] == META["winners"]
    assert state["scores"] == META["final_scores"]
    assert {p: d["bonus"] for p, d in state["score_details"].items()} == {
        p: d["bonus"] for p, d in META["score_details"].items()}
    stripped = [{k: v for k, v in e.items() if k != "text"} for e in events]
    assert stripped[: len(committed)] == committed, "every event committed before the kill is kept"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["text"] and "{" not in e["text"] for e in events), "every event in plain words"


def urlopen_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


# ---------------------------------------------------------------------- the phone API


def test_phone_placements_through_the_api_need_the_pin_and_get_verdicts(tmp_path):
    server = Server(FIRST_ROLL, tmp_path / "table.sqlite", speed=0)
    try:
        state = server.wait_finished()
        assert state["roll"] == {"white": "w3", "black": "b1"} and state["pending"] == ["ann"]
        assert state["seats"]["ann"]["status"] == "play" and state["seats"]["ben"]["status"] == "wait"
        place = {"player": "ann", "action": {"type": "place", "squares": [[8, 0], [8, 1], [9, 1]], "circle": [8, 0]}}
        status, body = http("POST", server.url + "/api/declare", place)
        assert status == 401
        # R-BLOXX-6: ben must wait for the active player; nothing changes.
        status, body = http("POST", server.url + "/api/declare", {**place, "player": "ben"}, pin=PIN)
        assert status == 409 and body["detail"]["rule"] == "R-BLOXX-6" and "wait" in body["detail"]["why"]
        # R-BLOXX-2: the circle stays where it is on the die (an end of the L, not its corner).
        corner = {"player": "ann", "action": {**place["action"], "circle": [8, 1]}}
        status, body = http("POST", server.url + "/api/declare", corner, pin=PIN)
        assert status == 409 and body["detail"]["rule"] == "R-BLOXX-2"
        assert server.get("/api/state")["sheets"] == state["sheets"]
        status, body = http("POST", server.url + "/api/declare", place, pin=PIN)
        assert status == 200
        [event] = [e for e in body["events"] if e["kind"] == "action"]
        assert event["action"]["mark"] == "circle" and event["gaps"] == [[9, 0]]  # R-BLOXX-4
        assert body["state"]["sheets"]["ann"][8] == "ox....." and body["state"]["sheets"]["ann"][9] == "#x....."
        # R-BLOXX-5: ben takes ann's die and draws a cross instead of the circle.
        status, body = http("POST", server.url + "/api/declare",
                            {"player": "ben", "action": {"type": "place", "squares": [[9, 5], [9, 6], [8, 6]]}}, pin=PIN)
        assert status == 200
        [event] = [e for e in body["events"] if e["kind"] == "action"]
        assert event["action"]["mark"] == "cross" and "cross instead of the circle" in event["text"]
        status, body = http("POST", server.url + "/api/undo", pin=PIN)
        assert status == 200 and body["state"]["sheets"]["ben"][9] == "......."
        # A new game from the page: the table serves the page of the game being played.
        status, body = http("POST", server.url + "/api/games", {"game": "blox", "players": ["green", "brown"]}, pin=PIN)
        assert status == 200 and body["state"]["game"] == "blox" and 'id="board"' in urlopen_text(server.url + "/")
        status, body = http("POST", server.url + "/api/games", {"game": "bloxx", "players": ["kim", "lou"]}, pin=PIN)
        assert status == 200 and body["state"]["players"] == ["kim", "lou"] and body["state"]["phase"] == "roll"
        assert 'id="mysheet"' in urlopen_text(server.url + "/")
        status, body = http("POST", server.url + "/api/games", {"game": "bloxx", "players": ["kim", "kim"]}, pin=PIN)
        assert status == 422 and "distinct" in body["detail"]
    finally:
        server.stop()


# ---------------------------------------------------------------------- the referee's rules


def test_illegal_placements_name_the_rule_and_change_nothing():
    referee = rolled()
    before = referee.snapshot()
    cases = [
        ("ann", {"type": "place", "squares": [[0, 0], [1, 0], [1, 1]], "circle": [1, 1]}, "R-BLOXX-3", "bottom row"),
        ("ann", {"type": "place", "squares": [[9, 0], [9, 1], [9, 2]]}, "R-BLOXX-2", "not the shape"),
        ("ann", {"type": "place", "squares": [[9, 0], [9, 1], [8, 0]], "circle": [9, 0]}, "R-BLOXX-2", "belongs on"),
        ("ann", {"type": "place", "squares": [[9, 6], [9, 7], [8, 6]]}, "R-BLOXX-3", "outside the sheet"),
        ("ben", {"type": "place", "squares": [[8, 0], [8, 1], [9, 0], [9, 1]]}, "R-BLOXX-6", "must wait"),
        ("ann", {"type": "forfeit"}, "R-BLOXX-6", "must place"),
        ("zoe", {"type": "forfeit"}, "R-BLOXX-6", "no seat"),
        ("ann", {"type": "teleport"}, "R-BLOXX-6", "unknown"),
    ]
    for player, action, rule, words in cases:
        [event] = referee.feed(declare(player, action))
        assert event["kind"] == "illegal" and event["rule"] == rule and words in event["why"], (action, event)
        assert referee.snapshot() == before, f"{action} changed the state"


def test_circle_must_be_marked_when_the_squares_leave_it_open_r_bloxx_2():
    referee = rolled()
    squares = [[8, 0], [9, 0], [9, 1]]  # the L: its circle may be at either end
    [event] = referee.feed(declare("ann", {"type": "place", "squares": squares}))
    assert event["kind"] == "illegal" and "mark the circle" in event["why"]
    [event] = referee.feed(declare("ann", {"type": "place", "squares": squares, "circle": [9, 1]}))
    assert event["kind"] == "action" and event["action"]["circle"] == [9, 1] and event["gaps"] == []


def test_placement_verdict_names_gaps_cross_circle_and_value():
    referee = rolled()
    [ann] = referee.feed(declare("ann", {"type": "place", "squares": [[8, 0], [8, 1], [9, 0], [9, 1]], "circle": [8, 1]}))
    assert ann["action"]["die"] == "black" and ann["action"]["mark"] == "circle" and ann["action"]["value"] == 2
    # ben takes ann's die: a cross instead of the circle, wherever it would be (R-BLOXX-5)
    [ben] = referee.feed(declare("ben", {"type": "place", "squares": [[9, 2], [9, 3], [8, 2], [8, 3]]}))
    assert ben["action"]["mark"] == "cross" and ben["action"]["value"] == 0
    # cleo takes the other die; its overhang leaves (9,3) empty under a drawn square: a gap (R-BLOXX-4)
    [cleo, phase] = referee.feed(declare("cleo", {"type": "place", "squares": [[8, 3], [8, 4], [9, 4]], "circle": [8, 3]}))
    assert cleo["action"]["die"] == "white" and cleo["action"]["mark"] == "circle"
    assert referee.state.sheets[2].rows()[9] == "...#x.."
    assert cleo["gaps"] == [[9, 3]]
    assert phase["kind"] == "phase" and phase["active"] == "ben" and referee.snapshot()["phase"] == "roll"


def test_declared_sheet_is_judged_by_table_mode():
    referee = rolled()
    game = BloxxGame.create(PLAYERS)
    truth = game.new_initial_state()
    truth.apply_action(Roll(("w3", "b1")))
    good = next(truth.placements(0, "black"))
    after = truth.clone()
    after.apply_action(good)
    rows = after.sheets[0].rows()
    wrong = [r.replace("o", "x") for r in rows]  # the circle drawn as a cross
    [event] = referee.feed(declare("ann", {"type": "sheet", "sheet": wrong}))
    assert event["kind"] == "illegal" and event["rule"] == "R-BLOXX-5"
    [event] = referee.feed(declare("ann", {"type": "sheet", "sheet": rows}))
    assert event["kind"] == "action" and referee.state.sheets[0].rows() == rows


def test_dice_stale_roll_is_not_a_new_roll_and_an_early_reroll_is_flagged():
    referee = rolled("w1", "b1")
    assert referee.feed(dice("w1", "b1", t=1.5)) == []  # the same roll, still lying there
    [early] = referee.feed(dice("w2", "b1", t=2))
    assert early["kind"] == "illegal" and early["rule"] == "R-BLOXX-6" and "ann" in early["why"]
    assert referee.feed(dice("w2", "b1", t=2.5)) == []  # reported once
    [back] = referee.feed(dice("w1", "b1", t=3))
    assert back["kind"] == "correction" and referee.state.roll == ("w1", "b1")
    for i, (p, squares) in enumerate([("ann", [[9, 0], [9, 1]]), ("ben", [[9, 0], [9, 1]]), ("cleo", [[9, 0], [9, 1]])]):
        referee.feed(declare(p, {"type": "place", "squares": squares, "circle": [9, 0], "die": "white"}, t=4 + i))
    assert referee.state.roll is None and referee.state.turn == 1
    assert referee.feed(dice("w1", "b1", t=8)) == [], "last turn's dice are not this turn's roll"
    assert referee.feed(dice("w1", "b1", stable=False, t=9)) == [
        {"seq": referee.seq, "t": 9.0, "game": "bloxx", "kind": "phase", "phase": "rolling", "turn": 2, "active": "ben"}]
    [roll] = referee.feed(dice("w1", "b1", t=10))  # the same faces again, after a real roll
    assert roll["kind"] == "action" and roll["player"] == "ben"


def test_sheet_photo_flags_disagreeing_squares_and_ignores_occluded_ones():
    referee = rolled()
    referee.feed(declare("ann", {"type": "place", "squares": [[8, 0], [8, 1], [9, 0], [9, 1]], "circle": [8, 0]}))
    rows = referee.state.sheets[0].rows()
    misread = list(rows)
    misread[0] = "x" + rows[0][1:]
    photo = {"game": "bloxx", "t": 5, "stable": True, "player": "ann", "state": {"sheet": misread}}
    [flag] = referee.feed(photo)
    assert flag["kind"] == "unrecognised" and flag["squares"] == [{"at": [0, 0], "read": "x", "engine": "."}]
    assert referee.feed(photo) == [] and referee.snapshot()["waiting"]
    assert referee.feed({**photo, "occluded": [[0, 0]]}) == [
        {"seq": referee.seq, "t": 5.0, "game": "bloxx", "kind": "correction", "player": "ann",
         "why": "ann's sheet agrees with the record again", "scores": referee.state.scores()}]
    assert referee.snapshot()["sheet_checks"]["ann"]["agrees"] and referee.state.sheets[0].rows() == rows


def test_sheet_reader_output_hook_uses_square_confidence():
    referee = rolled()
    referee.feed(declare("ann", {"type": "place", "squares": [[8, 0], [8, 1], [9, 0], [9, 1]], "circle": [8, 0]}))
    rows = referee.state.sheets[0].rows()
    misread = ["xx" + rows[0][2:]] + rows[1:]
    confidence = [[0.99] * 7 for _ in rows]
    confidence[0][0] = 0.2  # the reader is unsure of (0,0): it must not contradict the record
    reading = {"sheet": misread, "square_confidence": confidence, "confidence": 0.2}
    [flag] = referee.feed(sheet_observation("ann", reading, t=6))
    assert flag["squares"] == [{"at": [0, 1], "read": "x", "engine": ".", "confidence": 0.99}]
    [fault] = referee.feed(sheet_observation("ann", {"sheet": None, "why": "no grid found"}, t=7))
    assert fault["kind"] == "fault" and "no grid found" in fault["why"]


def test_sheet_photo_of_a_new_shape_is_the_placement():
    referee = rolled()
    truth = referee.state.clone()
    place = next(truth.placements(0, "white"))
    truth.apply_action(place)
    [event] = referee.feed({"game": "bloxx", "t": 3, "stable": True, "player": "ann",
                            "state": {"sheet": truth.sheets[0].rows()}})
    assert event["kind"] == "action" and event["source"] == "sheet photo"
    assert referee.state.sheets[0] == truth.sheets[0]
    assert referee.feed({"game": "bloxx", "t": 3, "stable": False, "player": "ben",
                         "state": {"sheet": truth.sheets[0].rows()}}) == [], "only stable photos count"


def test_undo_and_correct_take_back_the_whole_input():
    referee = rolled("w6", "b6")
    state_before = referee.snapshot()
    [ann] = referee.feed(declare("ann", {"type": "place", "squares": [[9, 0], [9, 1], [9, 2], [8, 2], [7, 2]], "circle": [9, 0]}))
    assert ann["kind"] == "action"
    [undo] = referee.feed({"t": 3, "undo": True})
    assert undo["kind"] == "correction" and referee.snapshot() == state_before
    referee.feed(declare("ann", {"type": "place", "squares": [[9, 0], [9, 1], [9, 2], [8, 2], [7, 2]], "circle": [9, 0]}))
    [bad] = referee.feed({"t": 4, "correct": {"action": {"type": "place", "squares": [[0, 0], [0, 1]]}}})
    assert bad["kind"] == "illegal"
    assert referee.state.sheets[0].rows()[9] == "oxx....", "a refused correction keeps the action"
    events = referee.feed({"t": 5, "correct": {"action": {"type": "place", "squares": [[9, 4], [9, 5], [9, 6], [8, 4], [7, 4]],
                                                          "circle": [7, 4]}}})
    assert events[0]["kind"] == "correction" and referee.state.sheets[0].rows()[9] == "....xxx"
    assert events[0]["replaces"]["squares"] == [[7, 2], [8, 2], [9, 0], [9, 1], [9, 2]]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert referee.feed({"t": 6, "undo": True})[0]["kind"] == "correction"
    assert referee.feed({"t": 6, "undo": True})[0]["kind"] == "correction"  # the roll
    [nothing] = referee.feed({"t": 6, "undo": True})
    assert nothing["kind"] == "illegal" and "no action" in nothing["why"]


def test_wrong_game_and_bad_sheets_are_faults_not_crashes():
    referee = rolled()
    [wrong] = referee.feed({"game": "blox", "t": 1, "stable": True, "state": {}})
    assert wrong["kind"] == "fault"
    [nobody] = referee.feed({"game": "bloxx", "t": 1, "stable": True, "state": {"sheet": ["......."] * 10}})
    assert nobody["kind"] == "fault" and "whose sheet" in nobody["why"]
    [bad] = referee.feed({"game": "bloxx", "t": 1, "stable": True, "player": "ann", "state": {"sheet": ["..."]}})
    assert bad["kind"] == "fault" and "unreadable" in bad["why"]
    [odd] = referee.feed(dice("w9", "b1", t=2))
    assert odd["kind"] == "unrecognised" and "w9" in odd["why"]


def test_table_service_restores_a_bloxx_game_from_its_log(tmp_path):
    from service.config import GameSettings, SourceSettings, TableConfig, TableSettings
    from service.table import TableService

    config = TableConfig(table=TableSettings(log=tmp_path / "log.sqlite", pin=PIN),
                         game=GameSettings("bloxx", tuple(PLAYERS)),
                         source=SourceSettings("replay", str(GAME), 0))
    lines = load_recording(GAME).lines
    service = TableService(config)
    for line in lines[: len(lines) // 2]:
        service.feed(line)
    snap = service.snapshot()
    again = TableService(config, log=None)
    assert again.restored_events == snap["seq"]
    for key in ("sheets", "scores", "roll", "phase", "turn", "bonuses", "pending"):
        assert again.snapshot()[key] == snap[key], key
    with pytest.raises(Exception, match="chess"):
        again.start_game("chess", PLAYERS)


def test_first_roll_fixture_is_what_the_phone_tests_expect():
    recording = load_recording(FIRST_ROLL)
    referee = BloxxReferee(recording.players)
    feed_all(referee, recording.lines)
    assert referee.snapshot()["roll"] == recording.meta["roll"] and referee.state.current_player() == 0
