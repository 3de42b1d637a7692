import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Transcript } from '../../src/core/transcript';
import type { Patch } from '../../src/core/messages';
import type { ApprovalRequest, Event } from '../../src/protocol';

function setup() {
  const patches: Patch[] = [];
  const t = new Transcript((p) => patches.push(...p));
  return { t, patches };
}

test('text deltas stream into one assistant item, assistant_message settles it', () => {
  const { t, patches } = setup();
  t.addUser('hi');
  t.applyEvent({ turnId: 'T', type: 'text_delta', text: 'Hel' });
  t.applyEvent({ turnId: 'T', type: 'text_delta', text: 'lo' });
  t.applyEvent({ turnId: 'T', type: 'assistant_message', text: 'Hello.' });
  const items = t.snapshot();
  assert.equal(items.length, 2);
  assert.deepEqual(items[1], { kind: 'assistant', id: items[1].id, turnId: 'T', text: 'Hello.', streaming: false });
  assert.deepEqual(
    patches.map((p) => p.op),
    ['upsert', 'upsert', 'delta', 'upsert'],
  );
  assert.deepEqual(patches[2], { op: 'delta', id: items[1].id, text: 'lo' });
});

test('text after a tool call starts a new message', () => {
  const { t } = setup();
  const evs: Event[] = [
    { turnId: 'T', type: 'text_delta', text: 'Let me save that.' },
    { turnId: 'T', type: 'tool_call', callId: 'c1', tool: 'memory_save', fields: [{ label: 'Memory', value: '"x"' }], warning: null, decision: 'ask' },
    { turnId: 'T', type: 'tool_result', callId: 'c1', tool: 'memory_save', status: 'completed', text: 'Saved memory x.' },
    { turnId: 'T', type: 'text_delta', text: 'Done.' },
    { turnId: 'T', type: 'turn_end', status: 'completed' },
  ];
  for (const e of evs) t.applyEvent(e);
  const items = t.snapshot();
  assert.deepEqual(
    items.map((i) => i.kind),
    ['assistant', 'tool', 'assistant'],
  );
  assert.equal(items[0].kind === 'assistant' && items[0].streaming, false);
  assert.equal(items[2].kind === 'assistant' && items[2].streaming, false);
  const tool = items[1];
  assert.ok(tool.kind === 'tool');
  assert.equal(tool.status, 'completed');
  assert.equal(tool.result, 'Saved memory x.');
  assert.deepEqual(tool.fields, [{ label: 'Memory', value: '"x"' }]);
});

const approve: ApprovalRequest = {
  turnId: 'T',
  callId: 'c1',
  tool: 'memory_save',
  fields: [{ label: 'Memory', value: '"x"' }],
  warning: 'careful',
  question: 'Approve this operation?',
  workdir: '/ws',
};

test('an approval attaches to its call card and its outcome is shown', () => {
  const { t } = setup();
  t.applyEvent({ turnId: 'T', type: 'tool_call', callId: 'c1', tool: 'memory_save', fields: approve.fields, warning: approve.warning, decision: 'ask' });
  t.approvalRequested('K', approve);
  let items = t.snapshot();
  assert.equal(items.length, 1);
  assert.ok(items[0].kind === 'tool');
  assert.deepEqual(items[0].approval, { key: 'K', fields: approve.fields, warning: 'careful', question: 'Approve this operation?', workdir: '/ws', state: 'pending' });
  t.applyEvent({ turnId: 'T', type: 'approval_resolved', callId: 'c1', outcome: 'denied' });
  items = t.snapshot();
  assert.ok(items[0].kind === 'tool');
  assert.equal(items[0].approval?.state, 'denied');
});

test('an approval without a prior tool_call creates the card', () => {
  const { t } = setup();
  t.approvalRequested('K', approve);
  const items = t.snapshot();
  assert.equal(items.length, 1);
  assert.ok(items[0].kind === 'tool' && items[0].approval?.state === 'pending');
});

test('turn_end marks approvals still pending as cancelled', () => {
  const { t } = setup();
  t.approvalRequested('K', approve);
  t.applyEvent({ turnId: 'T', type: 'turn_end', status: 'interrupted' });
  const items = t.snapshot();
  assert.ok(items[0].kind === 'tool' && items[0].approval?.state === 'cancelled');
});

