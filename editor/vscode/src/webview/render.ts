/**
 * HTML for the chat webview, as strings. Pure (no DOM), so the unit tests check exactly what the
 * webview inserts.
 *
 * Safety rules:
 * - Model text is Markdown rendered by markdown-it with `html: false` (raw HTML is escaped, never
 *   passed through), links limited to http(s) and mailto, and images never loaded (shown as text).
 * - Everything else (approval fields, tool results, command output, notices) is plain text:
 *   escaped with `escapeHtml` and shown verbatim, never interpreted as Markdown or HTML.
 * - The webview's Content-Security-Policy allows no remote content and only the nonce'd script,
 *   so even a renderer bug could not load or run anything.
 */
import MarkdownIt from 'markdown-it';
import type { ChatItem, ApprovalView } from '../core/messages';
import type { ApprovalField } from '../protocol';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return String(s).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

type Markdown = InstanceType<typeof MarkdownIt>;

const SAFE_LINK = /^(https?:\/\/|mailto:)/i;

function createMarkdown(): Markdown {
  const md = new MarkdownIt({ html: false, linkify: false, typographer: false, breaks: false });
  md.validateLink = (url: string) => SAFE_LINK.test(url.trim());
  // Images are never loaded (no remote content): show the alt text and the address as text.
  md.renderer.rules.image = (tokens, idx) => {
    const t = tokens[idx];
    const alt = String(t.children ? t.children.map((c) => c.content).join('') : t.content);
    const src = String(t.attrGet('src') ?? '');
    return `<span class="md-image" title="${escapeHtml(src)}">[image: ${escapeHtml(alt || src)}]</span>`;
  };
  const defaultLinkOpen =
    md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    const t = tokens[idx];
    t.attrSet('title', t.attrGet('href') ?? '');
    t.attrSet('rel', 'noopener noreferrer');
    return defaultLinkOpen(tokens, idx, options, env, self);
  };
  return md;
}

let mdInstance: Markdown | undefined;

/** Markdown from the model, rendered safely (see the rules at the top). */
export function renderMarkdown(text: string): string {
  mdInstance ??= createMarkdown();
  return mdInstance.render(String(text));
}

/** `Label: "value"`, label and value exactly as the server sent them (values are already escaped for display). */
export function renderFields(fields: ApprovalField[]): string {
  if (!fields.length) return '';
  const rows = fields
    .map(
      (f) =>
        `<div class="field"><span class="field-label">${escapeHtml(f.label)}:</span> <span class="field-value">"${escapeHtml(f.value)}"</span></div>`,
    )
    .join('');
  return `<div class="fields">${rows}</div>`;
}

const OUTCOME_TEXT: Record<ApprovalView['state'], string> = {
  pending: 'Needs approval',
  approved: 'Approved',
  denied: 'Denied',
  cancelled: 'Cancelled',
};

/** What Always in this project keeps, worded as the terminal's `a = always: …` line. */
export function alwaysText(always: { rules: string[]; project: string }): string {
  return `Always in this project: ${always.rules.join(', ')} in ${always.project}`;
}

export function renderApproval(toolName: string, a: ApprovalView, id: string, extraHtml = '', diffButton = ''): string {
  const pending = a.state === 'pending';
  // The server's order (the deciding fields last), then Mino's own lines: the working directory, the
  // warning, and the question naming the tool and the risk, so the model's long text is never the
  // last thing read before answering (long fields scroll inside the card: chat.css).
  const body = [
    renderFields(a.fields),
    `<div class="workdir"><span class="field-label">Working directory:</span> <span class="field-value">${escapeHtml(a.workdir)}</span></div>`,
    a.warning ? `<div class="warning" role="note">${escapeHtml(a.warning)}</div>` : '',
  ].join('');
  const parts = [
    `<div class="card approval state-${escapeHtml(a.state)}" data-id="${escapeHtml(id)}" data-key="${escapeHtml(a.key)}">`,
    `<div class="card-head"><span class="card-icon" aria-hidden="true">⚙</span>`,
    `<span class="card-title">[Tool: ${escapeHtml(toolName)}]</span>`,
    `<span class="pill pill-${escapeHtml(a.state)}">${OUTCOME_TEXT[a.state]}</span></div>`,
  ];
  if (pending) {
    parts.push(
      body,
      a.always ? `<div class="always-rule">${escapeHtml(alwaysText(a.always))}</div>` : '',
      `<div class="question"><span class="question-tool">[Tool: ${escapeHtml(toolName)}]</span> ${escapeHtml(a.question)}</div>`,
      `<div class="actions">`,
      `<button type="button" class="btn approve" data-action="approve" data-key="${escapeHtml(a.key)}">Approve</button>`,
      ...(a.always
        ? [
            `<button type="button" class="btn secondary always" data-action="always" data-key="${escapeHtml(a.key)}" ` +
              `title="${escapeHtml(alwaysText(a.always))}">Always in this project</button>`,
          ]
        : []),
      `<button type="button" class="btn secondary deny" data-action="deny" data-key="${escapeHtml(a.key)}">Deny</button>`,
      diffButton,
      `</div>`,
    );
  } else {
    // answered: the same fields, folded away to keep the chat compact
    parts.push(`<details class="call-fields"><summary>What was asked</summary>${body}</details>`);
    if (diffButton) parts.push(`<div class="actions">${diffButton}</div>`);
  }
  parts.push(extraHtml, '</div>');
  return parts.join('');
}

