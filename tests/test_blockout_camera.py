"""Block Out!: where a camera watches the stack, it checks the accelerometer's falls.

An accelerometer measures motion, not load (table-kit.md): a hard knock may still pass for
a fall, and a fall may hide in a knock. The camera's still view of the stack confirms the
sensor's fall, takes it back when every block still stands (and then ends the
three-second count itself, R-BLOCKOUT-3), or catches a fall the sensor missed
(R-BLOCKOUT-4: the same player starts a new stack).
"""

from __future__ import annotations

import json

from service.referees.blockout import FALL_CONFIRM_S, BlockOutReferee
from service_helpers import FIXTURES, replay_to_end

PLAYERS = ["ann", "ben", "cleo"]
BLOCKS = [{"color": "red", "size": "large"}, {"color": "black", "size": "small"}, {"color": "yellow", "size": "medium"}]


def view(blocks: int, t: float, stable: bool = True, confidence: float = 0.95, occluded=()) -> dict:
    return {"game": "blockout", "frame": int(t * 10), "t": t, "stable": stable, "occluded": list(occluded),
            "confidence": confidence, "state": {"stack": BLOCKS[:blocks]}}


def sensor(event: str, t: float) -> dict:
    return {"kind": "stability", "event": event, "t": t}


def play(referee: BlockOutReferee, player: str, block: dict, t: float) -> list[dict]:
    return referee.feed({"t": t, "declare": {"player": player, "action": {"type": "block", "block": block}}})


def counting_with_two_blocks() -> BlockOutReferee:
    """ann's block stands alone (no count for the first block); ben's second block is counting."""
    referee = BlockOutReferee(PLAYERS)
    play(referee, "ann", BLOCKS[0], 1.0)
    referee.feed(view(1, 2.0))
    play(referee, "ben", BLOCKS[1], 3.0)
    referee.feed(sensor("placed", 3.2))
    [counting] = referee.feed(sensor("counting", 3.6))
    assert counting["event"] == "counting" and referee.state.phase.value == "counting"
    return referee


def test_a_fall_the_camera_sees_still_standing_is_taken_back_and_the_camera_ends_the_count():
    referee = counting_with_two_blocks()
    [fell] = referee.feed(sensor("fell", 4.0))
    assert fell["event"] == "fell" and fell["source"] == "sensor" and referee.state.stack == []
    assert referee.feed(view(2, 4.2, stable=False)) == [], "the blocks may still be moving"
    [back] = referee.feed(view(2, 5.0))
    assert back["kind"] == "correction" and "knock" in back["why"] and len(back["stack"]) == 2
    assert referee.state.phase.value == "counting" and referee.state.count_started == 3.6
    assert referee.stats.falls == 0 and referee.state.falls == {}
    assert referee.feed(view(2, 6.0)) == [], "the count runs until 3.0 s after it started"
    [stood] = referee.feed(view(2, 6.7))
    assert stood["event"] == "stood" and stood["source"] == "camera" and stood["player"] == "ben"
    assert referee.state.current_player == "cleo"


def test_a_fall_the_camera_confirms_stays():
    referee = counting_with_two_blocks()
    referee.feed(sensor("fell", 4.0))
    assert referee.feed(view(0, 5.5)) == []
    assert referee.state.stack == [] and referee.state.phase.value == "restart"
    assert referee.state.falls == {"ben": 1}
    # Later views of a rebuilt stack do not reopen the old fall.
    play(referee, "ben", BLOCKS[0], 7.0)
    assert referee.feed(view(1, 8.0)) == []
    assert referee.state.falls == {"ben": 1}


def test_a_late_or_unsure_view_does_not_overrule_the_sensor():
    referee = counting_with_two_blocks()
    referee.feed(sensor("fell", 4.0))
    assert referee.feed(view(2, 4.5, confidence=0.3)) == []
    assert referee.feed(view(2, 4.6, occluded=["stack"])) == []
    assert referee.feed(view(2, 4.0 + FALL_CONFIRM_S + 1)) == [], "too late to tell the fall from a rebuilt stack"
    assert referee.state.stack == [] and referee.state.falls == {"ben": 1}


def test_a_fall_the_sensor_missed_is_caught_by_the_camera():
    referee = counting_with_two_blocks()
    [fell] = referee.feed(view(1, 4.5))
    assert fell["kind"] == "stability" and fell["event"] == "fell" and fell["source"] == "camera"
    assert fell["player"] == "ben" and "1 of the stack's 2 blocks" in fell["why"]
    assert referee.state.stack == [] and referee.state.phase.value == "restart"
    # The sensor's own late fall changes nothing more.
    assert referee.feed(sensor("fell", 4.6)) == []
    assert referee.state.falls == {"ben": 1}


