"use strict";
// Live updates shared by every table page: the recent events first, then the server-sent
// stream. Events are handed on once each, in seq order; a new game starts the count again.
async function connectLive({ keep, onState, onEvents, onFrame, onStatus }) {
  let lastSeq = 0;
  let gameId = null;
  const recent = await (await fetch("/api/events?after=0&limit=5000")).json();
  onEvents(recent.slice(-keep), false);
  lastSeq = recent.length ? recent[recent.length - 1].seq : 0;
  const source = new EventSource("/api/stream");
  source.addEventListener("state", (m) => {
    const s = JSON.parse(m.data);
    if (gameId !== null && s.game_id !== gameId) lastSeq = 0;
    gameId = s.game_id;
    onState(s);
  });
  source.addEventListener("events", (m) => {
    const fresh = JSON.parse(m.data).filter((e) => e.seq > lastSeq);
    if (fresh.length) { lastSeq = fresh[fresh.length - 1].seq; onEvents(fresh, true); }
  });
  if (onFrame) source.addEventListener("frame", (m) => onFrame(JSON.parse(m.data).version));
  source.onopen = () => onStatus("live");
  source.onerror = () => onStatus("reconnecting…");
}
