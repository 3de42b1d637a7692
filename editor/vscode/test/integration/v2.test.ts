/**
 * Protocol 2 through the extension's own client and pure modules, against the REAL `mino --stdio`:
 * editor context on a turn (as the chips send it), `@` completion, diffs on approvals and tool
 * calls, and many windows on one MINO_HOME (a reloaded window's session, sessions open elsewhere,
 * mino/sessionsChanged, turns at the same time).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MINO, T, startMino, until, withMino, type Mino, type Reply } from './harness';
import { isRpcError } from '../../src/client/minoClient';
import { ContextChips, toContextItems } from '../../src/core/context';
import { isFileDiff } from '../../src/core/diffs';
import { sessionPickItems } from '../../src/core/format';
import { ErrorCodes, type Event } from '../../src/protocol';

function rpcCode(e: unknown): number | undefined {
  return isRpcError(e) ? e.code : undefined;
}

test('a selection chip and a file chip go with the turn: the model request carries both', T, async () => {
  const files = { 'src/app.py': 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' };
  const replies: Reply[] = [
    {
      // the selection as the editor shows it (unsaved), then the file the server reads itself
      require: ['Explain this.', 'Context: src/app.py (lines 5-6)', 'def sub(a, b):  # unsaved', 'Context: README.md', '# test workspace'],
      text: 'It subtracts.',
    },
  ];
  await withMino({ replies, files }, async (m) => {
    const chips = new ContextChips();
    assert.ok(chips.add({ path: 'src/app.py', startLine: 5, endLine: 6, text: 'def sub(a, b):  # unsaved\n    return a - b' }).ok);
    assert.ok(chips.add({ path: 'README.md' }).ok);
    const r = await m.session.client.turn('Explain this.', undefined, toContextItems(chips.take()));
    assert.equal(r.status, 'completed');
    assert.equal(r.text, 'It subtracts.');
  });
});

test('a context item outside the working directory is refused (-32602) and nothing is sent', T, async () => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  try {
    // no reply scripted: a request reaching the model would be recorded as an error
    await withMino({ replies: [] }, async (m) => {
      await assert.rejects(
        m.session.client.turn('Read it.', undefined, [{ path: path.join(outside, 'secret.txt') }]),
        (e: unknown) => rpcCode(e) === ErrorCodes.invalidParams && /context/i.test((e as Error).message),
      );
      await assert.rejects(
        m.session.client.turn('Read it.', undefined, [{ path: '../x.txt', text: 'x' }]),
        (e: unknown) => rpcCode(e) === ErrorCodes.invalidParams,
      );
      const h = await m.session.client.history();
      assert.equal(h.items.length, 0, 'nothing was logged');
    });
  } finally {
    fs.rmSync(outside, { recursive: true, force: true });
  }
});

test('@ completion: mino/files answers workspace paths for a prefix', T, async () => {
  await withMino({ replies: [], files: { 'src/app.py': 'x\n', 'src/util/helpers.py': 'y\n', 'docs/my notes.md': 'z\n' } }, async (m) => {
    let src: string[] = [];
    for (let i = 0; i < 50 && src.length < 2; i++) {
      src = (await m.session.client.files('src/')).paths; // the list is made in the background at start-up
      if (src.length < 2) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(src.includes('src/app.py') && src.includes('src/util/helpers.py'), src.join(', '));
    const byName = (await m.session.client.files('help')).paths;
    assert.ok(byName.includes('src/util/helpers.py'), byName.join(', '));
    assert.ok((await m.session.client.files('READ')).paths.includes('README.md'));
  });
});

test('an edit approval carries the whole file before and after; the file changes only once approved', T, async () => {
  const files = { 'src/app.py': 'x = 1\n' };
  const replies: Reply[] = [
    { calls: [{ name: 'edit_file', arguments: { path: 'src/app.py', old_text: 'x = 1', new_text: 'x = 2' } }] },
    { text: 'Changed it.' },
    { calls: [{ name: 'write_file', arguments: { path: 'new.txt', content: 'hello\n', mode: 'create' } }] },
    { text: 'Not written.' },
  ];
  await withMino({ replies, files }, async (m) => {
    const target = path.join(m.workdir, 'src', 'app.py');
    let onDiskWhileAsked = '';
    m.approve = () => {
      onDiskWhileAsked = fs.readFileSync(target, 'utf8');
      return Promise.resolve(true);
    };
    const r = await m.session.client.turn('Make x two.');
    assert.equal(r.status, 'completed');
    const a = m.approvals[0];
    assert.ok(isFileDiff(a.diff), JSON.stringify(a.diff));
    assert.equal(fs.realpathSync(a.diff.path), fs.realpathSync(target));
    assert.equal(a.diff.before, 'x = 1\n');
    assert.equal(a.diff.after, 'x = 2\n');
    assert.equal(onDiskWhileAsked, 'x = 1\n', 'untouched while the question was open');
    assert.equal(fs.readFileSync(target, 'utf8'), 'x = 2\n', 'written once approved');
    const call = m.events.find((e): e is Extract<Event, { type: 'tool_call' }> => e.type === 'tool_call' && e.callId === a.callId);
    assert.ok(call && isFileDiff(call.diff) && call.decision === 'ask', 'the tool_call event carries it too');

    // a new file: before is null; denied: nothing on disk
    m.approve = () => Promise.resolve(false);
    await m.session.client.turn('Write new.txt.');
    const b = m.approvals[1];
    assert.deepEqual({ before: b.diff?.before, after: b.diff?.after }, { before: null, after: 'hello\n' });
    assert.equal(fs.existsSync(path.join(m.workdir, 'new.txt')), false);
  });
});

test('accept-edits: a write that runs without asking still carries its diff on the tool_call event', T, async () => {
  const replies: Reply[] = [{ calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'A\n', mode: 'create' } }] }, { text: 'Done.' }];
  await withMino({ replies, mode: 'accept-edits' }, async (m) => {
    await m.session.client.turn('Write a.txt.');
    assert.equal(m.approvals.length, 0);
    const call = m.events.find((e): e is Extract<Event, { type: 'tool_call' }> => e.type === 'tool_call');
    assert.ok(call && call.decision === 'show' && isFileDiff(call.diff) && call.diff.after === 'A\n', JSON.stringify(call));
  });
});

test('two windows on one home: each its own session, turns at the same time, a reload gets its session back', T, async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-home-'));
  const slow = (text: string, needle: string): Reply => ({ require: needle, text, delay: 0.05 });
  const a = await startMino({ mino: MINO!, home, replies: [slow('Answer for A, streamed slowly over a few events.', 'question from A')] });
  let b: Mino | undefined;
  let aOpen = true;
  try {
    b = await startMino({ mino: MINO!, home, replies: [slow('Answer for B, streamed slowly over a few events.', 'question from B')] });
    const sa = await a.session.client.state();
    const sb = await b.session.client.state();
    assert.ok(sa.sessionId && sb.sessionId && sa.sessionId !== sb.sessionId, 'the second window is not refused and has its own session');
    // the Resume picker in A marks B's session as open elsewhere
    const rows = sessionPickItems((await a.session.client.listSessions()).sessions, sa.sessionId);
    const rowB = rows.find((r) => r.id === sb.sessionId);
    assert.ok(rowB?.openElsewhere && rowB.description === 'open in another window', JSON.stringify(rows));
    // resuming it in A is refused with -32006, and nothing changes
    await assert.rejects(a.session.client.resumeSession(sb.sessionId), (e: unknown) => rpcCode(e) === ErrorCodes.sessionInUse);
    assert.equal((await a.session.client.state()).sessionId, sa.sessionId);
    // chatting in both at once
    const [ra, rb] = await Promise.all([a.session.client.turn('question from A'), b.session.client.turn('question from B')]);
    assert.equal(ra.status, 'completed');
    assert.equal(rb.status, 'completed');
    assert.deepEqual((await a.session.client.history()).items.map((i) => i.text), ['question from A', 'Answer for A, streamed slowly over a few events.']);
    assert.deepEqual((await b.session.client.history()).items.map((i) => i.text), ['question from B', 'Answer for B, streamed slowly over a few events.']);
    // B creates a session: A hears of it
    const before = a.sessionsChanged;
    await b.session.client.newSession();
    await until(() => a.sessionsChanged > before, 5000, 'mino/sessionsChanged in A');
    // A's window reloads: its own conversation comes back (not the newest selection B made)
    aOpen = false;
    const errors = await a.close();
    assert.ok(!/error:/.test(errors), errors);
    const a2 = await startMino({ mino: MINO!, home, sessionId: sa.sessionId, replies: [] });
    try {
      assert.equal((await a2.session.client.state()).sessionId, sa.sessionId);
      assert.equal((await a2.session.client.history()).items[0]?.text, 'question from A');
    } finally {
      await a2.close();
    }
  } finally {
    if (b) await b.close();
    if (aOpen) await a.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
});