const STATUS_CLASS: Record<string, string> = {
  completed: 'ok',
  denied: 'bad',
  failed: 'bad',
  invalid_arguments: 'bad',
  unknown: 'warn',
};

function renderResult(status: string | undefined, result: string | undefined, open: boolean): string {
  if (status === undefined && result === undefined) return '';
  const cls = STATUS_CLASS[status ?? ''] ?? 'warn';
  const head = `<span class="result-status ${cls}">[Tool result: ${escapeHtml(status ?? '…')}]</span>`;
  if (!result) return `<div class="result">${head}</div>`;
  const firstLine = result.split('\n', 1)[0];
  const summary = firstLine.length > 120 ? firstLine.slice(0, 117) + '…' : firstLine;
  return (
    `<details class="result"${open ? ' open' : ''}><summary>${head} <span class="result-summary">${escapeHtml(summary)}</span></summary>` +
    `<pre class="result-text">${escapeHtml(result)}</pre></details>`
  );
}

/** "Open diff": the call's file change in VS Code's diff editor (the host keeps the texts). */
export function renderDiffButton(item: Extract<ChatItem, { kind: 'tool' }>): string {
  if (!item.hasDiff || !item.callId) return '';
  return (
    `<button type="button" class="btn secondary open-diff" data-action="open-diff" data-turn="${escapeHtml(item.turnId)}"` +
    ` data-call="${escapeHtml(item.callId)}" title="Show the change in the diff editor">Open diff</button>`
  );
}

export function renderTool(item: Extract<ChatItem, { kind: 'tool' }>): string {
  const diffButton = renderDiffButton(item);
  if (item.approval) {
    return renderApproval(item.tool, item.approval, item.id, renderResult(item.status, item.result, false), diffButton);
  }
  // A refused call (plan mode, a deny rule) is shown in full too: the person sees what was not done.
  const shown = item.decision === 'show' || item.decision === 'ask' || item.decision === 'refuse';
  const byRule = (item.fields ?? []).some((f) => f.label === 'Rule'); // a deny rule names itself in its Rule field
  const fields =
    renderFields(item.fields) + (item.warning ? `<div class="warning" role="note">${escapeHtml(item.warning)}</div>` : '');
  const body = shown ? fields : fields ? `<details class="call-fields"><summary>Details</summary>${fields}</details>` : '';
  return (
    `<div class="card tool decision-${escapeHtml(item.decision ?? 'history')}" data-id="${escapeHtml(item.id)}">` +
    `<div class="card-head"><span class="card-icon" aria-hidden="true">⚙</span><span class="card-title">[Tool: ${escapeHtml(item.tool)}]</span>` +
    (item.decision === 'show' ? '<span class="pill pill-show">Ran without asking</span>' : '') +
    (item.decision === 'refuse'
      ? `<span class="pill pill-denied">${byRule ? 'Refused by a rule' : 'Refused in plan mode'}</span>`
      : '') +
    `</div>${body}${diffButton ? `<div class="actions">${diffButton}</div>` : ''}${renderResult(item.status, item.result, false)}</div>`
  );
}

export function renderItem(item: ChatItem): string {
  switch (item.kind) {
    case 'user': {
      const chips = (item.context ?? []).map((c) => `<span class="chip sent" title="Sent with this message">${escapeHtml(c)}</span>`).join('');
      const rewind =
        item.rewind && item.turnId
          ? `<div class="actions"><button type="button" class="btn secondary rewind" data-action="rewind" data-turn="${escapeHtml(item.turnId)}" ` +
            `title="Put back the files this request and later ones changed (asks first, with the diffs)">Rewind to here</button></div>`
          : '';
      return (
        `<div class="msg user${item.rewound ? ' rewound' : ''}" data-id="${escapeHtml(item.id)}"><div class="bubble plain">${escapeHtml(item.text)}</div>` +
        (chips ? `<div class="msg-context">${chips}</div>` : '') +
        (item.rewound ? '<div class="rewound-note">Rewound: no longer sent to the model</div>' : '') +
        rewind +
        `</div>`
      );
    }
    case 'assistant':
      return (
        `<div class="msg assistant${item.streaming ? ' streaming' : ''}" data-id="${escapeHtml(item.id)}">` +
        `<div class="markdown">${renderMarkdown(item.text)}</div>` +
        (item.interrupted ? '<div class="rewound-note">Interrupted: the model was told not to carry this on</div>' : '') +
        `</div>`
      );
    case 'tool':
      return renderTool(item);
    case 'thinking':
      // collapsed: the answer is what the panel shows; the thinking opens on a click (plain text)
      return (
        `<details class="thinking" data-id="${escapeHtml(item.id)}"><summary>Thinking</summary>` +
        `<div class="thinking-text">${escapeHtml(item.text)}</div></details>`
      );
    case 'notice':
      return `<div class="notice ${escapeHtml(item.level)}" data-id="${escapeHtml(item.id)}">${escapeHtml(item.text)}</div>`;
    case 'command':
      return (
        `<div class="command" data-id="${escapeHtml(item.id)}"><div class="command-line">${escapeHtml(item.line)}</div>` +
        (item.output.length ? `<pre class="command-output">${escapeHtml(item.output.join('\n'))}</pre>` : '') +
        `</div>`
      );
    default:
      return '';
  }
}
