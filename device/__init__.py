"""Hardware: camera sources, accelerometers and Block Out!'s stability detector.

Optional hardware libraries (``picamera2``, ``smbus2``) are imported lazily, only by the
source or bus that needs them, so everything here imports and runs on any machine.

- :mod:`device.camera`: frame sources (picamera2, OpenCV, fixture replay) and the
  resilient wrapper that turns a vanishing camera into ``fault`` events.
- :mod:`device.accel`: MPU-6050 and ADXL345 drivers over an SMBus-like object, the
  Linux IIO reader, and the resilient reader that retries and reports faults.
- :mod:`device.stability`: the Block Out! stability detector (R-BLOCKOUT-3/4).
- :mod:`device.tracesim`: physically based, seeded simulator of the base's response.
- :mod:`device.emulators`: register-level chip emulators, a Picamera2 stand-in and a
  fake IIO tree, used by the tests and useful on the bench.
"""
