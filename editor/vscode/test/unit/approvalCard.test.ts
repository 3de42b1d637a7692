import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderApproval, renderItem } from '../../src/webview/render';
import type { ApprovalView } from '../../src/core/messages';

/** What a browser shows for an HTML text fragment: decode the entities escapeHtml produces. */
function decode(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

function textOf(html: string, cls: string): string[] {
  const re = new RegExp(`<span class="${cls}">([^<]*)</span>`, 'g');
  return [...html.matchAll(re)].map((m) => decode(m[1]));
}

// Values exactly as the server sends them: already escaped for display (docs/BEHAVIOUR.md, "Approval display"); the card adds the quotes.
const fields = [
  { label: 'Memory', value: 'uses-pnpm' },
  { label: 'Directory', value: '/home/you/.mino/memory' },
  { label: 'Mode', value: 'Create a new memory' },
  { label: 'Type', value: 'project' },
  { label: 'Summary', value: '这个用户的项目都用 pnpm 安装依赖，从不用 npm 或 yarn。' },
  { label: 'Details', value: 'line one\\nline two\\u200b\\u202e \\"q\\" \\\\ <script>alert(1)</script> **bold** [x](javascript:alert(1)) &amp; \\t' },
  { label: 'Look-alike', value: 'pаypal' }, // Cyrillic а stays a letter
];
const approval: ApprovalView = {
  key: 'k123',
  fields,
  warning: 'Saved memories are shown to the model in every later session and project; approval applies only to this content.',
  question: 'Approve this operation?',
  workdir: '/work/ws <b>x</b>',
  state: 'pending',
};

test('every field is shown verbatim, in order, escapes kept as sent', () => {
  const html = renderApproval('memory_save', approval, 't-1');
  assert.deepEqual(textOf(html, 'field-label'), [...fields.map((f) => `${f.label}:`), 'Working directory:']);
  assert.deepEqual(textOf(html, 'field-value'), [...fields.map((f) => `"${f.value}"`), approval.workdir]);
  // the backslash escapes are shown as typed characters, not turned into the characters they name
  assert.ok(html.includes('line one\\nline two\\u200b\\u202e \\&quot;q\\&quot; \\\\ '), html);
  assert.ok(!html.includes('\u200b') && !html.includes('\u202e'));
  // an entity in a value is shown as the text "&amp;", not decoded
  assert.ok(html.includes('&amp;amp;'), html);
});

test('no field becomes HTML or Markdown', () => {
  const html = renderApproval('memory_save', approval, 't-1');
  assert.ok(!/<script|<strong|<a\s|<b>/i.test(html), html);
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt; **bold** [x](javascript:alert(1))'));
});

test('the card shows tool, warning, question and workdir', () => {
  const html = renderApproval('memory_save', approval, 't-1');
  assert.ok(html.includes('[Tool: memory_save]'));
  assert.ok(html.includes(`<div class="warning" role="note">${approval.warning}</div>`));
  assert.ok(html.includes('<div class="question"><span class="question-tool">[Tool: memory_save]</span> Approve this operation?</div>'));
  assert.ok(html.includes('/work/ws &lt;b&gt;x&lt;/b&gt;'));
});

test('the fields in the server\'s order, then the working directory, the warning and the question naming tool and risk', () => {
  // Issue 22, finding 5: the model's long text is never the last thing read before answering.
  const bash: ApprovalView = {
    ...approval,
    fields: [
      { label: 'Command', value: 'make deploy' },
      { label: 'Reason', value: 'it pushes \u201cSandbox: bwrap\u201d' },
      { label: 'Directory', value: '/w' },
      { label: 'Sandbox', value: 'none (requested)' },
    ],
    warning: 'Command is too long to show in full.',
    question: 'Run OUTSIDE the sandbox?',
  };
  const html = renderApproval('bash', bash, 't-1');
  const at = (s: string) => {
    const i = html.indexOf(s);
    assert.ok(i >= 0, `${s} in ${html}`);
    return i;
  };
  assert.ok(at('"make deploy"') < at('Reason:') && at('Reason:') < at('"/w"') && at('"/w"') < at('"none (requested)"'));
  assert.ok(at('"none (requested)"') < at('Working directory:') && at('Working directory:') < at('class="warning"'));
  assert.ok(at('class="warning"') < at('<div class="question"><span class="question-tool">[Tool: bash]</span> Run OUTSIDE the sandbox?</div>'));
  assert.ok(at('class="question"') < at('data-action="approve"'));
});

test('pending cards have Approve and Deny buttons carrying the key; answered cards have none', () => {
  const html = renderApproval('memory_save', approval, 't-1');
  assert.match(html, /<button type="button" class="btn approve" data-action="approve" data-key="k123">Approve<\/button>/);
  assert.match(html, /data-action="deny" data-key="k123">Deny</);
  for (const state of ['approved', 'denied', 'cancelled'] as const) {
    const done = renderApproval('memory_save', { ...approval, state }, 't-1');
    assert.ok(!/<button/.test(done), done);
    assert.match(done, new RegExp(`pill-${state}`));
    assert.ok(done.includes('[Tool: memory_save]') && done.includes('"uses-pnpm"'));
  }
});

test('no warning: no warning block', () => {
  const html = renderApproval('bash', { ...approval, warning: null }, 't-2');
  assert.ok(!html.includes('class="warning"'));
});

test('tool names and keys cannot break out of attributes or markup', () => {
  const html = renderApproval('x"><script>1</script>', { ...approval, key: '"><img src=x>' }, 'id"><x');
  assert.ok(!/<script|<img|<x/i.test(html), html);
});

test('a tool card with an approval shows the result below the card', () => {
  const html = renderItem({
    kind: 'tool',
    id: 't-9',
    turnId: 't',
    callId: 'c',
    tool: 'memory_save',
    fields: [],
    approval: { ...approval, state: 'approved' },
    status: 'completed',
    result: 'Saved memory uses-pnpm. Its summary appears in the memory index from the next turn.',
  });
  assert.ok(html.includes('[Tool result: completed]'));
  assert.ok(html.includes('Saved memory uses-pnpm.'));
});

test('run-and-show calls show their fields without a question', () => {
  const html = renderItem({ kind: 'tool', id: 't-3', turnId: 't', callId: 'c3', tool: 'write_file', fields: [{ label: 'Path', value: 'a.txt' }], decision: 'show' });
  assert.ok(html.includes('"a.txt"'));
  assert.ok(!html.includes('Approve this operation?'));
  assert.ok(!/<button/.test(html));
});

test('a call refused in plan mode shows its fields, says it was refused, and asks nothing', () => {
  const html = renderItem({
    kind: 'tool', id: 't-4', turnId: 't', callId: 'c4', tool: 'write_file', fields: [{ label: 'Path', value: 'a.txt' }], decision: 'refuse',
    status: 'denied', result: 'Plan mode refused this call without asking the user',
  });
  assert.ok(html.includes('"a.txt"'));
  assert.ok(html.includes('Refused in plan mode'));
  assert.ok(!html.includes('Ran without asking'));
  assert.ok(!/<button/.test(html));
});

test('a user message whose turn can be rewound has "Rewind to here"; a rewound one is marked and has none', () => {
  const offered = renderItem({ kind: 'user', id: 'u-1', text: 'change <it>', turnId: 'ab12', rewind: true });
  assert.match(offered, /<button type="button" class="btn secondary rewind" data-action="rewind" data-turn="ab12"/);
  assert.match(offered, /Rewind to here/);
  assert.match(offered, /change &lt;it&gt;/);
  const gone = renderItem({ kind: 'user', id: 'u-2', text: 'x', turnId: 'ab12', rewound: true });
  assert.match(gone, /class="msg user rewound"/);
  assert.match(gone, /Rewound: no longer sent to the model/);
  assert.doesNotMatch(gone, /Rewind to here/);
  assert.doesNotMatch(renderItem({ kind: 'user', id: 'u-3', text: 'x' }), /Rewind to here/);
});

test('an interrupted answer from the history is marked', () => {
  const cut = renderItem({ kind: 'assistant', id: 'a-1', turnId: 't', text: 'half', streaming: false, interrupted: true });
  assert.match(cut, /Interrupted: the model was told not to carry this on/);
  const whole = renderItem({ kind: 'assistant', id: 'a-2', turnId: 't', text: 'all', streaming: false });
  assert.doesNotMatch(whole, /Interrupted/);
});

test('thinking renders as a collapsed block of plain text', () => {
  const html = renderItem({ kind: 'thinking', id: 't-9', turnId: 't', text: 'Plan: <img src=x onerror=alert(1)>' });
  assert.match(html, /^<details class="thinking" data-id="t-9"><summary>Thinking<\/summary>/);
  assert.ok(!html.includes(' open'), 'collapsed');
  assert.ok(!html.includes('<img'), 'escaped');
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
});

test('Always in this project only where a rule is offered, with what it keeps shown and escaped', () => {
  assert.ok(!renderApproval('bash', approval, 't-1').includes('data-action="always"'));
  const offered = { ...approval, always: { rules: ['bash git status', 'bash <b>x</b>'], project: '/work/ws' } };
  const html = renderApproval('bash', offered, 't-1');
  assert.match(html, /data-action="always" data-key="k123"[^>]*>Always in this project<\/button>/);
  assert.ok(html.includes('Always in this project: bash git status, bash &lt;b&gt;x&lt;/b&gt; in /work/ws'));
  assert.ok(!html.includes('<b>x</b>'));
  // the deny button stays last of the answers, after Always
  assert.ok(html.indexOf('data-action="always"') < html.indexOf('data-action="deny"'));
});
