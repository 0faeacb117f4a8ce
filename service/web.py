"""The status page and its JSON API (FastAPI).

Everyone on the network may read; every change (a new game, a declaration, a correction,
an undo) needs the table PIN in the ``X-Table-Pin`` header. The OpenAPI description is at
``/openapi.json`` and browsable at ``/docs``. Live updates are pushed as server-sent
events on ``/api/stream``: one ``state`` message on connect, then a ``recent`` message with
the events the reader has not had (the last ``?recent=N`` of the game; after a reconnect, those
after its ``Last-Event-ID``), then an ``events`` message per batch of events (each with its
plain-words ``text``) followed by the new ``state``. Event messages carry the id
``<game_id>:<last seq>``, which the browser sends back as ``Last-Event-ID`` when it reconnects.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import signal
import threading
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from service.table import TableError, TableService
from service.text import describe_action, describe_event

PIN_HEADER = "X-Table-Pin"
#: the status page of each game that has its own (the others use index.html)
PAGES = {"bloxx": "bloxx.html", "blockout": "blockout.html"}
#: how often the live stream checks for a new camera frame when no event arrives
FRAME_CHECK_S = 0.5
#: an uploaded sheet photo larger than this is refused (a phone's full-size JPEG is well under it)
MAX_PHOTO_BYTES = 25_000_000
#: on SIGTERM, requests still open after this long are cut: a live stream (a page left open)
#: never ends by itself, and without a limit the server would wait for it forever
SHUTDOWN_GRACE_S = 2.0


def run_until_stopped(server: Any) -> None:
    """Run a ``uvicorn.Server`` until SIGTERM (or Ctrl-C) and then return, so that the
    caller's clean-up runs.

    Once shut down, uvicorn raises again the signal that stopped it. With SIGTERM's default
    disposition that kills the process right there, before the caller stops the referee,
    closes the game log and tells systemd and the MQTT broker that the table is going. A
    handler of our own takes that second SIGTERM (and one arriving before uvicorn
    installs its handlers stops the server as well).
    """
    if threading.current_thread() is not threading.main_thread():
        server.run()  # signals reach only the main thread: nothing to take
        return
    previous = signal.signal(signal.SIGTERM, server.handle_exit)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)


class NewGame(BaseModel):
    game: str = Field(description="blox, bloxo, bloxx, blockers or blockout")
    players: list[str] = Field(min_length=1, max_length=6, description="player colours in turn order")


class Declaration(BaseModel):
    player: str = Field(description="the player declaring the action (their colour)")
    action: dict[str, Any] = Field(description="the action, as in the events' `action` field")


class SheetPhoto(BaseModel):
    player: str = Field(description="whose Bloxx! sheet is held under the camera (their seat)")


class Correction(BaseModel):
    action: dict[str, Any] = Field(description="what the last action really was")


def with_text(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its plain-words ``text`` (and its candidates' words) for the page."""
    out = {**event, "text": describe_event(event)}
    if event.get("candidates"):
        out["candidate_texts"] = [describe_action(c) for c in event["candidates"]]
    return out


