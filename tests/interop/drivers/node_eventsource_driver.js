// node-eventsource (Debian package node-eventsource, module `eventsource` under
// /usr/share/nodejs): reads one answer with `new EventSource(url, {headers})` as its README
// shows ("Setting HTTP request headers"), the bearer token in `Authorization`. The library
// reconnects by itself with `Last-Event-ID`; on `done` the driver calls `es.close()`
// (docs/PROTOCOL.md §4.2). The driver never calls process.exit on success: node exits when
// the EventSource holds no socket and no reconnect timer, which is the check that it stopped.
//
//   INTEROP_TOKEN=… NODE_PATH=/usr/share/nodejs node node_eventsource_driver.js URL [LAST_EVENT_ID]
'use strict';
const EventSource = require('eventsource');

const url = process.argv[2];
const headers = { Authorization: `Bearer ${process.env.INTEROP_TOKEN}` };
if (process.argv[3]) headers['Last-Event-ID'] = process.argv[3];
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const state = { text: '', done: null, error: null, last_id: null, client_error: null, errors: [] };
let progress = false;
let reported = false;
const report = () => {
  if (reported) return;
  reported = true;
  const { text, done, error, last_id, client_error, errors } = state;
  out({ result: { text, done, error, last_id, client_error, error_events: errors } });
};

// Ready once the module is loaded; the runner sends one line on stdin when the answer exists.
out({ ready: true });
let es = null;
process.stdin.once('data', () => {
  process.stdin.pause();
  process.stdin.destroy();
  es = new EventSource(url, { headers });
  es.onmessage = onmessage;
  es.onerror = onerror;
});

const onmessage = (m) => {
  if (m.lastEventId) state.last_id = m.lastEventId;
  let event;
  try {
    event = JSON.parse(m.data);
  } catch (e) {
    state.error = `message (id ${m.lastEventId}) is not an event: data=${JSON.stringify(m.data)}`;
    es.close();
    return;
  }
  if (event.type === 'delta') {
    state.text += event.content;
    if (!progress) { progress = true; out({ progress: state.last_id }); }
  } else if (event.type === 'done') {
    state.done = event;
    es.close();
  } else {
    state.error = `${event.type} event: ${m.data}`;
    es.close();
  }
};
const onerror = (err) => {
  const what = `error event: status=${err && err.status} message=${err && err.message} readyState=${es.readyState}`;
  state.errors.push(what);
  process.stderr.write(what + '\n');
  // A 204 is the relay's "the stream has ended" (docs/PROTOCOL.md §4.2): the library closes,
  // which is the expected stop; any other close before `done` is a failure.
  if (es.readyState === EventSource.CLOSED && !state.done && !(err && err.status === 204)) {
    state.client_error = `closed by the library: ${what}`;
  }
};
// Runs when the event loop is empty, i.e. once the EventSource has stopped for good.
process.on('beforeExit', report);
