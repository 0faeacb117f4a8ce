"""``bloxcam serve``: run a table's referee and its status page."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from service import systemd
from service.errors import CliError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the referee and the status page for one table",
        description="Run one table: the referee on its source, the game log, and the status page.",
    )
    parser.add_argument("--config", help="table configuration (TOML); see service/config.py")
    parser.add_argument("--recording", help="replay this recorded game instead of the configured source")
    parser.add_argument("--speed", type=float, help="replay speed factor (0 = as fast as possible)")
    parser.add_argument("--host", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to serve on (default 8080)")
    parser.add_argument("--pin", help="table PIN for changes (overrides the configuration)")
    parser.add_argument("--log", help="SQLite game log file (overrides the configuration)")
    parser.add_argument("--quiet", action="store_true", help="do not print events to the terminal")
    parser.add_argument("--observations", action="store_true",
                        help="replay a fixture's recorded observations even when it has camera frames")
    parser.add_argument("--stable-seconds", type=float, help="stillness before a board is committed (default 1.0)")
    parser.add_argument("--calibration", help="calibration file (overrides [calibration] file)")
    parser.add_argument("--table-name", help="the table's name (overrides [table] name; used in MQTT topics)")
    parser.add_argument("--mqtt-host", help="publish to this MQTT broker (overrides [mqtt] host)")
    parser.add_argument("--mqtt-port", type=int, help="MQTT broker port (overrides [mqtt] port)")
    parser.add_argument("--mqtt-prefix", help="MQTT topic prefix (overrides [mqtt] prefix)")
    parser.set_defaults(handler=run)


def build_config(args: argparse.Namespace):
    from service.config import ConfigError, GameSettings, TableConfig, load_config
    from service.recording import RecordingError, load_recording

    try:
        config = load_config(args.config) if args.config else TableConfig()
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    table = config.table
    if args.host:
        table = replace(table, host=args.host)
    if args.port is not None:
        table = replace(table, port=args.port)
    if args.pin is not None:
        table = replace(table, pin=args.pin)
    if args.log:
        table = replace(table, log=Path(args.log))
    if args.table_name:
        table = replace(table, name=args.table_name)
    config = replace(config, table=table)
    mqtt = config.mqtt
    for key in ("host", "port", "prefix"):
        value = getattr(args, f"mqtt_{key}", None)
        if value is not None:
            mqtt = replace(mqtt, **{key: value})
    config = replace(config, mqtt=mqtt)
    if args.recording:
        try:
            recording = load_recording(args.recording)
            players = tuple(recording.players)
        except RecordingError as exc:
            raise CliError(str(exc)) from exc
        config = replace(
            config,
            source=replace(config.source, kind="replay", path=args.recording),
            game=GameSettings(recording.game, players, config.game.edition),
        )
    if args.observations:
        config = replace(config, source=replace(config.source, frames=False))
    if args.stable_seconds is not None:
        config = replace(config, source=replace(config.source, stable_seconds=args.stable_seconds))
    if args.calibration:
        config = replace(config, calibration=Path(args.calibration))
    if args.speed is not None:
        if args.speed < 0:
            raise CliError("--speed must be 0 (as fast as possible) or positive")
        config = replace(config, source=replace(config.source, speed=args.speed))
    if config.source.kind == "replay" and not config.source.path:
        raise CliError("nothing to referee: give --recording or a configuration with a [source] path")
    if config.source.kind not in ("replay", "none") and config.calibration is None:
        raise CliError(
            f"a live {config.source.kind} camera needs a calibration file: run `bloxcam calibrate lens` and "
            "`bloxcam calibrate board`, then set [calibration] file (or --calibration)"
        )
    return config


def has_frames(folder: Path) -> bool:
    return (folder / "frames").is_dir() or (folder / "video.mp4").is_file()


def make_runner(config, service, recording):
    """The source runners: recognition of camera frames, or a replay of recorded
    observations; and a live Block Out! table's stack sensor beside its camera."""
    from service.runner import RunnerGroup

    runners = []
    if config.source.kind != "none":
        runners.append(source_runner(config, service, recording))
    if config.game.name == "blockout" and config.sensor.kind != "none" and config.source.kind != "replay":
        runners.append(sensor_runner(service, config.sensor, config.stability))
    return runners[0] if len(runners) == 1 else RunnerGroup(runners)


