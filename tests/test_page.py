"""The status page in a real browser: headless Chromium (Debian's) driven by Playwright."""

from __future__ import annotations

import json

from service_helpers import FIXTURES, PIN, Server

GAME = FIXTURES / "blox" / "game-3p"
META = json.loads((GAME / "meta.json").read_text())


def test_page_shows_board_scores_and_verdicts_live(browser, tmp_path):
    server = Server(GAME, tmp_path / "table.sqlite", speed=25)
    try:
        page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone
        page.goto(server.url + "/")
        page.wait_for_selector("#board .cell", timeout=20000)
        assert page.locator("#board .cell").count() == 81
        assert page.locator("#scores tbody tr").count() == 3
        assert page.locator("#setup-warning").is_hidden()  # nothing to warn about
        # Towers are drawn with their heights; figures appear as the game goes on.
        heights = page.locator("#board .cell[data-kind=tower]").evaluate_all("els => els.map(e => +e.dataset.height)")
        assert heights and all(1 <= h <= 5 for h in heights)
        page.wait_for_selector("#events li.action", timeout=20000)
        # The recorded illegal move is shown in plain words while the game is live.
        illegal = page.wait_for_selector("#events li.illegal", timeout=30000)
        assert "R-BLOX-2" in illegal.text_content() and "occupied" in illegal.text_content()
        assert not server.get("/api/state")["finished"], "the verdict appeared while the game was running"
        page.wait_for_selector("#board .cell[data-kind=figure]", timeout=20000)
        page.screenshot(path=str(tmp_path / "page.png"))
        # Then the end: the page shows the winner and the true final scores, pushed without reloading.
        page.wait_for_function("document.getElementById('phase').textContent.includes('Game over')", timeout=90000)
        for player, points in META["final_scores"].items():
            assert page.locator(f"#scores tr[data-player={player}] .points").text_content() == str(points)
        assert page.locator("#events li.end").count() == 1
    finally:
        server.stop()


def test_page_controls_need_the_pin(browser, tmp_path):
    server = Server(GAME, tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        page = browser.new_page()
        page.goto(server.url + "/")
        page.wait_for_selector("#board .cell")
        page.click("#undo")
        page.wait_for_function("document.getElementById('answer').textContent.length > 0")
        assert "PIN" in page.text_content("#answer")
        page.fill("#pin", PIN)
        page.click("#exchange")
        page.wait_for_function("document.getElementById('answer').textContent.includes('R-BLOX-11')")
    finally:
        server.stop()


def test_confirming_a_candidate_and_starting_a_new_game_from_the_page(browser, tmp_path):
    import random

    from engine.blox import BloxGame, Figure

    game = BloxGame(["green", "brown"])
    full = game.new_initial_state(random.Random(4))
    start = full.observation_state()
    place = next(a for a in full.legal_actions() if a.type == "place")
    full.apply_action(place)
    spare = next(p for p in full.positions() if full.cell(p) is None and p[0] not in (0, 8) and p[1] not in (0, 8))
    full.board = full._with({spare: Figure("green")})  # green seems to have put down two figures
    lines = [
        {"meta": {"game": "blox", "players": ["green", "brown"]}},
        {"game": "blox", "frame": 0, "t": 0.0, "stable": True, "state": start},
        {"game": "blox", "frame": 1, "t": 1.0, "stable": True, "state": {"cells": full.observation_state()["cells"]}},
    ]
    recording = tmp_path / "two-figures.jsonl"
    recording.write_text("".join(json.dumps(line) + "\n" for line in lines))
    server = Server(recording, tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        page = browser.new_page()
        page.goto(server.url + "/")
        page.wait_for_selector("#banner.show .candidate")
        assert "Not recognised" in page.text_content("#banner")
        page.fill("#pin", PIN)
        page.locator("#banner .candidate").first.click()
        page.wait_for_function("document.getElementById('answer').textContent === 'done'")
        page.wait_for_function("document.getElementById('phase').textContent.includes('brown to play')")
        page.fill("#players", "yellow, blue, green")
        page.click("#start")
        page.wait_for_function("document.querySelectorAll('#scores tbody tr').length === 3")
        assert server.get("/api/state")["players"] == ["yellow", "blue", "green"]
    finally:
        server.stop()


def test_page_warns_when_the_camera_cannot_read_towers(browser, tmp_path):
    """A Blox table calibrated with the camera nearly straight above: the players are told,
    on the page, that the blocks under a tower's top cannot be read (calibration/tower_view.py)."""
    import dataclasses

    import cv2
    import numpy as np

    from calibration.pose import BoardPose
    from calibration.render import scene as sc
    from calibration.store import save_calibration
    from vision.evaluate import calibration_from_dir

    recording = FIXTURES / "blox" / "camera-game"
    calibration = calibration_from_dir(recording / "calibration", "blox")
    nadir = sc.sample_setup(calibration.kit, "blox", 7, model="cm3", height_mm=850, tilt_deg=2.0)
    nadir_pose = BoardPose(cv2.Rodrigues(nadir.R)[0].ravel(), np.ravel(nadir.t), 0.0)
    save_calibration(dataclasses.replace(calibration, pose=nadir_pose), tmp_path / "calibration.json")
    server = Server(recording, tmp_path / "table.sqlite", speed=1,
                    extra=["--calibration", str(tmp_path / "calibration.json")])
    try:
        assert any("straight above" in w for w in server.get("/api/health")["source"]["warnings"])
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(server.url + "/")
        page.wait_for_selector("#setup-warning:not([hidden])", timeout=20000)
        text = page.text_content("#setup-warning")
        assert text.startswith("Camera set-up:") and "Tilt the camera" in text
    finally:
        server.stop()
