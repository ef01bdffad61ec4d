// The web chat page on the StreamRelay JS kit. Configuration from the URL fragment:
//   #token=JWT&base=/a,/b   (base URLs default to the page's origin: "/api/..." via nginx)
import { RelayChatClient, AutoScroll, browserNetworkConditions, networkAdvice, budgetLimitedNote } from '../src/index.js';

const params = new URLSearchParams(location.hash.slice(1));
const token = params.get('token') ?? localStorage.getItem('relayToken') ?? '';
const baseURLs = (params.get('base') ?? '').split(',').map((s) => s.trim()).filter((s, i, a) => s !== '' || a.length === 1);
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** State the end-to-end test reads (no content is sent anywhere). */
const demo = { answers: [], telemetry: [], mutations: [] };
window.relayDemo = demo;

const client = new RelayChatClient({
  baseURLs: baseURLs.length ? baseURLs : [''],
  token: () => token,
  telemetry: (r) => { demo.telemetry.push(r); console.info('telemetry', JSON.stringify(r)); },
});
const scroll = new AutoScroll();
const transcript = $('transcript');
let current = null;

// Records, in order, every change of an answer container: `dir` set (attributes, with the
// value before and after) and text inserted (childList / characterData, with the number of
// characters that change added). Records are in mutation order, so "dir before the first glyph"
// means: the container's first record is the attribute change, before any text record.
new MutationObserver((records) => {
  for (const m of records) {
    const el = m.type === 'characterData' ? m.target.parentElement : m.target;
    const box = el && el.closest ? el.closest('.answer-text') : null;
    if (!box) continue;
    const entry = { answer: Number(box.dataset.index), type: m.type };
    if (m.type === 'attributes') { entry.oldDir = m.oldValue; entry.dir = box.getAttribute('dir'); }
    else entry.added = m.type === 'childList' ? Array.from(m.addedNodes, (n) => n.textContent.length).reduce((a, b) => a + b, 0) : m.target.textContent.length;
    demo.mutations.push(entry);
  }
}).observe(transcript, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['dir'], attributeOldValue: true });

function showBudget(b) {
  const pill = $('budget');
  pill.textContent = b.pillText;
  pill.dataset.state = !b.canSend ? 'empty' : b.isWarning ? 'warning' : 'ok';
  $('send').disabled = !b.canSend || current !== null;
}

async function loadBudget() {
  try { showBudget(await client.fetchBudget()); } catch (e) { $('budget').textContent = `budget unavailable (${e.code ?? e.message})`; }
}

function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text) e.textContent = text; return e; }

function follow() { if (scroll.shouldScrollOnUpdate) transcript.scrollTop = transcript.scrollHeight; }
transcript.addEventListener('scroll', () => {
  scroll.userScrolled(transcript.scrollHeight - transcript.clientHeight - transcript.scrollTop);
  $('jump').hidden = !scroll.showsJumpToLatest;
});
$('jump').addEventListener('click', () => { scroll.jumpToLatest(); $('jump').hidden = true; follow(); });

