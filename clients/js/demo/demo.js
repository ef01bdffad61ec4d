// The web chat page on the StreamRelay JS kit. Configuration from the URL fragment:
//   #token=JWT&base=/a,/b   (base URLs default to the page's origin: "/api/..." via nginx)
import { RelayChatClient, AutoScroll, browserNetworkConditions, networkAdvice, budgetLimitedNote, MAX_ATTEMPTS } from '../src/index.js';
import { createMarkdownRenderer, plainTextHTML } from './markdownRenderer.js';
import { MarkdownView } from './markdownView.js';
import { completionStatus, connectionText } from './answerStatus.js';
import { periodPhrase } from '../src/uiState.js';

const params = new URLSearchParams(location.hash.slice(1));
const token = params.get('token') ?? localStorage.getItem('relayToken') ?? '';
const baseURLs = (params.get('base') ?? '').split(',').map((s) => s.trim()).filter((s, i, a) => s !== '' || a.length === 1);
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

// markdown-it comes from Debian's libjs-markdown-it (a classic script before this module); without
// it the page shows escaped plain text and says so in the console.
const markdownit = /** @type {any} */ (globalThis).markdownit;
if (!markdownit) console.error('markdown-it not loaded (/vendor/markdown-it.js): answers are shown as plain text');
const renderMarkdown = markdownit ? createMarkdownRenderer(markdownit) : plainTextHTML;

/** State the end-to-end test reads (no content is sent anywhere). */
const demo = { answers: [], telemetry: [], mutations: [], renderMarkdown };
window.relayDemo = demo;

const client = new RelayChatClient({
  baseURLs: baseURLs.length ? baseURLs : [''],
  token: () => token,
  telemetry: (r) => { demo.telemetry.push(r); console.info('telemetry', JSON.stringify(r)); },
});
const scroll = new AutoScroll();
const transcript = $('transcript');
const prompt = /** @type {HTMLTextAreaElement} */ ($('prompt'));
const modelSelect = /** @type {HTMLSelectElement} */ ($('model'));
/** @type {import('../src/relayStream.js').RelayStream | null} */
let current = null;

// A Markdown marker left as text: `**`, `##`, `---`, a code fence, or a line of markers only.
const MARKER_TEXT = /\*\*|##|---|``|(^|\n)[ \t]*([-*+#>]|\d+[.)])[ \t]*(\n|$)/;

// Records, in order, every change of an answer container: `dir` set (attributes, with the
// value before and after) and content inserted (childList / characterData, with the number of
// characters that change added, and `marker`: the first Markdown marker in the inserted text, if
// any). Records are in mutation order, so "dir before the first glyph" means: the container's
// first record is the attribute change, before any text record.
new MutationObserver((records) => {
  for (const m of records) {
    const el = m.type === 'characterData' ? m.target.parentElement : m.target;
    const box = el && el.closest ? el.closest('.answer-text') : null;
    if (!box) continue;
    const entry = { answer: Number(box.dataset.index), type: m.type };
    if (m.type === 'attributes') { entry.oldDir = m.oldValue; entry.dir = box.getAttribute('dir'); }
    else {
      const text = m.type === 'childList' ? Array.from(m.addedNodes, (n) => (n.nodeName === 'PRE' ? '' : n.textContent)).join('\n') : m.target.textContent;
      entry.added = text.length;
      const marker = MARKER_TEXT.exec(text);
      if (marker) entry.marker = text.slice(Math.max(0, marker.index - 40), marker.index + marker[0].length + 10);
    }
    demo.mutations.push(entry);
  }
}).observe(transcript, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['dir'], attributeOldValue: true });

// ---- composer and budget ----------------------------------------------------------------

/** Send while idle, Stop while an answer is written (the same place, inside the viewport). */
function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  /** @type {HTMLButtonElement} */ ($('stop')).disabled = !busy;
  updateSend();
}

function updateSend() {
  const canSend = client.budget ? client.budget.canSend : true;
  /** @type {HTMLButtonElement} */ ($('send')).disabled = current !== null || !canSend;
  const note = $('composer-note');
  note.textContent = canSend ? '' : `Your token budget is used up — sending is off until it renews ${periodEnd()}.`;
  note.dataset.tone = canSend ? '' : 'warning';
}

/** When the budget renews, from its period ("today" → "tomorrow"). */
function periodEnd() {
  const p = periodPhrase(client.budget ? client.budget.period : 'month');
  return p === 'today' ? 'tomorrow' : p === 'this week' ? 'next week' : p === 'this month' ? 'next month' : 'at the next period';
}

function showBudget(b) {
  const pill = $('budget');
  pill.textContent = b.pillText;
  pill.title = b.pillText;
  pill.dataset.state = !b.canSend ? 'empty' : b.isWarning ? 'warning' : 'ok';
  updateSend();
}