def sensor_runner(service, sensor_config, stability_config):
    """Block Out!'s live stack sensor: the accelerometer through the stability detector."""
    from device.accel.sensor import open_sensor, stream
    from device.stability import StabilityDetector
    from service.runner import AccelRunner

    try:
        sensor = open_sensor(sensor_config)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot open the {sensor_config.kind} sensor: {exc}") from exc
    runner = AccelRunner(service, None, StabilityDetector(stability_config), speed=0)
    runner.samples = stream(sensor, stopped=runner.stopping)
    return runner


def source_runner(config, service, recording):
    from service.runner import CameraRunner, ReplayRunner

    source = config.source
    folder = Path(source.path) if source.kind == "replay" else None
    sensor: list[dict] = []
    if folder is not None and config.game.name == "blockout" and source.frames and (folder / "accel.csv").is_file():
        if not has_frames(folder):
            return accel_runner(service, folder, recording, source.speed, config.stability)
        # A camera watches the stack too: one thread feeds frames and sensor events in time order.
        sensor = sensor_lines(folder, config.stability)
    if folder is not None and not (source.frames and folder.is_dir() and has_frames(folder)):
        return ReplayRunner(service, recording, source.speed)
    import vision
    from calibration.store import CalibrationError, load_calibration
    from device.camera import CameraConfig, ReplaySource, ResilientCamera, open_source

    try:
        if config.calibration is not None:
            calibration = load_calibration(config.calibration)
        else:
            from vision.evaluate import calibration_from_dir

            calibration = calibration_from_dir(folder / "calibration", config.game.name)
        recognizer = vision.make_recognizer(config.game.name, calibration, stable_seconds=source.stable_seconds)
    except (CalibrationError, ValueError) as exc:
        raise CliError(f"cannot set up recognition: {exc}") from exc
    service.source.warnings = setup_warnings(config.game.name, calibration)
    for warning in service.source.warnings:
        print(f"bloxcam: warning: {warning}", file=sys.stderr, flush=True)
    if folder is not None:
        speed = source.speed

        def make_source():
            if speed <= 0:
                return ReplaySource(folder)
            # Recorded times run ``speed`` times faster than the wall clock.
            return ReplaySource(folder, realtime=True, clock=lambda: time.monotonic() * speed,
                                sleep=lambda s: time.sleep(s / speed))

        inputs = [line for line in recording.lines if "game" not in line and line.get("kind") != "stability"] + sensor
        # A replayed fixture's frames keep their recorded times: the declarations are timed on them.
        camera = ResilientCamera(make_source, give_up_s=0, live_clock=False)
        return CameraRunner(service, camera, recognizer, inputs, speed, photo_desk=photo_desk(service, calibration))
    camera_config = CameraConfig(kind=source.kind, device=source.path or 0)
    return CameraRunner(service, ResilientCamera(lambda: open_source(camera_config), live_clock=True), recognizer,
                        photo_desk=photo_desk(service, calibration))


def setup_warnings(game: str, calibration) -> list[str]:
    """What the players should know about the camera set-up, on the terminal and the page:
    for Blox, a camera too nearly straight above to read the blocks under a tower's top
    (the check ``bloxcam calibrate board`` makes, :mod:`calibration.tower_view`)."""
    if game != "blox" or calibration.pose is None:
        return []
    from calibration.tower_view import tower_view

    warning = tower_view(calibration.kit, calibration.pose, calibration.camera).warning()
    return [warning] if warning else []