def test_a_declared_block_still_in_the_hand_is_not_a_fall():
    referee = BlockOutReferee(PLAYERS)
    play(referee, "ann", BLOCKS[0], 1.0)
    play(referee, "ben", BLOCKS[1], 2.0)  # declared on the page, not yet on the stack
    assert referee.state.phase.value == "placing"
    assert referee.feed(view(1, 2.5)) == []
    assert referee.feed(view(0, 3.0)) != [], "but the first block gone is a fall"


def test_without_a_camera_the_sensor_decides_alone():
    referee = BlockOutReferee(PLAYERS)
    play(referee, "ann", BLOCKS[0], 1.0)
    play(referee, "ben", BLOCKS[1], 3.0)
    referee.feed(sensor("counting", 3.6))
    [fell] = referee.feed(sensor("fell", 4.0))
    assert fell["event"] == "fell" and fell["source"] == "sensor"
    [new_stack] = play(referee, "ben", BLOCKS[2], 6.0)
    assert new_stack["kind"] == "action" and referee.state.falls == {"ben": 1}


def test_a_restored_table_decides_as_the_live_one(tmp_path):
    """The game log holds the inputs that caused events; a restart re-feeds them to the same result."""
    from service.config import GameSettings, SourceSettings, TableConfig, TableSettings
    from service.table import TableService

    config = TableConfig(table=TableSettings(log=tmp_path / "log.sqlite", pin="1"),
                         game=GameSettings("blockout", tuple(PLAYERS)), source=SourceSettings("replay", "", 0))
    live = TableService(config)
    lines = [
        {"t": 1.0, "declare": {"player": "ann", "action": {"type": "block", "block": BLOCKS[0]}}},
        view(1, 2.0),
        {"t": 3.0, "declare": {"player": "ben", "action": {"type": "block", "block": BLOCKS[1]}}},
        sensor("counting", 3.6), sensor("fell", 4.0), view(2, 5.0), view(2, 6.7),
        {"t": 7.0, "declare": {"player": "cleo", "action": {"type": "block", "block": BLOCKS[2]}}},
        sensor("counting", 7.5), view(2, 8.0),
    ]
    for line in lines:
        live.feed(line)
    snap = live.snapshot()
    assert snap["falls"] == {"cleo": 1} and snap["stack"] == []
    again = TableService(config)
    assert again.restored_events == snap["seq"]
    for key in ("stack", "current", "phase", "falls"):
        assert again.snapshot()[key] == snap[key], key


# ------------------------------------------------------------------ camera and sensor through the real service


def test_camera_and_sensor_through_the_service_agree_on_the_fall(tmp_path):
    """Frames through the stack recogniser and the trace through the detector, in time order:
    the camera confirms the sensor's fall and the game ends as recorded."""
    fixture = FIXTURES / "blockout" / "camera-game"
    expect = json.loads((fixture / "meta.json").read_text())["expect"]
    state, events = replay_to_end(fixture, tmp_path, stable_seconds=0.5)
    assert state["stack"] == expect["stack"] and state["current"] == expect["current"]
    assert state["falls"] == expect["falls"]
    stability = [e for e in events if e["kind"] == "stability"]
    assert [e["event"] for e in stability] == ["counting", "stood", "counting", "stood", "counting", "fell"]
    assert all(e["source"] == "sensor" for e in stability)
    assert [e for e in events if e["kind"] == "correction"] == [], "the camera saw the stack go"
    assert sum(e["kind"] == "action" for e in events) == expect["actions"]


def test_a_sensor_fall_the_camera_sees_standing_is_taken_back(tmp_path):
    """camera-knock: the trace's fall is shown on camera as a stack still standing."""
    fixture = FIXTURES / "blockout" / "camera-knock"
    state, events = replay_to_end(fixture, tmp_path, stable_seconds=0.5)
    [fell] = [e for e in events if e.get("event") == "fell"]
    [back] = [e for e in events if e["kind"] == "correction"]
    assert fell["source"] == "sensor" and back["seq"] > fell["seq"] and "knock" in back["why"]
    [stood] = [e for e in events if e.get("event") == "stood" and e["seq"] > back["seq"]]
    assert stood["source"] == "camera" and stood["player"] == "ann"
    counting = max(e["t"] for e in events if e.get("event") == "counting")
    assert stood["t"] - counting >= 3.0
    assert len(state["stack"]) == 4 and state["falls"] == {} and state["current"] == "bo"