async function loadBudget() {
  try { showBudget(await client.fetchBudget()); } catch (e) {
    const pill = $('budget');
    pill.textContent = 'Budget unavailable';
    pill.title = `GET /api/budget failed: ${e.code ?? e.message}`;
    pill.dataset.state = 'error';
  }
}

function autosize() {
  prompt.style.height = 'auto';
  prompt.style.height = `${Math.min(prompt.scrollHeight, 132)}px`;
}
prompt.addEventListener('input', autosize);
prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); $('composer').requestSubmit(); }
});

// ---- transcript -------------------------------------------------------------------------

function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text) e.textContent = text; return e; }

function follow() { if (scroll.shouldScrollOnUpdate) transcript.scrollTop = transcript.scrollHeight; }
// Only the reader moves the transcript up: a scroll event that did not move it up (text growing,
// the page following, the browser clamping after a block was replaced) never stops following;
// reaching the end again resumes it.
let lastScrollTop = 0;
transcript.addEventListener('scroll', () => {
  const distance = transcript.scrollHeight - transcript.clientHeight - transcript.scrollTop;
  const movedUp = transcript.scrollTop < lastScrollTop - 1;
  lastScrollTop = transcript.scrollTop;
  if (movedUp || distance <= scroll.bottomTolerance) scroll.userScrolled(distance);
  $('jump').hidden = !scroll.showsJumpToLatest;
});
$('jump').addEventListener('click', () => { scroll.jumpToLatest(); $('jump').hidden = true; follow(); });
// A rotation, a resized window or the on-screen keyboard keeps a following transcript at its end.
window.addEventListener('resize', follow);

/** Shows `status` (answerStatus.js) under the answer, with its button when it has one. */
function showStatus(view, status, onAction) {
  view.status.replaceChildren();
  view.status.dataset.tone = status ? status.tone : '';
  if (!status) return;
  view.status.append(el('span', 'status-text', status.text));
  if (status.label && onAction) {
    const b = el('button', 'action', status.label);
    b.type = 'button';
    b.id = `resume-${view.index}`;
    b.addEventListener('click', () => { b.disabled = true; onAction(); });
    view.status.append(b);
  }
}

/** Short JSON for a step's line (an argument object, a tool's output). */
function brief(value) {
  const s = JSON.stringify(value) ?? '';
  return s.length > 120 ? `${s.slice(0, 119)}…` : s;
}

/**
 * The answer's typed parts as steps above its text, rebuilt from the kit's assembled state on
 * each part: the reasoning (collapsed), each tool call (arguments as they stream, the input when
 * it ends, the output when the backend ran it), each source. The text itself stays the text.
 */
function showSteps(box, update) {
  box.hidden = false;
  box.replaceChildren();
  if (update.reasoning) {
    const d = el('details', 'step reasoning');
    d.append(el('summary', '', 'Thinking'), el('p', '', update.reasoning));
    box.append(d);
  }
  for (const call of update.toolCalls) {
    const d = el('details', 'step tool');
    d.dataset.callId = call.id;
    d.dataset.state = call.output !== undefined && call.output !== null ? 'result' : call.input !== undefined && call.input !== null ? 'called' : 'streaming';
    d.append(el('summary', '', `${d.dataset.state === 'streaming' ? '⚙ calling' : '⚙'} ${call.name}`));
    d.append(el('code', 'step-input', call.input !== undefined && call.input !== null ? brief(call.input) : call.arguments));
    if (d.dataset.state === 'result') d.append(el('code', 'step-output', `→ ${brief(call.output)}`));
    box.append(d);
  }
  for (const p of update.parts) {
    if (p.type !== 'source') continue;
    const a = el('a', 'step source', p.title ?? p.url);
    a.href = p.url; a.target = '_blank'; a.rel = 'noopener noreferrer';
    box.append(a);
  }
}