def create_app(service: TableService, runner: Any = None) -> FastAPI:
    app = FastAPI(
        title="bloxcam table",
        version="1",
        description="Status and control of one bloxcam table. Reading is open; changes need the table PIN "
        f"in the `{PIN_HEADER}` header.",
    )
    app.state.service = service
    app.state.runner = runner

    def require_pin(x_table_pin: str | None = Header(default=None, description="the table PIN")) -> None:
        expected = service.config.table.pin
        if not expected:
            raise HTTPException(403, "changes are disabled: no table PIN was set at install ([table] pin)")
        if x_table_pin is None:
            raise HTTPException(401, f"this change needs the table PIN in the {PIN_HEADER} header")
        if not hmac.compare_digest(x_table_pin.encode(), expected.encode()):
            raise HTTPException(403, "wrong table PIN")

    def outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
        refused = [e for e in events if e["kind"] == "illegal"]
        if refused:
            e = refused[0]
            raise HTTPException(409, {"rule": e.get("rule"), "why": e.get("why"), "event": with_text(e)})
        return {"events": [with_text(e) for e in events], "state": service.snapshot()}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        # Each game has its own page; a roll-and-write game has nothing in common with a board.
        name = PAGES.get(service.record.game, "index.html")
        return resources.files("service").joinpath(f"static/{name}").read_text("utf-8")

    @app.get("/static/live.js", include_in_schema=False)
    def live_js() -> Response:
        script = resources.files("service").joinpath("static/live.js").read_text("utf-8")
        return Response(script, media_type="text/javascript")

    @app.get("/api/state", summary="The game as the page draws it")
    def state() -> dict[str, Any]:
        return service.snapshot()

    @app.get("/api/events", summary="Events of the current game after a given seq")
    def events(after: int = Query(0, ge=0), limit: int = Query(200, ge=1, le=5000)) -> list[dict[str, Any]]:
        return [with_text(e) for e in service.events(after, limit)]

    @app.get("/api/health", summary="Is the table's referee running")
    def health() -> dict[str, Any]:
        ok = runner.healthy() if runner is not None else True
        return {"ok": ok, "source": service.snapshot()["source"], "game_id": service.record.id}

    @app.get("/api/frame.jpg", summary="The current camera frame with the recognised grid", responses={404: {}})
    def frame() -> Response:
        jpeg = getattr(runner, "latest_jpeg", None)
        if not jpeg:
            raise HTTPException(404, "this table's source has no camera frames (a recording of observations)")
        return Response(jpeg, media_type="image/jpeg")

    @app.post("/api/games", summary="Start a new game", dependencies=[Depends(require_pin)])
    def new_game(body: NewGame) -> dict[str, Any]:
        try:
            service.start_game(body.game, body.players)
        except TableError as exc:
            raise HTTPException(422, str(exc)) from exc
        return {"state": service.snapshot()}

    @app.post("/api/declare", summary="Declare an action the camera cannot see", dependencies=[Depends(require_pin)])
    def declare(body: Declaration) -> dict[str, Any]:
        return outcome(service.declare(body.player, body.action))

    @app.post("/api/correct", summary="Correct the last recognised action", dependencies=[Depends(require_pin)])
    def correct(body: Correction) -> dict[str, Any]:
        return outcome(service.correct(body.action))

    @app.post("/api/undo", summary="Take back the last action", dependencies=[Depends(require_pin)])
    def undo() -> dict[str, Any]:
        return outcome(service.undo())

    def sheet_player(player: str) -> str:
        if service.record.game != "bloxx":
            raise HTTPException(409, f"sheet photos are for Bloxx! tables; this table plays {service.record.game}")
        if player not in service.record.players:
            raise HTTPException(422, f"there is no seat {player!r} at this table")
        return player

    def photo_outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
        unread = [e for e in events if e["kind"] == "fault"]
        if unread:
            raise HTTPException(422, {"why": unread[0].get("why"), "event": with_text(unread[0])})
        return outcome(events)

    @app.post("/api/sheet-photo", summary="Read a player's Bloxx! sheet held under the table's camera",
              dependencies=[Depends(require_pin)], responses={202: {}, 409: {}, 422: {}})
    def sheet_photo(body: SheetPhoto) -> Any:
        player = sheet_player(body.player)
        desk = getattr(runner, "photo_desk", None)
        if desk is None:
            raise HTTPException(409, "this table has no camera reading sheets: send a photo to "
                                     "/api/sheet-photo/upload instead")
        request = runner.ask_sheet_photo(player)
        # The player holds the sheet up now; the camera decides within the desk's timeout.
        if not request.done.wait(desk.timeout_s + 5):
            return JSONResponse({"waiting": True, "why": "no frame from the camera yet; the result will follow "
                                 "on the live stream"}, status_code=202)
        return photo_outcome(request.events)

    @app.post("/api/sheet-photo/upload", summary="Read a player's Bloxx! sheet from a photo (JPEG or PNG body)",
              dependencies=[Depends(require_pin)], responses={400: {}, 409: {}, 413: {}, 422: {}})
    async def sheet_upload(request: Request, player: str = Query(description="whose sheet the photo shows")) -> Any:
        player = sheet_player(player)
        data = await request.body()
        if not data:
            raise HTTPException(400, "the request has no photo: send the JPEG or PNG file as the body")
        if len(data) > MAX_PHOTO_BYTES:
            raise HTTPException(413, f"the photo is larger than {MAX_PHOTO_BYTES // 1_000_000} MB")
        return await run_in_threadpool(read_upload, player, data)

    def read_upload(player: str, data: bytes) -> dict[str, Any]:
        import cv2
        import numpy as np

        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise HTTPException(400, "the body is not a JPEG or PNG image that can be decoded")
        desk = getattr(runner, "photo_desk", None) or upload_desk()
        observation = desk.read_upload(player, image, service.referee.clock)
        return photo_outcome(service.feed(observation))

    def upload_desk() -> Any:
        if getattr(app.state, "upload_desk", None) is None:
            from calibration.kit import load_kit
            from service.sheetphoto import SheetPhotoDesk
            from vision.bloxx import SheetReader

            app.state.upload_desk = SheetPhotoDesk(SheetReader(load_kit(), service.referee.edition))
        return app.state.upload_desk

    @app.get("/api/stream", summary="Live updates (server-sent events)")
    async def stream(
        request: Request,
        recent: int = Query(0, ge=0, le=5000, description="send the game's last N events first"),
        last_event_id: str | None = Header(default=None, description="the id of the last event message read"),
    ) -> StreamingResponse:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[list[dict[str, Any]], int]] = asyncio.Queue()

        def listener(new_events: list[dict[str, Any]], reset: bool) -> None:
            # Called under the table's lock, so the game these events belong to is the current one.
            loop.call_soon_threadsafe(queue.put_nowait, (new_events, service.record.id))

        async def messages():
            # Subscribed and caught up in one step: an event committed while the page was
            # loading (or reconnecting) is in the backlog or comes on the stream, never lost.
            state, backlog = service.follow(listener, recent, _seen(last_event_id))
            try:
                yield _sse("state", state)
                if backlog:
                    yield _sse("recent", [with_text(e) for e in backlog], f"{state['game_id']}:{backlog[-1]['seq']}")
                frame_version, quiet = 0, 0.0
                while True:
                    try:
                        new_events, game_id = await asyncio.wait_for(queue.get(), timeout=FRAME_CHECK_S)
                    except TimeoutError:
                        # Between events: tell the page when the camera view has a new frame.
                        version = getattr(runner, "frame_version", 0)
                        if version != frame_version:
                            frame_version = version
                            yield _sse("frame", {"version": version})
                        quiet += FRAME_CHECK_S
                        if quiet >= 15:
                            quiet = 0.0
                            yield ": keep-alive\n\n"
                        continue
                    quiet = 0.0
                    if new_events:
                        yield _sse("events", [with_text(e) for e in new_events], f"{game_id}:{new_events[-1]['seq']}")
                    yield _sse("state", service.snapshot())
                    if await request.is_disconnected():
                        return
            finally:
                service.unsubscribe(listener)

        return StreamingResponse(messages(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return app


def _sse(name: str, data: Any, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _seen(last_event_id: str | None) -> tuple[int, int] | None:
    """``(game_id, seq)`` from a reconnecting reader's ``Last-Event-ID``; None when absent or not ours."""
    try:
        game_id, seq = (last_event_id or "").split(":")
        return int(game_id), int(seq)
    except ValueError:
        return None
