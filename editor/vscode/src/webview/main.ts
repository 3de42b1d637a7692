/**
 * The chat webview: mirrors the host's transcript, sends what the person types, and answers
 * approvals only on an explicit click of Approve or Deny on a card.
 */
import type { ChatItem, ConnectionView, EarlierView, HostToWebview, WebviewToHost } from '../core/messages';
import {
  instructionsText,
  instructionsTooltip,
  mcpText,
  mcpTooltip,
  modeAndSession,
  usagePercent,
  usageText,
  usageTooltip,
} from '../core/format';
import { Mirror } from '../core/mirror';
import { keptScrollTop, shouldLoadEarlier } from '../core/paging';
import type { State } from '../protocol';
import { escapeHtml, renderItem } from './render';
import { initComposer } from './composer';

interface VsCodeApi {
  postMessage(msg: WebviewToHost): void;
  getState(): { draft?: string } | undefined;
  setState(s: { draft?: string }): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

const transcriptEl = $<HTMLDivElement>('transcript');
const bannerEl = $<HTMLDivElement>('banner');
const emptyEl = $<HTMLDivElement>('empty');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const stopBtn = $<HTMLButtonElement>('stop');
const progressEl = $<HTMLDivElement>('progress');
const hintEl = $<HTMLSpanElement>('hint');
const statusEl = $<HTMLSpanElement>('statusline');
const usageEl = $<HTMLSpanElement>('usage');
const instructionsEl = $<HTMLSpanElement>('instructions');
const mcpEl = $<HTMLSpanElement>('mcp');

const mirror = new Mirror();
/** Above the first item while earlier history exists: a button, or "Loading…" while a page comes. */
const earlierEl = document.createElement('div');
earlierEl.id = 'earlier';
let earlier: EarlierView = { more: false, loading: false };
let earlierAsked = false;
let state: State | null = null;
let connection: ConnectionView = { status: 'starting' };
let turnRunning = false;
const dirty = new Set<string>();
let frame = 0;

function post(m: WebviewToHost): void {
  vscode.postMessage(m);
}

function nearBottom(): boolean {
  return transcriptEl.scrollHeight - transcriptEl.scrollTop - transcriptEl.clientHeight < 80;
}

function elementFor(id: string): HTMLElement | null {
  return transcriptEl.querySelector(`[data-id="${CSS.escape(id)}"]`);
}

function build(item: ChatItem): HTMLElement | null {
  const tpl = document.createElement('template');
  tpl.innerHTML = renderItem(item);
  return tpl.content.firstElementChild as HTMLElement | null;
}

function renderOne(id: string): void {
  const item = mirror.get(id);
  const old = elementFor(id);
  if (!item) {
    old?.remove();
    return;
  }
  const el = build(item);
  if (!el) return;
  // keep <details> open/closed as the person left them
  if (old) {
    const wasOpen = [...old.querySelectorAll('details')].map((d) => d.open);
    el.querySelectorAll('details').forEach((d, i) => {
      if (i < wasOpen.length) d.open = wasOpen[i];
    });
    old.replaceWith(el);
  } else {
    transcriptEl.appendChild(el);
  }
}

function flush(): void {
  frame = 0;
  const stick = nearBottom();
  for (const id of dirty) renderOne(id);
  dirty.clear();
  emptyEl.hidden = mirror.size > 0;
  if (stick) transcriptEl.scrollTop = transcriptEl.scrollHeight;
}

function schedule(id: string): void {
  dirty.add(id);
  if (!frame) frame = requestAnimationFrame(flush);
}

function snapshot(list: ChatItem[]): void {
  transcriptEl.textContent = '';
  earlierAsked = false;
  renderEarlier();
  for (const id of mirror.reset(list)) dirty.add(id);
  flush();
  transcriptEl.scrollTop = transcriptEl.scrollHeight;
}

/** An earlier page arrived: its items go above the first one, and what the person was reading
 *  stays where it was on the screen. */
function insertEarlier(ids: string[]): void {
  const before = { scrollTop: transcriptEl.scrollTop, scrollHeight: transcriptEl.scrollHeight, clientHeight: 0 };
  const fragment = document.createDocumentFragment();
  for (const id of ids) {
    const item = mirror.get(id);
    const el = item && !elementFor(id) ? build(item) : null;
    if (el) fragment.appendChild(el);
  }
  transcriptEl.insertBefore(fragment, earlierEl.parentNode === transcriptEl ? earlierEl.nextSibling : transcriptEl.firstChild);
  emptyEl.hidden = mirror.size > 0;
  transcriptEl.scrollTop = keptScrollTop(before, transcriptEl.scrollHeight);
}

function renderEarlier(): void {
  if (!earlier.more) {
    earlierEl.remove();
    return;
  }
  earlierEl.innerHTML = earlier.loading
    ? '<span class="earlier-text">Loading earlier messages…</span>'
    : '<button type="button" class="btn secondary" data-action="earlier">Load earlier messages</button>';
  if (transcriptEl.firstChild !== earlierEl) transcriptEl.insertBefore(earlierEl, transcriptEl.firstChild);
}

function maybeLoadEarlier(): void {
  if (shouldLoadEarlier(transcriptEl, earlier, earlierAsked)) {
    earlierAsked = true;
    post({ type: 'loadEarlier' });
  }
}

function renderBanner(): void {
  const parts: string[] = [];
  if (connection.status === 'failed' || connection.status === 'stopped') {
    parts.push(
      `<div class="banner error"><div class="banner-text">${escapeHtml(connection.message ?? 'Mino is not running.')}</div>` +
        `<div class="actions"><button type="button" class="btn" data-command="mino.restartServer">Restart Mino</button>` +
        `<button type="button" class="btn secondary" data-command="mino.showLog">Show log</button></div></div>`,
    );
  } else if (connection.status === 'starting') {
    parts.push(`<div class="banner info"><div class="banner-text">Starting Mino…</div></div>`);
  }
  if (state?.restoreProblem) {
    parts.push(
      `<div class="banner warning"><div class="banner-text">${escapeHtml(state.restoreProblem)}</div>` +
        `<div class="banner-hint">Chat is paused until you pick a session.</div>` +
        `<div class="actions"><button type="button" class="btn" data-command="mino.resumeSession">Resume…</button>` +
        `<button type="button" class="btn secondary" data-command="mino.newSession">New session</button></div></div>`,
    );
  }
  if (state?.setup) {
    // Every turn fails before a request until this is fixed (e.g. no API key for OpenAI's endpoint).
    parts.push(
      `<div class="banner warning setup"><div class="banner-text">${escapeHtml(state.setup.message)}</div>` +
        `<div class="banner-hint">Set ${escapeHtml(state.setup.variable)} in the environment VS Code starts from, or MINO_BASE_URL for a local server (e.g. in the Mino: Env setting); then restart Mino.</div>` +
        `<div class="actions"><button type="button" class="btn" data-command="mino.openSettings">Open settings</button>` +
        `<button type="button" class="btn secondary" data-command="mino.openFirstRun">Open README</button></div></div>`,
    );
  }
  bannerEl.innerHTML = parts.join('');
  bannerEl.hidden = parts.length === 0;
}

function renderStatus(): void {
  const running = connection.status === 'running';
  progressEl.hidden = !turnRunning;
  stopBtn.hidden = !turnRunning;
  sendBtn.hidden = turnRunning;
  sendBtn.disabled = !running;
  if (state && running) {
    statusEl.textContent = modeAndSession(state);
    statusEl.title = `Session ${state.sessionId ?? '(none)'} · permission mode ${state.mode} · ${state.model}`;
  } else {
    statusEl.textContent = '';
  }
  renderUsage(running ? state : null);
  renderInstructions(running ? state : null);
  renderMcp(running ? state : null);
}

/** The MCP servers and their state (State.mcp); each with its tools or its error in the tooltip. */
function renderMcp(s: State | null): void {
  const text = mcpText(s?.mcp);
  mcpEl.hidden = !text;
  mcpEl.textContent = text;
  mcpEl.title = mcpTooltip(s?.mcp);
  mcpEl.classList.toggle('off', !!s?.mcp?.some((m) => m.state === 'failed'));
}

/** Which AGENTS.md files are in use (State.instructions); the paths in its tooltip. */
function renderInstructions(s: State | null): void {
  const text = instructionsText(s?.instructions);
  instructionsEl.hidden = !text;
  instructionsEl.textContent = text;
  instructionsEl.title = instructionsTooltip(s?.instructions);
  instructionsEl.classList.toggle('off', !!s?.instructions?.some((f) => !f.accepted));
}

/** How full the context is: a small meter and "41%", the numbers in its tooltip. */
function renderUsage(s: State | null): void {
  const text = usageText(s?.usage);
  usageEl.hidden = !text;
  if (!text) return;
  const pct = usagePercent(s?.usage) ?? 0;
  (usageEl.querySelector('.usage-text') as HTMLElement).textContent = text;
  // CSSOM, not a style attribute: the CSP allows no inline styles
  (usageEl.querySelector('.fill') as HTMLElement).style.width = `${Math.min(100, pct)}%`;
  usageEl.classList.toggle('high', pct >= 80);
  usageEl.title = usageTooltip(s?.usage);
  usageEl.setAttribute('aria-label', `Context ${text} full`);
}

function setHint(text: string): void {
  hintEl.textContent = text;
}

function send(): void {
  const text = input.value;
  if (text.trim() === '') return;
  if (connection.status !== 'running') {
    setHint('Mino is not running.');
    return;
  }
  if (turnRunning && !text.trimStart().startsWith('/')) {
    setHint('Mino is still answering. Press Stop to interrupt it.');
    return;
  }
  post({ type: 'submit', text });
  // what was sent, and the answer, show at the bottom even when the person had scrolled up
  transcriptEl.scrollTop = transcriptEl.scrollHeight;
  input.value = '';
  vscode.setState({ draft: '' });
  autosize();
  setHint('');
}

function autosize(): void {
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

input.addEventListener('keydown', (e) => {
  // Enter sends (never answers an approval); Shift+Enter is a new line; IME composition is left alone.
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    send();
  }
});
input.addEventListener('input', () => {
  autosize();
  vscode.setState({ draft: input.value });
});
sendBtn.addEventListener('click', send);
stopBtn.addEventListener('click', () => post({ type: 'stop' }));
initComposer(post, input); // context chips, `@` completion, "Open diff"

document.addEventListener('click', (e) => {
  const target = (e.target as HTMLElement | null)?.closest('button');
  if (!target) return;
  const action = target.dataset.action;
  const key = target.dataset.key;
  if ((action === 'approve' || action === 'deny' || action === 'always') && key) {
    // Only a person's click or key press on the button itself answers (never a scripted event).
    if (!e.isTrusted) return;
    post({ type: 'approval', key, approved: action !== 'deny', ...(action === 'always' ? { always: true } : {}) });
    target.closest('.actions')?.querySelectorAll('button').forEach((b) => ((b).disabled = true));
    return;
  }
  if (action === 'earlier') {
    earlierAsked = true;
    post({ type: 'loadEarlier' });
    return;
  }
  const command = target.dataset.command;
  if (command) post({ type: 'command', command: command as never });
});
transcriptEl.addEventListener('scroll', maybeLoadEarlier, { passive: true });

window.addEventListener('message', (ev: MessageEvent<HostToWebview>) => {
  const m = ev.data;
  switch (m.type) {
    case 'snapshot':
      state = m.state;
      connection = m.connection;
      turnRunning = m.turnRunning;
      earlier = m.earlier ?? { more: false, loading: false };
      snapshot(m.items);
      renderBanner();
      renderStatus();
      requestAnimationFrame(maybeLoadEarlier); // a first page that does not fill the panel
      break;
    case 'patch': {
      const above = m.patches.flatMap((p) => (p.op === 'prepend' ? p.items.map((i) => i.id) : []));
      const changed = mirror.apply(m.patches);
      if (above.length) insertEarlier(above);
      for (const id of changed) if (!above.includes(id)) schedule(id);
      break;
    }
    case 'earlier':
      earlier = m.earlier;
      if (!earlier.loading) earlierAsked = false;
      renderEarlier();
      requestAnimationFrame(maybeLoadEarlier); // still at the top: the next page
      break;
    case 'state':
      state = m.state;
      renderBanner();
      renderStatus();
      break;
    case 'connection':
      connection = m.connection;
      renderBanner();
      renderStatus();
      break;
    case 'turn':
      turnRunning = m.running;
      if (!turnRunning) setHint('');
      renderStatus();
      break;
    case 'focusApproval': {
      flush();
      const card = transcriptEl.querySelector<HTMLElement>(`.approval[data-key="${CSS.escape(m.key)}"]`);
      if (card) {
        card.scrollIntoView({ block: 'center' });
        card.classList.remove('flash');
        void card.offsetWidth;
        card.classList.add('flash');
      }
      break;
    }
  }
});

const saved = vscode.getState();
if (saved?.draft) {
  input.value = saved.draft;
  autosize();
}
renderBanner();
renderStatus();
post({ type: 'ready' });