/** Runs one answer in `view` (a fresh view for a Resume or a re-send). */
function run(stream, view) {
  const index = demo.answers.length;
  const record = { index, requestId: stream.requestId, model: stream.request.model, text: '', shown: '', layout: null, completion: null,
    budgetLimited: false, cancelStatus: null, statuses: [], urls: [], progressTexts: [], statusText: '' };
  demo.answers.push(record);
  view.index = index;
  view.text.dataset.index = String(index);
  const markdown = new MarkdownView(view.text, renderMarkdown);
  current = stream;
  setBusy(true);
  view.answer.classList.add('streaming');
  const end = () => {
    view.answer.classList.remove('streaming');
    view.typing.hidden = true;     // every ending: done, error, stop, lost connection, timeout
    view.progress.hidden = true;   // progress is for drafting; the answer is over
  };
  stream.subscribe((u) => {
    switch (u.kind) {
      case 'advice':
        $('advice').hidden = false;
        $('advice').textContent = [u.advice.warning, u.advice.suggestsSummaryMode ? 'Low bandwidth: answers come as summaries.' : null].filter(Boolean).join(' ');
        break;
      case 'layout':
        // Direction and line height are set before the first glyph is inserted.
        record.layout = u.layout;
        view.text.setAttribute('dir', u.layout.direction);
        view.text.style.lineHeight = String(u.layout.lineHeight);
        break;
      case 'render': {
        const r = u.update;
        if (r.appended) record.text += r.appended;
        const finished = r.completion !== null;
        if (markdown.update(record.text, finished && r.completion.kind === 'finished')) record.shown = markdown.shown;
        view.typing.hidden = !r.showsTypingIndicator || finished;
        view.progress.hidden = !r.progress || finished;
        if (r.progress) {
          view.progressText.textContent = r.progress.text;
          view.progressBar.style.width = r.progress.total ? `${Math.min(100, (100 * r.progress.index) / r.progress.total)}%` : '0';
          if (record.progressTexts.at(-1) !== r.progress.text) record.progressTexts.push(r.progress.text);
        }
        if (finished) end();
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
      case 'connection': {
        record.statuses.push(u.status);
        if (u.url !== undefined) record.urls.push(u.url);
        const text = connectionText(u, MAX_ATTEMPTS);
        record.statusText = text;
        showStatus(view, text ? { text, tone: 'info', action: 'none' } : null, null);
        follow();   // the line may wrap to a second line: keep it above the composer
        break;
      }
      case 'parts':
        record.parts = u.update.parts.length;
        showSteps(view.steps, u.update);
        follow();
        break;
      case 'budget': showBudget(u.budget); break;
      case 'cancelled': record.cancelStatus = u.status; break;
      case 'telemetry': {
        const c = stream.completion;
        record.completion = c;
        record.telemetry = u.record;
        end();
        if (c.kind !== 'finished') view.answer.classList.add('interrupted');
        current = null;
        setBusy(false);
        const status = completionStatus(c, { budgetLimited: record.budgetLimited, resent: view.turn.dataset.resent === '1' });
        record.statusText = status ? status.text : '';
        view.status.dataset.completion = c.kind;
        if (status && status.action === 'resend') {
          // docs/PROTOCOL.md §8.3: the generating instance stopped (or the stream is gone): re-send once.
          view.turn.dataset.resent = '1';
          showStatus(view, status, null);
          view.answer.classList.add('superseded');
          run(stream.resume(), newView(view.turn));
        } else {
          showStatus(view, status, status && status.label ? () => {
            view.answer.classList.add('superseded');
            run(stream.resume(), newView(view.turn));
          } : null);
        }
        if (c.kind === 'failed' && c.code === 'token_budget_exhausted') loadBudget();
        follow();
        break;
      }
      default: break;
    }
  });
}

function newView(turn) {
  const answer = el('article', 'answer');
  const meta = el('div', 'answer-meta'); meta.append(el('span', 'dot'), el('span', '', 'Assistant'));
  const progress = el('div', 'progress'); progress.hidden = true;
  const progressText = el('span', 'progress-text');
  const progressBar = el('i');
  const bar = el('span', 'progress-bar'); bar.append(progressBar);
  progress.append(progressText, bar);
  const typing = el('div', 'typing'); typing.append(el('span'), el('span'), el('span'));
  typing.setAttribute('aria-label', 'Writing…');
  const text = el('div', 'answer-text');
  const steps = el('div', 'steps'); steps.hidden = true;   // typed parts (docs/PROTOCOL.md §5.5): reasoning, tool calls, sources
  const note = el('div', 'budget-note'); note.hidden = true; note.setAttribute('role', 'status');
  const status = el('div', 'status'); status.setAttribute('role', 'status');
  answer.append(meta, progress, typing, steps, text, note, status);
  turn.append(answer);
  return { turn, answer, progress, progressText, progressBar, typing, steps, text, note, status, index: -1 };
}

function send(text, model) {
  if (current || !text) return;
  $('empty').hidden = true;
  const turn = el('section', 'turn');
  const q = el('div', 'question', text);
  q.dir = 'auto';
  turn.append(q);
  transcript.append(turn);
  prompt.value = '';
  autosize();
  const network = browserNetworkConditions();
  const request = { messages: [{ role: 'user', content: text }], model };
  if (networkAdvice(network).suggestsSummaryMode) request.mode = 'summary';
  scroll.jumpToLatest();
  run(client.startChat(request, { network }), newView(turn));
  follow();
}

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  send(prompt.value.trim(), modelSelect.value);
});
for (const b of document.querySelectorAll('.suggestion')) {
  b.addEventListener('click', () => {
    const s = /** @type {HTMLElement} */ (b);
    modelSelect.value = s.dataset.model ?? 'simulated';
    send(s.dataset.prompt ?? '', modelSelect.value);
  });
}
$('stop').addEventListener('click', () => { if (current) current.stop(); });
document.addEventListener('visibilitychange', () => {
  if (!current) return;
  if (document.hidden) current.enterBackground(); else current.enterForeground();
});

setBusy(false);
loadBudget();
