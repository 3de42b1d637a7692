import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalBroker, type ApprovalChange } from '../../src/core/approvals';
import type { ApprovalRequest } from '../../src/protocol';

function params(callId = 'call_1'): ApprovalRequest {
  return {
    turnId: 't1',
    callId,
    tool: 'memory_save',
    fields: [{ label: 'Memory', value: '"x"' }],
    warning: 'w',
    question: 'Approve this operation?',
    workdir: '/ws',
  };
}

class Token {
  isCancellationRequested = false;
  ls: (() => void)[] = [];
  onCancellationRequested(l: () => void) {
    this.ls.push(l);
    return { dispose: () => (this.ls = this.ls.filter((x) => x !== l)) };
  }
  cancel() {
    this.isCancellationRequested = true;
    for (const l of this.ls) l();
  }
}

function broker() {
  let n = 0;
  const b = new ApprovalBroker(() => `key${++n}`);
  const changes: ApprovalChange[] = [];
  b.onDidChange((c) => changes.push(c));
  return { b, changes };
}

test('the first answer wins; later answers are ignored', async () => {
  const { b, changes } = broker();
  const p = b.request(params());
  assert.equal(b.count, 1);
  const key = b.list()[0].key;
  assert.equal(b.answer(key, true, 'panel'), true);
  assert.equal(b.answer(key, false, 'notification'), false);
  assert.equal(await p, true);
  assert.equal(b.count, 0);
  assert.deepEqual(
    changes.map((c) => [c.kind, c.kind === 'settled' ? c.outcome : '', c.kind === 'settled' ? c.source : '']),
    [
      ['added', '', ''],
      ['settled', 'approved', 'panel'],
    ],
  );
});

test('deny from the notification', async () => {
  const { b } = broker();
  const p = b.request(params());
  b.answer(b.list()[0].key, false, 'notification');
  assert.equal(await p, false);
});

test('nothing is approved by itself: pending stays pending', async () => {
  const { b } = broker();
  let settled = false;
  void b.request(params()).then(() => (settled = true));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(settled, false);
  assert.equal(b.count, 1);
});

test('unknown keys answer nothing', () => {
  const { b } = broker();
  void b.request(params());
  assert.equal(b.answer('nope', true, 'panel'), false);
  assert.equal(b.count, 1);
});

test('approval_resolved from the server ends it (not approved), and the surfaces hear of it', async () => {
  const { b, changes } = broker();
  const p = b.request(params('c9'));
  b.resolvedByServer('c9', 'approved');
  assert.equal(await p, false);
  const last = changes.at(-1)!;
  assert.equal(last.kind, 'settled');
  assert.equal(last.kind === 'settled' && last.source, 'server');
  // a later click does nothing
  assert.equal(b.answer('key1', true, 'panel'), false);
});

test('cancellation of the request denies', async () => {
  const { b } = broker();
  const t = new Token();
  const p = b.request(params(), t);
  t.cancel();
  assert.equal(await p, false);
  assert.equal(b.count, 0);
});

test('an answer drops the subscription to the cancellation; a later cancel changes nothing', async () => {
  const { b, changes } = broker();
  const t = new Token();
  const p = b.request(params(), t);
  assert.equal(t.ls.length, 1);
  b.answer(b.list()[0].key, true, 'panel');
  assert.equal(t.ls.length, 0);
  t.cancel();
  assert.equal(await p, true);
  assert.equal(changes.length, 2);
});

test('an already-cancelled token denies at once', async () => {
  const { b } = broker();
  const t = new Token();
  t.cancel();
  assert.equal(await b.request(params(), t), false);
});

test('server gone: everything pending is denied', async () => {
  const { b } = broker();
  const a = b.request(params('a'));
  const c = b.request(params('c'));
  b.cancelAll();
  assert.deepEqual(await Promise.all([a, c]), [false, false]);
});

test('keys are what the key factory makes (unguessable in the extension)', () => {
  const { b } = broker();
  void b.request(params());
  assert.equal(b.list()[0].key, 'key1');
  assert.equal(b.findByCallId('call_1')?.key, 'key1');
});

test('a repeated request for the same call replaces the old one, which is denied', async () => {
  const { b } = broker();
  const first = b.request(params('same'));
  const second = b.request(params('same'));
  assert.equal(await first, false);
  assert.equal(b.count, 1);
  b.answer(b.list()[0].key, true, 'notification');
  assert.equal(await second, true);
});

test('always answers only where the request offered it, and only with a yes', async () => {
  const { b } = broker();
  const plain = b.request(params('c1'));
  assert.equal(b.answer(b.list()[0].key, 'always', 'panel'), true);
  assert.equal(await plain, true); // not offered: a plain yes
  const offered = b.request({ ...params('c2'), always: { rules: ['bash ls'], project: '/ws' } });
  b.answer(b.list()[0].key, 'always', 'notification');
  assert.equal(await offered, 'always');
  const denied = b.request({ ...params('c3'), always: { rules: ['bash ls'], project: '/ws' } });
  b.answer(b.list()[0].key, false, 'panel');
  assert.equal(await denied, false);
});
