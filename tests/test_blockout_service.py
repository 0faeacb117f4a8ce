"""Block Out! at the table: accelerometer trace -> stability detector -> referee -> page."""

from __future__ import annotations

import json
from pathlib import Path

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


QUIET_S = 6.0  # a still base before the recorded trace: time for the players to declare


def still_then(trace: Path, out: Path) -> None:
    """The trace preceded by QUIET_S seconds of the base standing still (its first reading)."""
    rows = trace.read_text().splitlines()
    header = rows[0] if not rows[0][0].isdigit() and rows[0][0] != "-" else None
    data = [r for r in rows if r and (r[0].isdigit() or r[0] == "-")]
    first = [float(v) for v in data[0].split(",")]
    step = float(data[1].split(",")[0]) - first[0]
    lines = [header] if header else []
    n = int(QUIET_S / step)
    lines += [f"{first[0] + k * step:.6f},{first[1]:.4f},{first[2]:.4f},{first[3]:.4f}" for k in range(n)]
    lines += [f"{float(r.split(',')[0]) + n * step:.6f},{r.split(',', 1)[1]}" for r in data]
    out.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("name,chip", [("elbow-then-stood", "mpu6050"), ("knocks-then-stood", "adxl345")])
def test_live_sensor_through_the_real_driver_times_the_count(tmp_path, name, chip):
    """`bloxcam serve` with a [sensor]: the real driver reads an emulated chip (its registers
    and FIFO) playing a recorded trace in real time; the detector's count reaches the page."""
    from service_helpers import PIN, Process, free_port, http

    fixture = FIXTURES / "blockout" / name
    truth = [json.loads(line) for line in (fixture / "truth.jsonl").read_text().splitlines()]
    trace = tmp_path / "trace.csv"
    still_then(fixture / "accel.csv", trace)
    port = free_port()
    config = tmp_path / "table.toml"
    config.write_text(f"""
[table]
pin = "{PIN}"
port = {port}
log = "table.sqlite"
[game]
name = "blockout"
players = ["ann", "bo", "cy"]
[source]
kind = "none"
[sensor]
kind = "{chip}"
emulate = "trace.csv"
""")
    server = Process(["serve", "--config", str(config), "--quiet"], tmp_path / "serve.out", f"http://127.0.0.1:{port}")
    try:
        for player, block in (("ann", {"color": "red", "size": "large"}), ("bo", {"color": "black", "size": "small"})):
            status, body = http("POST", server.url + "/api/declare",
                                {"player": player, "action": {"type": "block", "block": block}}, pin=PIN)
            assert status == 200, body
        events = server.events_until(lambda events: any(e.get("event") == "stood" for e in events), QUIET_S + 30, 0.5)
    finally:
        server.stop()
    sensor = [e for e in events if e["kind"] == "stability"]
    assert [e["event"] for e in sensor] == ["counting", "stood"], events
    counting, stood = sensor
    true_counting = next(e["t"] for e in truth if e["event"] == "counting") + QUIET_S
    # Sample times run from the sensor's opening, a moment before the trace's first sample plays.
    assert abs(counting["t"] - true_counting) < 0.15
    assert stood["t"] - counting["t"] == pytest.approx(3.0, abs=0.011)
    assert stood["player"] == "bo"
    # The ADXL345's 32-sample FIFO may overrun while the server starts (reported, harmless
    # then); once the game runs no sample is lost.
    assert [e for e in events if e["kind"] == "fault" and e["seq"] > counting["seq"]] == []