/** Runs one answer in `view` (a fresh view for a Resume). */
function run(stream, view) {
  const index = demo.answers.length;
  const record = { index, requestId: stream.requestId, model: stream.request.model, text: '', layout: null, completion: null, budgetLimited: false, cancelStatus: null, statuses: [], urls: [], progressTexts: [] };
  demo.answers.push(record);
  view.text.dataset.index = String(index);
  current = stream;
  $('stop').disabled = false;
  $('send').disabled = true;
  stream.subscribe((u) => {
    switch (u.kind) {
      case 'advice':
        $('advice').hidden = false;
        $('advice').textContent = [u.advice.warning, u.advice.suggestsSummaryMode ? 'Low bandwidth: summary mode suggested.' : null].filter(Boolean).join(' ');
        break;
      case 'layout':
        // Direction and line height are set before the first glyph is inserted.
        record.layout = u.layout;
        view.text.setAttribute('dir', u.layout.direction);
        view.text.style.lineHeight = String(u.layout.lineHeight);
        break;
      case 'render': {
        const r = u.update;
        if (r.appended) { view.text.append(document.createTextNode(r.appended)); record.text += r.appended; }
        view.typing.hidden = !r.showsTypingIndicator;
        view.progress.hidden = !r.progress;
        if (r.progress) {
          view.progress.textContent = r.progress.text;
          if (record.progressTexts.at(-1) !== r.progress.text) record.progressTexts.push(r.progress.text);
        }
        if (r.budgetLimited) {
          // The relay cut this answer at the caller's token budget (`done` … `budget_limited`).
          record.budgetLimited = true;
          view.note.textContent = client.budget ? client.budget.budgetLimitedNote : budgetLimitedNote();
          view.note.hidden = false;
          if (!client.budget) loadBudget();   // no pill yet: ask the relay (the `budget` update needs one)
        }
        follow();
        break;
      }
      case 'connection':
        record.statuses.push(u.status);
        if (u.url !== undefined) record.urls.push(u.url);
        view.status.textContent = u.status === 'waitingToReconnect' ? `connection lost — reconnecting (attempt ${u.attempt}) in ${(u.delayMs / 1000).toFixed(1)} s`
          : u.status === 'reconnecting' ? `resuming after event ${u.lastEventId}…` : u.status === 'connecting' ? 'connecting…' : '';
        break;
      case 'budget': showBudget(u.budget); break;
      case 'cancelled': record.cancelStatus = u.status; break;
      case 'telemetry': {
        const c = stream.completion;
        record.completion = c;
        record.telemetry = u.record;
        view.typing.hidden = true;
        view.progress.hidden = true;   // progress is for drafting; the answer is over
        current = null;
        $('stop').disabled = true;
        $('send').disabled = client.budget ? !client.budget.canSend : false;
        view.status.textContent = c.kind === 'finished' ? '' : c.kind === 'stopped' ? 'stopped'
          : c.kind === 'timedOut' ? 'no response for 60 s — the answer may be incomplete'
          : c.kind === 'needsResume' ? 'connection lost' : `failed: ${c.code} (${c.status})`;
        view.status.dataset.completion = c.kind;
        if (c.kind === 'needsResume' || c.kind === 'timedOut' || (c.kind === 'failed' && c.status >= 500)) {
          const b = el('button', 'resume', c.kind === 'needsResume' ? 'Resume' : 'Retry');
          b.id = `resume-${index}`;
          b.addEventListener('click', () => { b.remove(); run(stream.resume(), newView(view.turn)); });
          view.actions.append(b);
        }
        follow();
        break;
      }
      default: break;
    }
  });
}

function newView(turn) {
  const answer = el('div', 'answer');
  const progress = el('div', 'progress'); progress.hidden = true;
  const typing = el('div', 'typing'); typing.append(el('span'), el('span'), el('span'));
  const text = el('div', 'answer-text');
  const note = el('div', 'budget-note'); note.hidden = true; note.setAttribute('role', 'status');
  const status = el('div', 'status');
  const actions = el('div', 'actions');
  answer.append(progress, typing, text, note, status, actions);
  turn.append(answer);
  return { turn, answer, progress, typing, text, note, status, actions };
}

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  if (current) return;
  const prompt = /** @type {HTMLInputElement} */ ($('prompt')).value.trim();
  if (!prompt) return;
  const model = /** @type {HTMLSelectElement} */ ($('model')).value;
  const turn = el('section', 'turn');
  turn.append(el('div', 'question', prompt));
  transcript.append(turn);
  const network = browserNetworkConditions();
  const request = { messages: [{ role: 'user', content: prompt }], model };
  if (networkAdvice(network).suggestsSummaryMode) request.mode = 'summary';
  run(client.startChat(request, { network }), newView(turn));
  follow();
});
$('stop').addEventListener('click', () => { if (current) current.stop(); });
document.addEventListener('visibilitychange', () => {
  if (!current) return;
  if (document.hidden) current.enterBackground(); else current.enterForeground();
});

loadBudget();
