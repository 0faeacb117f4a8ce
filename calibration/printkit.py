"""The printable kit: the four board markers and the ChArUco lens sheet, at true scale.

Pages are rasterised at 300 dpi and written both as PNG (with the 300 dpi pHYs chunk)
and as one PDF whose pages are those rasters placed at their physical size. The PDF
is written by hand (a few objects, Flate-compressed grey images): no dependency. Each
page carries a 100 mm check ruler, to be measured after printing ("actual size", no
"fit to page").
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cv2
import numpy as np

from calibration.kit import Kit
from calibration.render.textures import charuco_image, marker_image

DPI = 300
A4 = (210.0, 297.0)


def _px(mm: float) -> int:
    return int(round(mm * DPI / 25.4))


def _text(img: np.ndarray, text: str, x_mm: float, y_mm: float, h_mm: float = 3.5) -> None:
    font = cv2.FONT_HERSHEY_SIMPLEX
    (_, h), _ = cv2.getTextSize(text, font, 1.0, 1)
    scale = _px(h_mm) / h
    cv2.putText(img, text, (_px(x_mm), _px(y_mm)), font, scale, 0, max(1, _px(0.3)), cv2.LINE_AA)


def _ruler(img: np.ndarray, x_mm: float, y_mm: float) -> None:
    """A 100 mm ruler with mm ticks, 5 and 10 mm ticks longer, labelled."""
    x0 = _px(x_mm)
    y = _px(y_mm)
    cv2.line(img, (x0, y), (_px(x_mm + 100), y), 0, max(1, _px(0.25)))
    for k in range(101):
        length = 6 if k % 10 == 0 else 4 if k % 5 == 0 else 2
        x = _px(x_mm + k)
        cv2.line(img, (x, y), (x, y - _px(length)), 0, max(1, _px(0.2)))
    for k in range(0, 101, 10):
        _text(img, str(k), x_mm + k - 1.2, y_mm + 4.5, 2.5)
    _text(img, "100 mm check ruler: measure after printing at actual size (no scaling)", x_mm, y_mm + 9, 3.0)


def marker_page(kit: Kit, game: str = "blox") -> np.ndarray:
    page = np.full((_px(A4[1]), _px(A4[0])), 255, np.uint8)
    s = kit.markers.size_mm
    q = kit.markers.quiet_zone_mm
    _text(page, f"bloxcam board markers: {kit.markers.dictionary}, {s:g} mm", 15, 18, 4)
    _text(page, "Cut along the dotted lines. Put each marker diagonally outside its corner of the grid,", 15, 26, 3)
    _text(page, "its inner corner touching the grid corner.", 15, 31, 3)
    slots = {"far_left": (30, 50), "far_right": (120, 50), "near_left": (30, 150), "near_right": (120, 150)}
    side = _px(s)
    inner = {"far_left": (1, 1), "far_right": (0, 1), "near_right": (0, 0), "near_left": (1, 0)}
    for name, (x, y) in slots.items():
        mid = kit.markers.ids[name]
        img = marker_image(kit, mid, side)
        page[_px(y):_px(y) + side, _px(x):_px(x) + side] = img
        # Dotted cut line at the quiet zone.
        x0, y0, x1, y1 = _px(x - q), _px(y - q), _px(x + s + q), _px(y + s + q)
        for k in range(x0, x1, 12):
            page[y0, k:k + 6] = 120
            page[y1, k:k + 6] = 120
        for k in range(y0, y1, 12):
            page[k:k + 6, x0] = 120
            page[k:k + 6, x1] = 120
        # No mark may touch the marker: anything joined to its border changes its outline.
        ix, iy = inner[name]
        where = ("bottom" if iy else "top") + "-" + ("right" if ix else "left")
        _text(page, f"id {mid}: {name.replace('_', '-')}", x - q, y + s + q + 6, 3.5)
        _text(page, f"its {where} corner on the grid corner", x - q, y + s + q + 11, 2.8)
    _ruler(page, 25, 260)
    return page


def charuco_page(kit: Kit) -> np.ndarray:
    c = kit.charuco
    w_mm, h_mm = c.squares_x * c.square_mm, c.squares_y * c.square_mm
    paper = (297.0, 210.0) if w_mm > 190 else A4
    page = np.full((_px(paper[1]), _px(paper[0])), 255, np.uint8)
    x0, y0 = (paper[0] - w_mm) / 2, 22.0
    pat = charuco_image(kit, DPI / 25.4)
    page[_px(y0):_px(y0) + pat.shape[0], _px(x0):_px(x0) + pat.shape[1]] = pat[: page.shape[0] - _px(y0),
                                                                            : page.shape[1] - _px(x0)]
    _text(page, f"bloxcam lens sheet: ChArUco {c.squares_x}x{c.squares_y}, squares {c.square_mm:g} mm, "
                f"markers {c.marker_mm:g} mm, {c.dictionary}", x0, 14, 3.5)
    _ruler(page, x0, y0 + h_mm + 10)
    return page


def bloxx_sheet_page(kit: Kit, edition: object | None = None) -> np.ndarray:
    """An A4 page of blank Bloxx! sheets matching the edition (as many as fit, with cut
    marks), drawn by the same code the renderer and :class:`vision.bloxx.SheetReader` use."""
    from calibration.render.bloxx import draw_blank_sheet
    from engine.bloxx.edition import load_edition

    ed = edition or load_edition()
    spec = kit.require_bloxx().sheet
    page = np.full((_px(A4[1]), _px(A4[0]), 3), 255, np.uint8)
    sheet = cv2.cvtColor(draw_blank_sheet(kit, ed, DPI / 25.4), cv2.COLOR_RGB2BGR)
    pw, ph = spec.paper_mm
    cols = max(1, int((A4[0] - 10) // pw))
    rows = max(1, int((A4[1] - 25) // ph))
    x0 = (A4[0] - cols * pw) / 2
    y0 = 12.0
    _text(page, f"bloxcam: blank Bloxx! sheets ({ed.name} edition), {pw:g} x {ph:g} mm; cut along the grey lines",
          x0, 8, 3.0)
    for i in range(rows):
        for j in range(cols):
            x, y = _px(x0 + j * pw), _px(y0 + i * ph)
            h, w = sheet.shape[:2]
            page[y:y + h, x:x + w] = np.minimum(page[y:y + h, x:x + w], sheet)
            cv2.rectangle(page, (x, y), (x + w - 1, y + h - 1), (170, 170, 170), 1)
    return page


def png_bytes(img: np.ndarray, dpi: int = DPI) -> bytes:
    """PNG with a pHYs chunk so viewers and printers know the true size."""
    ok, buf = cv2.imencode(".png", img)
    if not ok:
        raise RuntimeError("PNG encoding failed")
    data = buf.tobytes()
    ppm = int(round(dpi / 0.0254))
    body = b"pHYs" + struct.pack(">IIB", ppm, ppm, 1)
    chunk = struct.pack(">I", 9) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    end_ihdr = 8 + 8 + 13 + 4  # signature, IHDR length+type, IHDR data, CRC
    return data[:end_ihdr] + chunk + data[end_ihdr:]


def pdf_bytes(pages: list[np.ndarray], dpi: int = DPI) -> bytes:
    """A PDF with one raster page each (grey, or BGR colour), placed at its physical size."""
    objects: list[bytes] = []

    def add(obj: bytes) -> int:
        objects.append(obj)
        return len(objects)

    catalog = add(b"")
    pages_id = add(b"")
    kids = []
    for img in pages:
        h, w = img.shape[:2]
        wpt, hpt = w * 72.0 / dpi, h * 72.0 / dpi
        # Grey pages as DeviceGray; colour pages (BGR, as OpenCV holds them) as DeviceRGB.
        colour = img.ndim == 3
        data = img[..., ::-1] if colour else img
        raw = zlib.compress(np.ascontiguousarray(data).tobytes(), 9)
        space = b"/DeviceRGB" if colour else b"/DeviceGray"
        im = add(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s "
                 b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % (w, h, space, len(raw)) + raw
                 + b"\nendstream")
        content = b"q %.4f 0 0 %.4f 0 0 cm /Im0 Do Q" % (wpt, hpt)
        cs = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %.4f %.4f] /Resources << /XObject << /Im0 %d 0 R >> >> "
                        b"/Contents %d 0 R >>" % (pages_id, wpt, hpt, im, cs)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id
    objects[pages_id - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                             + b"] /Count %d >>" % len(kids))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    return bytes(out)


def write_kit(kit: Kit, out_dir: str | Path, game: str = "blox") -> list[Path]:
    """Write ``bloxcam-kit.pdf``, ``markers.png`` and ``charuco.png`` into ``out_dir``;
    with a kit that has a ``bloxx`` section also ``bloxx-sheets.pdf`` and
    ``bloxx-sheets.png`` (blank Bloxx! sheets, a page of its own so the board kit
    stays two pages)."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    pages = [marker_page(kit, game), charuco_page(kit)]
    paths = [d / "bloxcam-kit.pdf", d / "markers.png", d / "charuco.png"]
    paths[0].write_bytes(pdf_bytes(pages))
    paths[1].write_bytes(png_bytes(pages[0]))
    paths[2].write_bytes(png_bytes(pages[1]))
    if kit.bloxx is not None:
        sheets = bloxx_sheet_page(kit)
        paths += [d / "bloxx-sheets.pdf", d / "bloxx-sheets.png"]
        paths[3].write_bytes(pdf_bytes([sheets]))
        paths[4].write_bytes(png_bytes(sheets))
    return paths
