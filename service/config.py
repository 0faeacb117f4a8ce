"""A table's configuration: one TOML file, checked with errors that say what to fix.

```toml
[table]
name = "table-1"
pin = "2468"            # needed for every change made from the page or the API
host = "0.0.0.0"
port = 8080
log = "/var/lib/bloxcam/table-1.sqlite"

[game]
name = "blox"
players = ["green", "brown", "blue"]

[source]
kind = "replay"         # replay | opencv | picamera2
path = "tests/fixtures/blox/game-3p"
speed = 1.0             # replay speed factor; 0 = as fast as possible
frames = true           # a replayed fixture with camera frames goes through recognition
stable_seconds = 1.0    # stillness needed before a board is committed

[calibration]
file = ""

[sensor]                # Block Out!: the accelerometer under the stacking base
kind = "mpu6050"        # none | mpu6050 | adxl345 | iio
bus = 1                 # I2C bus; address defaults to 0x68 (mpu6050) or 0x53 (adxl345)

[stability]             # Block Out!: any threshold of device.stability.StabilityConfig
base_hit_g = 1.5        # e.g. a table whose knocks reach the sensor above 1 g
```
Relative paths are taken from the config file's folder.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from device.accel.sensor import SENSORS, SensorConfig
from device.stability import StabilityConfig
from service.tomlconfig import TomlReader, load_toml

GAMES = ("blox", "bloxo", "bloxx", "blockers", "blockout")
SOURCES = ("replay", "opencv", "picamera2", "none")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class TableSettings:
    name: str = "table"
    pin: str = ""
    host: str = "127.0.0.1"
    port: int = 8080
    log: Path = Path("bloxcam.sqlite")


@dataclass(frozen=True)
class GameSettings:
    name: str = "blox"
    players: tuple[str, ...] = ("green", "brown", "blue")
    edition: Path | None = None


@dataclass(frozen=True)
class SourceSettings:
    """Where the table's inputs come from.

    ``replay``: a recorded fixture folder; when it holds camera frames they go through
    recognition (``frames = true``, the default), else its recorded observations are
    replayed. ``opencv`` (``path``: webcam number or video file) and ``picamera2``:
    a live camera, which needs a calibration file. ``none``: no camera (a Block Out!
    table with only its stack sensor). ``stable_seconds``: how long the
    scene must be still before an observation is stable and may be committed.
    """

    kind: str = "replay"
    path: str = ""
    speed: float = 1.0
    frames: bool = True
    stable_seconds: float = 1.0


@dataclass(frozen=True)
class MqttSettings:
    """Publishing to an MQTT broker (issue 12); empty host = off."""

    host: str = ""
    port: int = 1883
    username: str = ""
    password: str = ""
    tls: bool = False
    prefix: str = "bloxcam"
    stats_interval: float = 10.0


@dataclass(frozen=True)
class TableConfig:
    table: TableSettings = field(default_factory=TableSettings)
    game: GameSettings = field(default_factory=GameSettings)
    source: SourceSettings = field(default_factory=SourceSettings)
    calibration: Path | None = None
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    path: Path | None = None
    sensor: SensorConfig = field(default_factory=SensorConfig)
    stability: StabilityConfig = field(default_factory=StabilityConfig)


def load_config(path: str | Path) -> TableConfig:
    path = Path(path)
    return parse_config(load_toml(path, ConfigError), path)


def parse_config(data: dict[str, Any], path: Path | None = None) -> TableConfig:
    where = str(path) if path else "configuration"
    base = path.parent if path else Path.cwd()
    reader = TomlReader(data, where, ConfigError, {"table", "game", "source", "calibration", "mqtt", "sensor",
                                                     "stability"})
    section, typed = reader.section, reader.typed

    def resolve(p: str) -> Path:
        candidate = Path(p).expanduser()
        return candidate if candidate.is_absolute() else base / candidate

    t = section("table", {"name", "pin", "host", "port", "log"})
    table = TableSettings(
        name=typed("table", t, "name", str, "table"),
        pin=_pin(t.get("pin", ""), where),
        host=typed("table", t, "host", str, "127.0.0.1"),
        port=typed("table", t, "port", int, 8080),
        log=resolve(typed("table", t, "log", str, "bloxcam.sqlite")),
    )
    if not 0 <= table.port <= 65535:
        raise ConfigError(f"{where}: [table] port {table.port} is not a TCP port")
    if table.pin and not (4 <= len(table.pin) <= 12 and table.pin.isalnum()):
        raise ConfigError(f"{where}: [table] pin must be 4 to 12 letters or digits")

    g = section("game", {"name", "players", "edition"})
    name = typed("game", g, "name", str, "blox")
    if name not in GAMES:
        raise ConfigError(f"{where}: [game] name {name!r} is not one of {list(GAMES)}")
    players = g.get("players", ["green", "brown", "blue"])
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players) or not players:
        raise ConfigError(f"{where}: [game] players must be a list of player colours")
    edition = g.get("edition")
    game = GameSettings(name, tuple(players), resolve(edition) if edition else None)

    s = section("source", {"kind", "path", "speed", "frames", "stable_seconds"})
    kind = typed("source", s, "kind", str, "replay")
    if kind not in SOURCES:
        raise ConfigError(f"{where}: [source] kind {kind!r} is not one of {list(SOURCES)}")
    source_path = typed("source", s, "path", str, "")
    if kind == "replay":
        if not source_path:
            raise ConfigError(f"{where}: [source] path is needed for a replay source")
        source_path = str(resolve(source_path))
        if not Path(source_path).exists():
            raise ConfigError(f"{where}: [source] path {source_path} does not exist")
    speed = typed("source", s, "speed", float, 1.0)
    if speed < 0:
        raise ConfigError(f"{where}: [source] speed must be 0 (as fast as possible) or positive")
    stable_seconds = typed("source", s, "stable_seconds", float, 1.0)
    if stable_seconds < 0:
        raise ConfigError(f"{where}: [source] stable_seconds must not be negative")
    source = SourceSettings(kind, source_path, speed, typed("source", s, "frames", bool, True), stable_seconds)

    c = section("calibration", {"file"})
    calibration = resolve(c["file"]) if c.get("file") else None

    m = section("mqtt", {"host", "port", "username", "password", "tls", "prefix", "stats_interval"})
    mqtt = MqttSettings(
        host=typed("mqtt", m, "host", str, ""),
        port=typed("mqtt", m, "port", int, 1883),
        username=typed("mqtt", m, "username", str, ""),
        password=typed("mqtt", m, "password", str, ""),
        tls=typed("mqtt", m, "tls", bool, False),
        prefix=typed("mqtt", m, "prefix", str, "bloxcam"),
        stats_interval=typed("mqtt", m, "stats_interval", float, 10.0),
    )
    sensor = _sensor(section, typed, resolve, where)
    if kind == "none" and (name != "blockout" or sensor.kind == "none"):
        raise ConfigError(f"{where}: [source] kind 'none' (no camera) is for a Block Out! table with a [sensor]")
    return TableConfig(table, game, source, calibration, mqtt, path, sensor, _stability(section, where))


def _stability(section: Any, where: str) -> StabilityConfig:
    """[stability]: Block Out!'s detector thresholds, any StabilityConfig field (its
    docstring gives the meaning and the default); the rest keep their defaults."""
    names = {f.name for f in dataclasses.fields(StabilityConfig)}
    try:
        return StabilityConfig().with_overrides(section("stability", names))
    except ValueError as exc:
        raise ConfigError(f"{where}: [stability] {exc}") from None


def _sensor(section: Any, typed: Any, resolve: Any, where: str) -> SensorConfig:
    x = section("sensor", {"kind", "bus", "address", "rate_hz", "range_g", "iio_device", "iio_dev", "poll_s", "emulate"})
    kind = typed("sensor", x, "kind", str, "none")
    if kind not in SENSORS:
        raise ConfigError(f"{where}: [sensor] kind {kind!r} is not one of {list(SENSORS)}")
    emulate = typed("sensor", x, "emulate", str, "")
    if emulate:
        emulate = str(resolve(emulate))
        if not Path(emulate).is_file():
            raise ConfigError(f"{where}: [sensor] emulate {emulate} is not a trace file")
    rate = x.get("rate_hz")
    try:
        return SensorConfig(
            kind=kind, bus=typed("sensor", x, "bus", int, 1),
            address=typed("sensor", x, "address", int, 0) or None,
            rate_hz=float(typed("sensor", x, "rate_hz", float, 0.0)) if rate is not None else None,
            range_g=typed("sensor", x, "range_g", int, 0) or None,
            iio_device=typed("sensor", x, "iio_device", str, SensorConfig.iio_device),
            iio_dev=typed("sensor", x, "iio_dev", str, "") or None,
            poll_s=typed("sensor", x, "poll_s", float, SensorConfig.poll_s),
            emulate=emulate,
        )
    except ValueError as exc:
        raise ConfigError(f"{where}: [sensor] {exc}") from None


def _pin(value: Any, where: str) -> str:
    # A PIN written without quotes in TOML arrives as an integer; leading zeros would be lost.
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError(f"{where}: [table] pin must be a string of 4 to 12 letters or digits")
    return str(value)
