"""Colour maths: sRGB <-> linear light, CIELAB (D65), light colour temperature.

Written out here (not cv2.cvtColor) so the survey and the renderer agree exactly on the
transfer curve and the white point, whatever OpenCV's 8-bit Lab scaling does.
"""

from __future__ import annotations

import numpy as np

_M_RGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
_WHITE_D65 = _M_RGB_TO_XYZ.sum(axis=1)


def srgb_to_linear(rgb: np.ndarray) -> np.ndarray:
    """sRGB in 0..255 (any shape, last axis channels) to linear light 0..1."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(lin: np.ndarray) -> np.ndarray:
    """Linear light 0..1 to sRGB 0..255 floats (not rounded, not clipped above)."""
    c = np.clip(np.asarray(lin, dtype=np.float64), 0.0, None)
    return 255.0 * np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)


def srgb_lut() -> np.ndarray:
    """256-entry float32 table: sRGB byte -> linear light."""
    return srgb_to_linear(np.arange(256)).astype(np.float32)


def linear_to_lab(lin: np.ndarray) -> np.ndarray:
    """Linear RGB (last axis) to CIELAB, D65 white."""
    xyz = np.asarray(lin, dtype=np.float64) @ _M_RGB_TO_XYZ.T / _WHITE_D65
    eps = (6 / 29) ** 3
    f = np.where(xyz > eps, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    L = 116 * f[..., 1] - 16
    a = 500 * (f[..., 0] - f[..., 1])
    b = 200 * (f[..., 1] - f[..., 2])
    return np.stack([L, a, b], axis=-1)


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    return linear_to_lab(srgb_to_linear(rgb))


def delta_e(lab1: np.ndarray, lab2: np.ndarray) -> np.ndarray:
    """CIE76 colour difference."""
    return np.linalg.norm(np.asarray(lab1, float) - np.asarray(lab2, float), axis=-1)


# Blackbody colours as sRGB bytes, a standard published approximation; interpolated in
# linear light. The 6500 K entry is close to D65 white, the reference of the tint.
_KELVIN_TABLE = (
    (2700, (255, 169, 87)), (3000, (255, 180, 107)), (3500, (255, 196, 137)), (4000, (255, 209, 163)),
    (4500, (255, 219, 186)), (5000, (255, 228, 206)), (5500, (255, 236, 224)), (6000, (255, 243, 239)),
    (6500, (255, 249, 253)), (7000, (245, 243, 255)),
)


def kelvin_tint(kelvin: float) -> np.ndarray:
    """Linear RGB multipliers of a light at ``kelvin`` relative to 6500 K, green = 1."""
    ks = np.array([k for k, _ in _KELVIN_TABLE], dtype=float)
    lin = srgb_to_linear(np.array([c for _, c in _KELVIN_TABLE], dtype=float))
    k = float(np.clip(kelvin, ks[0], ks[-1]))
    rgb = np.array([np.interp(k, ks, lin[:, i]) for i in range(3)])
    ref = srgb_to_linear(np.array(_KELVIN_TABLE[8][1], dtype=float))
    tint = rgb / ref
    return tint / tint[1]
