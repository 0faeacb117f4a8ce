"""Bloxx! through the camera: rolls read from frames, sheets held under the camera or sent as photos.

The recorded game (tests/fixtures/bloxx/camera-game, made by make_bloxx_camera_game.py)
is the 3-player game of game-3p as rendered frames: the real service recognises the dice,
reads the sheets the players hold up when they ask on their phones, takes the phones'
placements, and must reach the true final scores and sheets.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import cv2
import numpy as np
import pytest

from bloxx_helpers import FIRST_ROLL, legal_first_placement_photo
from service.referees.bloxx import BloxxReferee
from service.sheetphoto import SheetPhotoDesk, _majority
from service_helpers import FIXTURES, PIN, Server, http, replay_to_end
from vision.bloxx import SheetReader
from vision.evaluate import calibration_from_dir

CAMERA_GAME = FIXTURES / "bloxx" / "camera-game"
META = json.loads((CAMERA_GAME / "meta.json").read_text())
TRUTH = [json.loads(line) for line in (CAMERA_GAME / "truth.jsonl").read_text().splitlines()]
PLAYERS = ["ann", "ben", "cleo"]


def frame(i: int) -> np.ndarray:
    image = cv2.imread(str(CAMERA_GAME / "frames" / f"{i:06d}.jpg"), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def sheet_frames() -> list[list[int]]:
    """Runs of consecutive frames showing a held-up sheet."""
    runs: list[list[int]] = []
    for i, truth in enumerate(TRUTH):
        if "sheet" in truth["state"]:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    return runs


@pytest.fixture(scope="module")
def reader():
    calibration = calibration_from_dir(CAMERA_GAME / "calibration", "bloxx")
    return SheetReader(calibration.kit)


# ------------------------------------------------------------------ the referee and the dice' spots


def dice_seen(white, black, at, t, stable=True):
    return {"game": "bloxx", "t": t, "stable": stable, "state": {"dice": {"white": white, "black": black}},
            "dice_at": at}


def everyone_draws(referee: BloxxReferee, t: float) -> None:
    """Each player taps in a legal placement of the roll, until the turn ends."""
    state = referee.state
    while state.roll is not None and (p := state.current_player()) is not None:
        place = next(pl for die in ("white", "black") if state.can_place(p, die) for pl in state.placements(p, die))
        cells, circle = state.resolve(place)
        action = {"type": "place", "squares": [list(c) for c in cells], "die": place.die}
        if state.marks_circle(p, place.die):
            action["circle"] = list(circle)
        [event, *_] = referee.feed({"t": t, "declare": {"player": PLAYERS[p], "action": action}})
        assert event["kind"] == "action", event
        t += 0.1


def test_dice_lying_where_they_lay_after_a_hand_passed_are_not_a_new_roll():
    """A hand or a held-up sheet over the rolling area arms the referee; the same faces on the
    same spots afterwards were not thrown (the roll is taken only from thrown dice)."""
    referee = BloxxReferee(PLAYERS)
    spots = {"white": [40.0, 50.0, 12.0], "black": [90.0, 60.0, 200.0]}
    referee.feed(dice_seen(None, None, {}, 1, stable=False))
    [roll] = referee.feed(dice_seen("w1", "b2", spots, 2))
    assert roll["kind"] == "action" and roll["action"]["type"] == "roll"
    everyone_draws(referee, t=3)  # the turn passes; ben is to roll
    assert referee.state.roll is None
    referee.feed(dice_seen(None, None, {}, 7, stable=False))  # something passes over the dice
    nudged = {"white": [41.0, 50.5, 14.0], "black": [90.5, 59.0, 203.0]}
    assert referee.feed(dice_seen("w1", "b2", nudged, 8)) == [], "the dice lie where they were: no roll"
    assert referee.state.roll is None
    thrown = {"white": [120.0, 30.0, 80.0], "black": [60.0, 110.0, 10.0]}
    [again] = referee.feed(dice_seen("w1", "b2", thrown, 9))
    assert again["kind"] == "action" and again["action"]["type"] == "roll" and again["player"] == "ben"


def test_without_spots_the_same_faces_after_a_hand_are_a_roll():
    """Recordings without ``dice_at`` keep the rule of game-3p: out of sight, then seen = rolled."""
    referee = BloxxReferee(PLAYERS)
    referee.feed(dice_seen(None, None, {}, 1, stable=False))
    referee.feed(dice_seen("w1", "b2", {}, 2))
    everyone_draws(referee, t=3)
    referee.feed(dice_seen(None, None, {}, 7, stable=False))
    [again] = referee.feed(dice_seen("w1", "b2", {}, 8))
    assert again["kind"] == "action" and again["action"]["type"] == "roll"


# ------------------------------------------------------------------ the sheet-photo desk on real frames


def test_desk_decides_on_two_agreeing_frames_and_keeps_them_from_the_dice(reader):
    run = sheet_frames()[0]
    player = TRUTH[run[0]]["player"]
    desk = SheetPhotoDesk(reader)
    before = run[0] - 1  # the dice, before the sheet is held up
    consumed, request, observation = desk.offer(frame(before), TRUTH[before]["t"])
    assert (consumed, request, observation) == (False, None, None), "no request: frames are not looked at"
    request = desk.ask(player, TRUTH[before]["t"])
    consumed, _, observation = desk.offer(frame(before), TRUTH[before]["t"])
    assert not consumed and observation is None, "no sheet yet, still within the time to hold it up"
    decided = None
    # Two frames reading alike decide; failing that, the frame after the sheet has gone does.
    for i in run + [run[-1] + 1]:
        consumed, answered, observation = desk.offer(frame(i), TRUTH[i]["t"], i)
        assert consumed == (i in run), f"frame {i} shows the sheet: {i in run}"
        if observation is not None:
            decided = observation
            assert answered is request
            break
    assert decided is not None and desk.waiting is None
    assert decided["player"] == player and decided["stable"]
    truth = TRUTH[run[0]]["state"]["sheet"]
    sure = [(r, c) for r in range(10) for c in range(7) if decided["state"]["square_confidence"][r][c] >= 0.5]
    wrong = [(r, c) for r, c in sure if decided["state"]["sheet"][r][c] != truth[r][c]]
    assert len(sure) >= 68 and wrong == []


def test_desk_reports_no_sheet_after_its_timeout(reader):
    desk = SheetPhotoDesk(reader, timeout_s=1.0)
    dice_frames = [i for i, t in enumerate(TRUTH) if "dice" in t["state"] and t["stable"]][:3]
    desk.ask("ann", TRUTH[dice_frames[0]]["t"] - 0.1)
    outcomes = [desk.offer(frame(i), TRUTH[dice_frames[0]]["t"] + 0.5 * k) for k, i in enumerate(dice_frames)]
    assert [o[0] for o in outcomes] == [False] * 3
    observation = next(o[2] for o in outcomes if o[2] is not None)
    assert observation["state"]["sheet"] is None and "within 1 s" in observation["state"]["why"]
    referee = BloxxReferee(PLAYERS)
    [fault] = referee.feed(observation)
    assert fault["kind"] == "fault" and fault["player"] == "ann" and "sheet photo not read" in fault["why"]


def test_majority_of_split_readings_leaves_the_square_unsure():
    rows = ["......."] * 9
    a = {"sheet": rows + ["xx....."], "square_confidence": [[0.9] * 7] * 10}
    b = {"sheet": rows + ["x......"], "square_confidence": [[0.8] * 7] * 10}
    c = {"sheet": rows + ["xx....."], "square_confidence": [[0.95] * 7] * 10}
    split = _majority([a, b])
    assert split["sheet"][9][1] in "x." and split["square_confidence"][9][1] == 0.0
    assert split["square_confidence"][9][0] == 0.8, "agreeing squares keep the least sure reading"
    vote = _majority([a, b, c])
    assert vote["sheet"][9] == "xx....." and vote["square_confidence"][9][1] == pytest.approx(0.9 * 2 / 3, abs=1e-3)


# ------------------------------------------------------------------ the whole game through the real service


def test_camera_game_through_the_service_reaches_the_true_scores_and_sheets(tmp_path):
    """Frames -> dice recognition -> referee; phone placements; sheets held up on request."""
    state, events = replay_to_end(CAMERA_GAME, tmp_path, stable_seconds=0.25)
    assert state["scores"] == META["final_scores"]
    assert state["sheets"] == META["final_sheets"]
    actions = [e for e in events if e["kind"] == "action"]
    rolls = [e for e in actions if e["action"]["type"] == "roll"]
    assert len(rolls) == META["rolls"] and all(e["source"] == "camera" for e in rolls)
    from_photos = [e for e in actions if e.get("source") == "sheet photo"]
    assert len(from_photos) == META["photos"] - 1, "every placement photo (one photo only checks a sheet)"
    [illegal] = [e for e in events if e["kind"] == "illegal"]
    assert illegal["rule"] == "R-BLOXX-3"
    assert [e for e in events if e["kind"] in ("fault", "unrecognised")] == []


# ------------------------------------------------------------------ sheet photos over HTTP


def upload(url: str, data: bytes, pin: str | None = PIN, content_type: str = "image/jpeg") -> tuple[int, dict]:
    request = urllib.request.Request(url, data=data, method="POST")
    request.add_header("Content-Type", content_type)
    if pin is not None:
        request.add_header("X-Table-Pin", pin)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def test_a_photo_sent_from_the_phone_is_the_placement(tmp_path):
    """POST /api/sheet-photo/upload: the engine judges the sheet's new shape like a tapped one."""
    rows, photo = legal_first_placement_photo("ann")

    server = Server(FIRST_ROLL, tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        url = server.url + "/api/sheet-photo/upload?player=ann"
        assert upload(url, photo, pin=None)[0] == 401
        status, body = upload(url, b"not an image at all")
        assert status == 400 and "JPEG or PNG" in body["detail"]
        assert upload(url, b"")[0] == 400
        assert upload(server.url + "/api/sheet-photo/upload?player=zoe", photo)[0] == 422
        empty_table = cv2.imencode(".jpg", frame(2))[1].tobytes()
        status, body = upload(server.url + "/api/sheet-photo/upload?player=ben", empty_table)
        assert status == 422 and "no Bloxx! sheet" in body["detail"]["why"]
        assert server.get("/api/state")["sheets"]["ben"] == ["......."] * 10, "nothing changed"
        # Without a camera there is no sheet to hold up: the page is told to send a photo.
        status, body = http("POST", server.url + "/api/sheet-photo", {"player": "ann"}, pin=PIN)
        assert status == 409 and "upload" in body["detail"]

        status, body = upload(url, photo)
        assert status == 200, body
        [placed] = [e for e in body["events"] if e["kind"] == "action"]
        assert placed["player"] == "ann" and placed["source"] == "sheet photo"
        assert body["state"]["sheets"]["ann"] == rows
        # The same photo again: the sheet agrees with the record, nothing more happens.
        status, again = upload(url, photo)
        assert status == 200 and again["events"] == []
    finally:
        server.stop()


def test_sheet_photos_are_refused_on_other_games(tmp_path):
    server = Server(FIXTURES / "blox" / "game-2p", tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        status, body = upload(server.url + "/api/sheet-photo/upload?player=red", b"\xff\xd8")
        assert status == 409 and "Bloxx!" in body["detail"]
    finally:
        server.stop()
