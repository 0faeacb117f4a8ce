"use strict";
// Live updates shared by every table page, all on the server-sent stream: the state, then the
// game's recent events (the last `keep`; after a reconnect, those missed), then each new batch.
// The server subscribes the page and reads the recent events at the same instant, so none is
// lost while the page loads. Events are handed on once each, in seq order; a new game starts
// the count again. `onEvents(events, live)`: live is false for the recent ones.
function connectLive({ keep, onState, onEvents, onFrame, onStatus }) {
  let lastSeq = 0;
  let gameId = null;
  const handOn = (events, live) => {
    const fresh = events.filter((e) => e.seq > lastSeq);
    if (fresh.length) { lastSeq = fresh[fresh.length - 1].seq; onEvents(fresh, live); }
  };
  const source = new EventSource(`/api/stream?recent=${keep}`);
  source.addEventListener("state", (m) => {
    const s = JSON.parse(m.data);
    if (gameId !== null && s.game_id !== gameId) lastSeq = 0;
    gameId = s.game_id;
    onState(s);
  });
  source.addEventListener("recent", (m) => handOn(JSON.parse(m.data), false));
  source.addEventListener("events", (m) => handOn(JSON.parse(m.data), true));
  if (onFrame) source.addEventListener("frame", (m) => onFrame(JSON.parse(m.data).version));
  source.onopen = () => onStatus("live");
  source.onerror = () => onStatus("reconnecting…");
}