def photo_desk(service, calibration):
    """Bloxx! tables read players' sheets held under the camera; other games have no sheets."""
    if service.record.game != "bloxx":
        return None
    from service.sheetphoto import SheetPhotoDesk
    from vision.bloxx import SheetReader

    return SheetPhotoDesk(SheetReader(calibration.kit, service.referee.edition))



def run(args: argparse.Namespace) -> int:
    import uvicorn

    from service.gamelog import GameLogError
    from service.recording import RecordingError, load_recording
    from service.table import TableError, TableService
    from service.text import describe_event
    from service.web import SHUTDOWN_GRACE_S, create_app, run_until_stopped

    config = build_config(args)
    try:
        recording = load_recording(config.source.path) if config.source.kind == "replay" else None
        service = TableService(config)
    except (RecordingError, TableError, GameLogError) as exc:
        raise CliError(str(exc)) from exc
    if not args.quiet:
        service.subscribe(lambda events, reset: [print(describe_event(e), flush=True) for e in events])
    runner = make_runner(config, service, recording)
    publisher = None
    if config.mqtt.host:
        from service.mqtt import TablePublisher

        try:
            publisher = TablePublisher(service, config.mqtt)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
        publisher.start()
        print(f"bloxcam: publishing to mqtt://{config.mqtt.host}:{config.mqtt.port}/{publisher.topics['status'].rsplit('/', 1)[0]}/",
              flush=True)
    app = create_app(service, runner)
    url = f"http://{config.table.host}:{config.table.port}/"
    resumed = f", resumed after event {service.restored_events}" if service.restored_events else ""
    print(f"bloxcam: table {config.table.name!r}, game {service.record.id} ({config.game.name}{resumed}); page at {url}",
          flush=True)
    if not config.table.pin:
        print("bloxcam: no table PIN set: the page is read-only (set [table] pin or --pin)", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, host=config.table.host, port=config.table.port, log_level="warning",
                                           timeout_graceful_shutdown=SHUTDOWN_GRACE_S))
    runner.start()
    # Under systemd (Type=notify): READY once the page listens; watchdog pings only while
    # the referee loop turns, so a hung loop gets the service restarted.
    threading.Thread(target=_notify_when_listening, args=(server, url), daemon=True).start()
    watchdog = systemd.Watchdog(runner.healthy).start()
    try:
        run_until_stopped(server)
    finally:
        systemd.stopping("saving the log")
        watchdog.stop()
        runner.stop()
        if publisher is not None:
            publisher.stop()
        service.log.close()
    return 0


def _notify_when_listening(server, url: str) -> None:
    while not server.started and not server.should_exit:
        time.sleep(0.05)
    if server.started:
        systemd.ready(f"serving {url}")


def recorded_trace(folder: Path) -> list:
    """A fixture's ``accel.csv`` samples; a bad file is the user's error, said plainly."""
    from device.accelcsv import AccelCsvError, read_csv

    try:
        return list(read_csv(folder / "accel.csv"))
    except AccelCsvError as exc:
        raise CliError(str(exc)) from exc


def sensor_lines(folder: Path, stability_config) -> list[dict]:
    """The stability detector's events over a recorded trace, as recording lines."""
    from device.stability import StabilityDetector

    detector = StabilityDetector(stability_config)
    events = [e for sample in recorded_trace(folder) for e in detector.update(*sample)] + detector.finish()
    return [{"kind": "stability", "event": e["event"], "t": e["t"]} for e in events]


def accel_runner(service, folder: Path, recording, speed: float, stability_config):
    """Block Out!: the recorded accelerometer trace through the stability detector."""
    from device.stability import StabilityDetector
    from service.runner import AccelRunner

    samples = recorded_trace(folder)
    inputs = [line for line in recording.lines if "declare" in line or "correct" in line or "undo" in line]
    return AccelRunner(service, samples, StabilityDetector(stability_config), inputs, speed)
