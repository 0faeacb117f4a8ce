"""Running a real `bloxcam serve` process for end-to-end tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
PIN = "2468"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: Any = None, pin: str | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if pin is not None:
        request.add_header("X-Table-Pin", pin)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


class Process:
    """A `bloxcam` sub-command in its own process, with its output in a file, ready when ``ready_path`` answers."""

    def __init__(
        self, args: list[str], output: Path, url: str, ready_path: str = "/api/health", env: dict[str, str] | None = None
    ) -> None:
        self.url = url
        self.output = output
        self._out = output.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "service.cli", *args], stdout=self._out, stderr=subprocess.STDOUT,
            cwd=Path(__file__).parent.parent, env={**os.environ, **(env or {})},
        )
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"bloxcam {args[0]} exited: {output.read_text()}")
            try:
                if http("GET", url + ready_path)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"bloxcam {args[0]} did not start: {output.read_text()}")

    def get(self, path: str) -> Any:
        status, body = http("GET", self.url + path)
        assert status == 200, (status, body)
        return body

    def events_until(self, done: Any, timeout: float, poll_s: float = 0.3) -> list[dict]:
        """The table's events, polled until ``done(events)`` holds or ``timeout`` s pass."""
        deadline = time.time() + timeout
        while True:
            events = self.get("/api/events?after=0")
            if done(events) or time.time() > deadline:
                return events
            time.sleep(poll_s)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        self._out.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if not self._out.closed:
            self._out.close()


class Server(Process):
    """`bloxcam serve` replaying a recording, on a free port."""

    def __init__(
        self, recording: Path, log: Path, speed: float = 0.0, pin: str = PIN, env: dict[str, str] | None = None,
        extra: list[str] | None = None,
    ) -> None:
        self.port = free_port()
        self.log = log
        args = [
            "serve", "--recording", str(recording), "--speed", str(speed), "--port", str(self.port),
            "--log", str(log), "--pin", pin, "--quiet", *(extra or []),
        ]
        super().__init__(args, log.with_suffix(".out"), f"http://127.0.0.1:{self.port}", env=env)

    def wait_finished(self, timeout: float = 120) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            state = self.get("/api/state")
            if state["source"]["finished"]:
                return state
            time.sleep(0.2)
        raise TimeoutError("replay did not finish")


def replay_to_end(recording: Path, tmp_path: Path, stable_seconds: float, timeout: float = 900) -> tuple[dict, list[dict]]:
    """`bloxcam serve` a recording with camera frames as fast as it goes: the final state and every event."""
    server = Server(recording, tmp_path / "table.sqlite", speed=0, extra=["--stable-seconds", str(stable_seconds)])
    try:
        state = server.wait_finished(timeout=timeout)
        events = server.get("/api/events?after=0&limit=5000")
    finally:
        server.stop()
    return state, events


def events_in_log(log: Path) -> list[dict]:
    """The committed events, read straight from the SQLite file."""
    import sqlite3

    db = sqlite3.connect(log)
    try:
        rows = db.execute("SELECT body FROM events ORDER BY game_id, seq").fetchall()
    finally:
        db.close()
    return [json.loads(r[0]) for r in rows]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("BLOXCAM_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if candidate and Path(candidate).exists():
            return candidate
    return None
