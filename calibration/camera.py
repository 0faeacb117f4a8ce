"""Camera intrinsics: lens-calibrated or a default per camera model.

Without a lens calibration bloxcam uses a nominal model for the camera it was told
about. The defaults come from the sensors' data sheets (Camera Module 3: IMX708,
1.4 um pixels, 4.74 mm lens, wide 2.75 mm; 2x2 binned for the 2304x1296 stream) and a
typical 65-70 degree USB webcam; their distortion is a guess, which is why every report
says when a default is in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics with OpenCV's 5-term distortion (k1, k2, p1, p2, k3)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    dist: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)
    source: str = "default"  # "lens-calibration" or "default:<model>"
    rms_px: float | None = None

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0, self.cx], [0, self.fy, self.cy], [0, 0, 1]], dtype=np.float64)

    @property
    def D(self) -> np.ndarray:
        return np.array(self.dist, dtype=np.float64)

    @property
    def is_default(self) -> bool:
        return self.source.startswith("default")

    def scaled(self, width: int, height: int) -> "Intrinsics":
        """The same lens at another stream resolution (same aspect, scaled pixels).

        Pixel centres scale about the image corner: x' = (x + 0.5) * s - 0.5."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(
            width, height, self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5,
            self.dist, self.source, self.rms_px,
        )

    def to_json(self) -> dict:
        return {
            "width": self.width, "height": self.height, "fx": self.fx, "fy": self.fy, "cx": self.cx, "cy": self.cy,
            "dist": list(self.dist), "source": self.source, "rms_px": self.rms_px,
        }

    @staticmethod
    def from_json(data: dict) -> "Intrinsics":
        return Intrinsics(
            int(data["width"]), int(data["height"]), float(data["fx"]), float(data["fy"]), float(data["cx"]),
            float(data["cy"]), tuple(float(v) for v in data.get("dist", [0, 0, 0, 0, 0])),
            str(data.get("source", "default")), data.get("rms_px"),
        )


@dataclass(frozen=True)
class CameraModel:
    name: str
    description: str
    width: int
    height: int
    focal_px: float
    dist: tuple[float, ...] = field(default=(0.0, 0.0, 0.0, 0.0, 0.0))

    def intrinsics(self, width: int | None = None, height: int | None = None) -> Intrinsics:
        base = Intrinsics(
            self.width, self.height, self.focal_px, self.focal_px, (self.width - 1) / 2, (self.height - 1) / 2,
            self.dist, f"default:{self.name}",
        )
        if width is None or (width, height) == (self.width, self.height):
            return base
        return base.scaled(width, height or round(width * self.height / self.width))


CAMERA_MODELS: dict[str, CameraModel] = {
    m.name: m
    for m in (
        # 4.74 mm / 1.4 um = 3386 px at 4608 wide; the 2304x1296 stream bins 2x2.
        CameraModel("cm3", "Raspberry Pi Camera Module 3 (IMX708), standard lens", 2304, 1296, 1693.0,
                    (0.03, -0.08, 0.0, 0.0, 0.0)),
        # 2.75 mm / 1.4 um = 1964 px at 4608 wide: about 102 degrees horizontally.
        CameraModel("cm3-wide", "Raspberry Pi Camera Module 3 Wide (IMX708), 2.75 mm lens", 2304, 1296, 982.0,
                    (-0.06, 0.02, 0.0, 0.0, 0.0)),
        # A typical 1280x720 webcam, about 65 degrees horizontally.
        CameraModel("webcam", "generic USB webcam, 1280x720", 1280, 720, 1000.0, (0.0, 0.0, 0.0, 0.0, 0.0)),
    )
}


def default_intrinsics(model: str, width: int | None = None, height: int | None = None) -> Intrinsics:
    """The nominal intrinsics of ``model`` (see :data:`CAMERA_MODELS`) at a resolution."""
    try:
        cam = CAMERA_MODELS[model]
    except KeyError:
        raise ValueError(f"unknown camera model {model!r}; known: {', '.join(CAMERA_MODELS)}") from None
    return cam.intrinsics(width, height)
