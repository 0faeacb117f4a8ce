"""The Bloxx! phone flow in a real browser: headless Chromium (Debian's) driven by Playwright.

A player opens the page, picks their seat, sees the roll and which die they may take,
taps their placement on their sheet and gets the engine's verdict at once: illegal with
the reason in plain words, or legal with the gaps it created and circle or cross
(R-BLOXX-2..5). Every player's sheet and the scores follow live (server-sent events).
"""

from __future__ import annotations

import cv2
import numpy as np

from bloxx_helpers import legal_first_placement_photo
from service_helpers import FIXTURES, PIN, Server

FIRST_ROLL = FIXTURES / "bloxx" / "first-roll"
GAME = FIXTURES / "bloxx" / "game-3p"


def tap(page, *squares):
    for r, c in squares:
        page.click(f"#mysheet .sq[data-r='{r}'][data-c='{c}']")


def close_pages(browser):
    # An open live stream would hold the server's shutdown until its timeout.
    for context in browser.contexts:
        for page in context.pages:
            page.close()


def phone_at_seat(browser, server, seat):
    """A phone on the table's page, seated."""
    phone = browser.new_page(viewport={"width": 390, "height": 844})
    phone.goto(server.url + "/")
    phone.wait_for_selector(f"#seats button[data-seat={seat}]", timeout=20000)
    phone.click(f"#seats button[data-seat={seat}]")
    return phone


def verdict(page, cls):
    page.wait_for_selector(f"#verdict.{cls}", timeout=10000)
    return page.text_content("#verdict")


def test_phone_flow_pick_seat_tap_placement_see_verdict(browser, tmp_path):
    server = Server(FIRST_ROLL, tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        phone = phone_at_seat(browser, server, "ann")
        assert phone.locator("#sheets .sheet").count() == 3
        assert phone.locator("#mysheet .sq").count() == 70
        # The roll and which die ann may take.
        phone.wait_for_selector("#dice .die[data-die=white][data-face=w3]")
        assert "circle" in phone.text_content("#dice .die[data-die=black]")
        assert "your turn" in phone.text_content("#say")

        # Without the table PIN nothing is accepted.
        tap(phone, (8, 0), (8, 1), (9, 1), (8, 0))
        phone.click("#submit")
        assert "PIN" in verdict(phone, "bad")
        assert server.get("/api/state")["sheets"]["ann"][9] == "......."
        phone.click("#clear")
        phone.fill("#pin", PIN)

        # Illegal: the first shape floats above the bottom row (R-BLOXX-3).
        tap(phone, (0, 0), (1, 0), (1, 1), (1, 1))  # the second tap on (1,1) puts the circle there
        assert phone.locator("#mysheet .sq.circ").count() == 1 and phone.locator("#mysheet .sq.sel").count() == 2
        phone.click("#submit")
        text = verdict(phone, "bad")
        assert "R-BLOXX-3" in text and "the first shape must touch the bottom row" in text
        assert phone.locator("#sheets .sheet[data-player=ann] .sq.x").count() == 0, "nothing was drawn"

        # Legal: the L on the bottom row, circle on (8,0); (9,0) under it becomes a gap (R-BLOXX-4).
        phone.click("#clear")
        tap(phone, (8, 0), (8, 1), (9, 1), (8, 0))
        phone.click("#submit")
        text = verdict(phone, "ok")
        assert "Legal" in text and "w3 of the white die" in text and "the circle" in text
        assert "1 gap(s) created: (9,0)" in text
        ann = "#sheets .sheet[data-player=ann]"
        phone.wait_for_selector(f"{ann} .sq.o[data-r='8'][data-c='0']")
        assert phone.locator(f"{ann} .sq.gap[data-r='9'][data-c='0']").count() == 1
        assert phone.locator("#mysheet .sq.sel, #mysheet .sq.circ").count() == 0, "the selection is cleared"

        # A second phone: ben sees ann's sheet live, takes ann's die and must draw a cross (R-BLOXX-5).
        other = phone_at_seat(browser, server, "ben")
        other.wait_for_selector(f"{ann} .sq.o[data-r='8'][data-c='0']")
        assert "cross" in other.text_content("#dice .die[data-die=white]")
        other.fill("#pin", PIN)
        tap(other, (9, 5), (9, 6), (8, 6))
        other.click("#submit")
        text = verdict(other, "ok")
        assert "a cross instead of the circle" in text and "no gaps" in text
        # ann's phone follows without reloading: ben's cross and the running scores.
        phone.wait_for_selector("#sheets .sheet[data-player=ben] .sq.x[data-r='9'][data-c='5']", timeout=10000)
        scores = server.get("/api/state")["scores"]
        for player in ("ann", "ben", "cleo"):
            assert phone.locator(f"#scores tr[data-player={player}] .points").text_content() == str(scores[player])
        assert phone.locator("#events li.illegal").count() == 1
        phone.screenshot(path=str(tmp_path / "phone.png"), full_page=True)
    finally:
        close_pages(browser)
        server.stop()


def test_page_shows_row_bonuses_and_the_end_of_a_replayed_game(browser, tmp_path):
    server = Server(GAME, tmp_path / "table.sqlite", speed=0)
    try:
        state = server.wait_finished()
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(server.url + "/")
        page.wait_for_function("document.getElementById('phase').textContent.includes('Game over')", timeout=20000)
        for player, bonuses in state["bonuses"].items():
            chips = page.locator(f"#sheets .sheet[data-player={player}] .bonus")
            assert chips.count() == len(bonuses)
            assert chips.evaluate_all("els => els.map(e => e.textContent)") == [
                f"{b['colour']} +{b['points']}" for b in bonuses]
            assert page.locator(f"#scores tr[data-player={player}] .points").text_content() == str(state["scores"][player])
        assert page.locator("#events li.end").count() == 1
    finally:
        close_pages(browser)
        server.stop()


def test_phone_sends_a_photo_of_the_paper_sheet_and_sees_the_verdict(browser, tmp_path):
    """A player who drew on paper photographs the sheet with the phone: the engine judges
    the new shape on it as if it had been tapped in, and the sheet shows it."""
    rows, photo = legal_first_placement_photo("ann")
    server = Server(FIRST_ROLL, tmp_path / "table.sqlite", speed=0)
    try:
        server.wait_finished()
        phone = phone_at_seat(browser, server, "ann")
        phone.fill("#pin", PIN)
        phone.set_input_files("#upload", files=[{"name": "sheet.jpg", "mimeType": "image/jpeg", "buffer": photo}])
        text = verdict(phone, "ok")
        assert "Legal" in text and "read from your sheet" in text
        drawn = sum(row.count("o") + row.count("x") for row in rows)
        mine = "#sheets .sheet[data-player=ann]"
        phone.wait_for_function(
            f"document.querySelectorAll(\"{mine} .sq.o, {mine} .sq.x\").length === {drawn}", timeout=10000)
        assert server.get("/api/state")["sheets"]["ann"] == rows
        # A photo without a sheet on it: told why, nothing drawn.
        phone.click("#seats button[data-seat=ben]")
        blank = cv2.imencode(".jpg", np.full((480, 640, 3), 90, np.uint8))[1].tobytes()
        phone.set_input_files("#upload", files=[{"name": "table.jpg", "mimeType": "image/jpeg", "buffer": blank}])
        assert "Sheet not read" in verdict(phone, "bad")
        assert server.get("/api/state")["sheets"]["ben"] == ["......."] * 10
    finally:
        close_pages(browser)
        server.stop()
