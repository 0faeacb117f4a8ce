"""Block Out! at the table: accelerometer trace -> stability detector -> referee -> page."""

from __future__ import annotations

import json

import pytest

from service_helpers import FIXTURES, Server

GAME = FIXTURES / "blockout" / "game-3p"
META = json.loads((GAME / "meta.json").read_text())
TRUTH = [json.loads(line) for line in (GAME / "truth.jsonl").read_text().splitlines()]


def test_recorded_trace_is_refereed_through_the_real_service(tmp_path):
    server = Server(GAME, tmp_path / "table.sqlite", speed=0)
    try:
        state = server.wait_finished()
        events = server.get("/api/events?after=0&limit=1000")
    finally:
        server.stop()
    expect = META["expect"]
    assert state["game"] == "blockout"
    assert state["stack"] == expect["stack"] and state["current"] == expect["current"]
    assert state["falls"] == expect["falls"]
    sensor = [e for e in events if e["kind"] == "stability"]
    assert [e["event"] for e in sensor] == ["counting", "stood", "counting", "stood", "counting", "fell"]
    # The detector's decisions are the true ones: counts start within 0.1 s of the settle, the
    # fall is caught within 0.25 s of the block leaving the stack (R-BLOCKOUT-3).
    true_counting = [e["t"] for e in TRUTH if e["event"] == "counting"]
    assert all(abs(e["t"] - t) < 0.1 for e, t in zip((e for e in sensor if e["event"] == "counting"), true_counting))
    true_fell = next(e["t"] for e in TRUTH if e["event"] == "fell")
    assert 0 <= next(e["t"] for e in sensor if e["event"] == "fell") - true_fell < 0.25
    for e in sensor:
        if e["event"] == "stood":
            start = max(c["t"] for c in sensor if c["event"] == "counting" and c["t"] < e["t"])
            assert e["t"] - start == pytest.approx(3.0, abs=0.011)
    illegal = [e for e in events if e["kind"] == "illegal"]
    assert len(illegal) == expect["illegal"] and illegal[0]["rule"] == "R-BLOCKOUT-3"
    assert sum(e["kind"] == "action" for e in events) == expect["actions"]
    fell = next(e for e in events if e.get("event") == "fell")
    assert fell["player"] == "ann" and fell["stack"] == [] and "starts a new stack" in fell["why"]


def test_page_shows_the_three_second_count(browser, tmp_path):
    server = Server(GAME, tmp_path / "table.sqlite", speed=1)
    try:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(server.url + "/")
        seen: list[str] = []
        page.expose_function("sawCount", lambda text: seen.append(text))
        page.evaluate("""() => new MutationObserver(() => window.sawCount(document.getElementById('count').textContent))
                          .observe(document.getElementById('count'), {childList: true, characterData: true, subtree: true})""")
        page.wait_for_function("document.getElementById('count').textContent.includes('stands')", timeout=30000)
        assert [s for s in ("3", "2", "1") if s in seen] == ["3", "2", "1"], seen
        assert page.locator("#stack .block").count() == 2
        page.wait_for_function("document.getElementById('count').textContent.includes('fell')", timeout=30000)
    finally:
        server.stop()
