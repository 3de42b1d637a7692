/**
 * The chat box's helpers: the context chips above it (from "Ask About Selection" and "Add File to
 * Chat", and images pasted into the chat box or chosen with the attach button; each removable), `@` completion of workspace files (mino/files, through the host), and the
 * "Open diff" buttons on tool cards. Kept apart from main.ts, which sends and mirrors the chat.
 */
import { IMAGE_TYPES, MAX_IMAGE_BYTES, imageSizeRefused, imageTypeRefused, type ChipView, type HostToWebview, type WebviewToHost } from '../core/messages';
import { applyMention, mentionAt, mentionable, removeMention, type Mention } from '../core/mention';
import { escapeHtml } from './render';

const SHOWN = 50;

export function initComposer(post: (m: WebviewToHost) => void, input: HTMLTextAreaElement): void {
  const chipsEl = document.createElement('div');
  chipsEl.id = 'chips';
  chipsEl.hidden = true;
  chipsEl.setAttribute('aria-label', 'Context sent with the next message');
  const listEl = document.createElement('div');
  listEl.id = 'complete';
  listEl.hidden = true;
  listEl.setAttribute('role', 'listbox');
  listEl.setAttribute('aria-label', 'Files');
  input.before(chipsEl, listEl);

  let requestId = 0;
  let timer = 0;
  let open: { mention: Mention; paths: string[]; active: number } | undefined;

  function renderChips(chips: ChipView[]): void {
    chipsEl.innerHTML = chips
      .map(
        (c) =>
          `<span class="chip${c.kind === 'image' ? ' chip-image' : ''}" title="${escapeHtml(c.title)}"><span class="chip-label">${escapeHtml(c.label)}</span>` +
          `<button type="button" class="chip-remove" data-action="remove-chip" data-id="${escapeHtml(c.id)}" ` +
          `title="Remove ${escapeHtml(c.label)}" aria-label="Remove ${escapeHtml(c.label)}">×</button></span>`,
      )
      .join('');
    chipsEl.hidden = chips.length === 0;
  }

  function close(): void {
    open = undefined;
    listEl.hidden = true;
    listEl.textContent = '';
    input.removeAttribute('aria-activedescendant');
  }

  function renderList(): void {
    if (!open || !open.paths.length) {
      close();
      return;
    }
    const o = open;
    listEl.innerHTML = o.paths
      .map((p, i) => {
        const slash = p.lastIndexOf('/');
        const name = p.slice(slash + 1);
        const dir = slash >= 0 ? p.slice(0, slash + 1) : '';
        return (
          `<div class="complete-row${i === o.active ? ' active' : ''}" role="option" id="complete-${i}" data-index="${i}"` +
          ` aria-selected="${i === o.active}" title="${escapeHtml(p)}"><span class="complete-name">${escapeHtml(name)}</span>` +
          (dir ? `<span class="complete-dir">${escapeHtml(dir)}</span>` : '') +
          `</div>`
        );
      })
      .join('');
    listEl.hidden = false;
    input.setAttribute('aria-activedescendant', `complete-${o.active}`);
    listEl.querySelector('.active')?.scrollIntoView({ block: 'nearest' });
  }

  /** The caret is in an `@word`: ask the host (debounced); otherwise close the list. */
  function update(): void {
    const m = input.selectionStart === input.selectionEnd ? mentionAt(input.value, input.selectionStart ?? 0) : undefined;
    window.clearTimeout(timer);
    if (!m) {
      close();
      return;
    }
    timer = window.setTimeout(() => {
      requestId += 1;
      post({ type: 'files', requestId, prefix: m.prefix });
    }, 60);
  }

  function choose(i: number): void {
    if (!open) return;
    const path = open.paths[i];
    const caret = input.selectionStart ?? input.value.length;
    const m = mentionAt(input.value, caret) ?? open.mention;
    close();
    if (path === undefined) return;
    let next: { text: string; caret: number };
    if (mentionable(path)) {
      next = applyMention(input.value, caret, m, path);
    } else {
      // `@` cannot spell a path with white space: the file goes with the message as a chip
      next = removeMention(input.value, caret, m);
      post({ type: 'attachFile', path });
    }
    input.value = next.text;
    input.setSelectionRange(next.caret, next.caret);
    input.dispatchEvent(new Event('input')); // main.ts: autosize, keep the draft
    input.focus();
  }

  // ---- images: pasted into the chat box, or chosen with the attach button ----
  const attachBtn = document.getElementById('attach') as HTMLButtonElement | null;
  const fileInput = document.getElementById('attach-file') as HTMLInputElement | null;
  const hint = document.getElementById('hint');

  /** Reads each image file and hands its bytes (base64) to the host, which makes the chip. */
  function attachImages(files: File[]): void {
    for (const [i, file] of files.entries()) {
      const name = file.name || `pasted image${files.length > 1 ? ` ${i + 1}` : ''}`;
      if (!(IMAGE_TYPES as readonly string[]).includes(file.type)) {
        if (hint) hint.textContent = imageTypeRefused(name);
        continue;
      }
      if (file.size > MAX_IMAGE_BYTES) {
        if (hint) hint.textContent = imageSizeRefused(name, file.size);
        continue;
      }
      const reader = new FileReader();
      reader.onload = () => {
        const url = typeof reader.result === 'string' ? reader.result : '';
        const data = url.slice(url.indexOf(',') + 1);
        if (data) post({ type: 'attachImage', name, mimeType: file.type, data });
      };
      reader.readAsDataURL(file);
    }
  }

  input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith('image/'));
    if (!files.length) return; // text pastes as text
    e.preventDefault();
    attachImages(files);
  });
  attachBtn?.addEventListener('click', () => fileInput?.click());
  fileInput?.addEventListener('change', () => {
    attachImages([...(fileInput.files ?? [])]);
    fileInput.value = ''; // the same file again is a new choice
  });

  input.addEventListener('input', update);
  input.addEventListener('click', update);
  input.addEventListener('blur', () => window.setTimeout(close, 150));

  // Capture on the document: runs before main.ts's Enter-sends handler on the text box.
  document.addEventListener(
    'keydown',
    (e) => {
      if (e.target !== input || !open || e.isComposing) return;
      const n = open.paths.length;
      let handled = true;
      if (e.key === 'ArrowDown') open.active = (open.active + 1) % n;
      else if (e.key === 'ArrowUp') open.active = (open.active - 1 + n) % n;
      else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') choose(open.active);
      else if (e.key === 'Escape') close();
      else handled = false;
      if (handled) {
        e.preventDefault();
        e.stopImmediatePropagation();
        if (open) renderList();
      }
    },
    true,
  );
  listEl.addEventListener('mousedown', (e) => {
    const row = (e.target as HTMLElement | null)?.closest<HTMLElement>('.complete-row');
    if (!row) return;
    e.preventDefault(); // keep the focus (and the caret) in the text box
    choose(Number(row.dataset.index));
  });

  document.addEventListener('click', (e) => {
    const b = (e.target as HTMLElement | null)?.closest('button');
    if (!b) return;
    if (b.dataset.action === 'remove-chip' && b.dataset.id) {
      post({ type: 'removeContext', id: b.dataset.id });
    } else if (b.dataset.action === 'open-diff' && b.dataset.call) {
      post({ type: 'openDiff', turnId: b.dataset.turn ?? '', callId: b.dataset.call });
    } else if (b.dataset.action === 'rewind' && b.dataset.turn) {
      post({ type: 'rewind', turnId: b.dataset.turn });
    }
  });

  window.addEventListener('message', (ev: MessageEvent<HostToWebview>) => {
    const m = ev.data;
    if (m.type === 'context') {
      renderChips(Array.isArray(m.chips) ? m.chips : []);
    } else if (m.type === 'focusInput') {
      input.focus();
    } else if (m.type === 'files' && m.requestId === requestId) {
      const caret = input.selectionStart ?? 0;
      const mention = input.selectionStart === input.selectionEnd ? mentionAt(input.value, caret) : undefined;
      if (!mention || document.activeElement !== input) {
        close();
        return;
      }
      open = { mention, paths: (Array.isArray(m.paths) ? m.paths : []).filter((p) => typeof p === 'string').slice(0, SHOWN), active: 0 };
      renderList();
    }
  });
}
