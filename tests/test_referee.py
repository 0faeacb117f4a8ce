"""The referee on recorded Blox games, and the `bloxcam replay` command as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.blox import BloxGame
from service.recording import load_recording
from service.referee import BloxReferee

FIXTURES = Path(__file__).parent / "fixtures" / "blox"


@pytest.mark.parametrize("name", ["game-3p", "game-2p"])
def test_recorded_game_reaches_the_true_final_scores(name):
    recording = load_recording(FIXTURES / name)
    referee = BloxReferee(recording.players)
    events = [e for line in recording.lines for e in referee.feed(line)]
    assert referee.state.scores() == recording.meta["final_scores"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    kinds = [e["kind"] for e in events]
    assert kinds.count("action") == recording.meta["turns"]
    assert kinds.count("illegal") == 1 and kinds.count("unrecognised") == 0
    illegal = next(e for e in events if e["kind"] == "illegal")
    assert illegal["rule"].startswith("R-BLOX-") and illegal["why"]
    assert events[-1]["kind"] == "end" and events[-1]["winners"] == recording.meta["winners"]
    # Nothing is committed from a frame that is not stable.
    assert referee.stats.unstable == sum(1 for l in recording.lines if "game" in l and not l["stable"])


def base_referee():
    import random

    game = BloxGame(["green", "brown"])
    full = game.new_initial_state(random.Random(9))
    referee = BloxReferee(["green", "brown"])
    referee.feed({"game": "blox", "t": 0, "stable": True, "state": full.observation_state()})
    return referee, full


def obs(state, stable=True, t=1.0):
    return {"game": "blox", "t": t, "stable": stable, "state": {"cells": state.observation_state()["cells"]}}


def test_unstable_frames_never_move_the_engine():
    referee, full = base_referee()
    place = next(a for a in full.legal_actions() if a.type == "place")
    full.apply_action(place)
    assert referee.feed(obs(full, stable=False)) == []
    assert referee.state.turn == 0
    [event] = referee.feed(obs(full))
    assert event["kind"] == "action" and event["action"]["to"] == list(place.to)


def test_illegal_change_waits_for_the_board_to_be_put_back():
    referee, full = base_referee()
    before = full.clone()
    from engine.blox import Figure

    place = next(a for a in full.legal_actions() if a.type == "place")
    full.apply_action(place)
    empty = next(p for p in full.positions() if full.cell(p) is None and p != place.to)
    full.board = full._with({empty: Figure("green")})  # green puts a second figure down at once
    [event] = referee.feed(obs(full))
    assert event["kind"] in ("unrecognised", "illegal")
    assert referee.feed(obs(full)) == []  # reported once
    assert referee.state.turn == 0
    [back] = referee.feed(obs(before))
    assert back["kind"] == "correction"


def test_declared_exchange_and_wrong_player():
    referee, _ = base_referee()
    [wrong] = referee.feed({"t": 2, "declare": {"player": "brown", "action": {"type": "exchange", "cards": ["grey"]}}})
    assert wrong["kind"] == "illegal" and wrong["rule"] == "R-BLOX-16"
    [ok] = referee.feed({"t": 2, "declare": {"player": "green", "action": {"type": "exchange", "cards": ["grey"]}}})
    assert ok["kind"] == "action" and referee.state.current.color == "brown"
    [bad] = referee.feed({"t": 3, "declare": {"player": "brown", "action": {"type": "teleport"}}})
    assert bad["kind"] == "illegal" and "unknown action type" in bad["why"]


def test_wrong_game_is_a_fault_not_a_crash():
    referee, _ = base_referee()
    [event] = referee.feed({"game": "bloxo", "t": 1, "stable": True, "state": {}})
    assert event["kind"] == "fault"


def test_replay_command_prints_events_and_the_summary():
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "replay", str(FIXTURES / "game-2p"), "--json"],
        capture_output=True, text=True, check=True,
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["kind"] == "end"
    assert "match the recording" in result.stderr
    human = subprocess.run(
        [sys.executable, "-m", "service.cli", "replay", str(FIXTURES / "game-2p")],
        capture_output=True, text=True, check=True,
    )
    assert "game over" in human.stdout and "ILLEGAL (R-BLOX-" in human.stdout


def test_replay_command_reports_a_missing_recording_clearly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "replay", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "no such file or folder" in result.stderr and "Traceback" not in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "truth.jsonl").write_text('{"game": "blox"}\nnot json\n')
    result = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(broken)], capture_output=True, text=True)
    assert result.returncode == 2 and "truth.jsonl:2: not JSON" in result.stderr


def test_two_turns_seen_in_one_view_are_both_named():
    referee, full = base_referee()
    first = next(a for a in full.legal_actions() if a.type == "place")
    full.apply_action(first)
    second = next(a for a in full.legal_actions() if a.type == "place" and a.to != first.to)
    full.apply_action(second)
    events = referee.feed(obs(full))
    assert [(e["kind"], e["player"]) for e in events] == [("action", "green"), ("action", "brown")]
    assert referee.state.board == full.board


def test_impossible_readings_are_not_taken_for_changes():
    import random

    game = BloxGame(["green", "brown"])
    full = game.new_initial_state(random.Random(9))
    referee = BloxReferee(["green", "brown"])
    referee.feed({"game": "blox", "t": 0, "stable": True, "state": full.observation_state()})
    tower_at = next(p for p, _ in full.towers())
    seen = full.observation_state()["cells"]
    seen[tower_at[0]][tower_at[1]] = {"tower": ["grey"] * full.cell(tower_at).height}  # colours misread
    assert referee.feed({"game": "blox", "t": 1, "stable": True, "state": {"cells": seen}}) == []
    place = next(a for a in full.legal_actions() if a.type == "place")
    full.apply_action(place)
    seen = full.observation_state()["cells"]
    other = next(p for p, _ in full.towers() if p != tower_at)
    seen[other[0]][other[1]] = None  # a tower read as an empty space
    [event] = referee.feed({"game": "blox", "t": 2, "stable": True, "state": {"cells": seen}})
    assert event["kind"] == "action" and event["misread"] == [list(other)]
    doubtful = full.observation_state()["cells"]
    confidence = [[1.0] * 9 for _ in range(9)]
    r, c = next(p for p in full.positions() if full.cell(p) is None)
    doubtful[r][c] = {"figure": "brown"}
    confidence[r][c] = 0.2
    assert referee.feed({"game": "blox", "t": 3, "stable": True, "state": {"cells": doubtful},
                         "cell_confidence": confidence}) == []