test('the first outcome sticks', () => {
  const { t } = setup();
  t.approvalRequested('K', approve);
  t.approvalSettled('c1', 'approved');
  t.applyEvent({ turnId: 'T', type: 'approval_resolved', callId: 'c1', outcome: 'cancelled' });
  const items = t.snapshot();
  assert.ok(items[0].kind === 'tool' && items[0].approval?.state === 'approved');
});

test('history becomes items', () => {
  const { t } = setup();
  const items = t.fromHistory([
    { seq: 1, turnId: 'a', role: 'user', text: 'Remember pine.' },
    { seq: 3, turnId: 'a', role: 'tool', text: 'Saved memory pine.', tool: 'memory_save', status: 'completed' },
    { seq: 4, turnId: 'a', role: 'assistant', text: 'Saved.' },
  ]);
  assert.deepEqual(
    items.map((i) => i.kind),
    ['user', 'tool', 'assistant'],
  );
  t.reset(items);
  assert.equal(t.length, 3);
  assert.ok(items[1].kind === 'tool' && items[1].tool === 'memory_save' && items[1].status === 'completed');
});

test('notices, commands and snapshots are copies', () => {
  const { t } = setup();
  t.addCommand('/sessions', ['* aaa', '  bbb']);
  t.addNotice('Interrupted.', 'warning');
  const snap = t.snapshot();
  assert.deepEqual(
    snap.map((i) => i.kind),
    ['command', 'notice'],
  );
  (snap[0] as { output: string[] }).output.push('mutated');
  assert.deepEqual((t.snapshot()[0] as { output: string[] }).output, ['* aaa', '  bbb']);
});

test('unknown event types are ignored', () => {
  const { t, patches } = setup();
  t.applyEvent({ turnId: 'T', type: 'something_new' } as unknown as Event);
  assert.equal(patches.length, 0);
});

test('rewind: a live message learns its turn; the turns mino/checkpoints lists offer "Rewind to here"; rewound ones are marked', () => {
  const { t, patches } = setup();
  t.loadHistory({
    items: [
      { seq: 1, turnId: 'a1', role: 'user', text: 'old request', rewound: true },
      { seq: 2, turnId: 'a1', role: 'assistant', text: 'old answer', rewound: true },
      { seq: 3, turnId: 'b2', role: 'user', text: 'kept request' },
    ],
  });
  t.addUser('live request');
  t.userTurn('c3');
  t.userTurn('d4'); // the latest message already has its turn: nothing changes
  const users = () => t.snapshot().filter((i) => i.kind === 'user');
  assert.deepEqual(
    users().map((u) => [u.kind === 'user' && u.turnId, u.kind === 'user' && !!u.rewound]),
    [['a1', true], ['b2', false], ['c3', false]],
  );
  patches.length = 0;
  t.setRewindable(new Set(['a1', 'c3']));
  // a rewound turn never offers it again, whatever the list says
  assert.deepEqual(users().map((u) => u.kind === 'user' && !!u.rewind), [false, false, true]);
  assert.equal(patches.length, 1);
  t.setRewindable(new Set());
  assert.deepEqual(users().map((u) => u.kind === 'user' && 'rewind' in u), [false, false, false]);
});

test('thinking is its own item, apart from the answer, and ends the streamed text before it', () => {
  const { t } = setup();
  t.applyEvent({ type: 'text_delta', turnId: 'T', text: 'Before. ' });
  t.applyEvent({ type: 'thinking', turnId: 'T', text: 'The user wants <b>bold</b>.' });
  t.applyEvent({ type: 'text_delta', turnId: 'T', text: 'After.' });
  t.applyEvent({ type: 'thinking', turnId: 'T', text: '' }); // nothing to show
  const items = t.snapshot();
  assert.deepEqual(
    items.map((i) => i.kind),
    ['assistant', 'thinking', 'assistant'],
  );
  const thought = items[1];
  assert.ok(thought.kind === 'thinking' && thought.text === 'The user wants <b>bold</b>.');
  assert.ok(items[2].kind === 'assistant' && items[2].text === 'After.');
});
