"""Live referees for the games other than Blox (Blox's is :mod:`service.referee`).

Each referee has the interface :class:`service.table.TableService` relies on:
``feed(line) -> events``, ``observe``/``declare``/``correct``/``undo``, ``snapshot()``,
``seq``, ``stats``, ``clock`` and ``state`` (the engine state, with ``scores()``).
"""
