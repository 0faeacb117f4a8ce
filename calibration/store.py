"""One calibration file per table: camera, board pose, colour survey, kit. Versioned JSON.

A file from a newer bloxcam, a file of another kind, or a damaged file raises
:class:`CalibrationError` with a sentence saying what to do.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibration.camera import Intrinsics
from calibration.kit import Kit, KitError, kit_from_dict, load_kit
from calibration.pose import BoardPose

FORMAT = "bloxcam-calibration"
VERSION = 1


class CalibrationError(ValueError):
    """A calibration file that cannot be used."""


@dataclass
class Calibration:
    game: str
    camera: Intrinsics
    camera_model: str
    kit: Kit
    pose: BoardPose | None = None
    survey: dict[str, Any] | None = None
    lens: dict[str, Any] | None = None
    table: str = "table"
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": VERSION, "table": self.table, "game": self.game, "created": self.created,
            "camera_model": self.camera_model, "camera": self.camera.to_json(), "lens": self.lens,
            "pose": self.pose.to_json() if self.pose else None, "survey": self.survey, "kit": self.kit.raw,
        }


def save_calibration(cal: Calibration, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(cal.to_json(), indent=1) + "\n", "utf-8")
    tmp.replace(p)  # never leave a half-written calibration behind
    return p


def load_calibration(path: str | Path) -> Calibration:
    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise CalibrationError(f"calibration file not found: {p} (run `bloxcam calibrate board FRAME` first)") from None
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{p} is not valid JSON ({exc}); re-run the calibration") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"{p} is not a bloxcam calibration file")
    version = data.get("version")
    if not isinstance(version, int) or version < 1:
        raise CalibrationError(f"{p}: missing or bad version")
    if version > VERSION:
        raise CalibrationError(f"{p} was written by a newer bloxcam (calibration version {version}; this one reads "
                               f"up to {VERSION}); upgrade bloxcam or re-run the calibration")
    try:
        camera = Intrinsics.from_json(data["camera"])
        kit = kit_from_dict(data["kit"], f"{p} (embedded kit)") if data.get("kit") else load_kit()
        pose = BoardPose.from_json(data["pose"]) if data.get("pose") else None
        return Calibration(
            game=str(data["game"]), camera=camera, camera_model=str(data.get("camera_model", "unknown")), kit=kit,
            pose=pose, survey=data.get("survey"), lens=data.get("lens"), table=str(data.get("table", "table")),
            created=str(data.get("created", "")),
        )
    except KitError as exc:
        raise CalibrationError(str(exc)) from None
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(f"{p}: damaged calibration file ({type(exc).__name__}: {exc}); re-run the calibration") from None
