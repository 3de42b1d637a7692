/**
 * The extension's JSON-RPC client (src/client, no vscode) against the REAL `mino --stdio` and the
 * scripted model server. Skipped only when no mino executable can be found.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CancellationTokenSource } from 'vscode-jsonrpc/node';
import { MINO, T, startMino, until, withMino, type Reply } from './harness';
import { isRpcError } from '../../src/client/minoClient';
import { Transcript } from '../../src/core/transcript';
import { usageText } from '../../src/core/format';
import { ErrorCodes, PROTOCOL_VERSION, SESSION_ID_RE, type Event, type State } from '../../src/protocol';

const memorySave = (name: string, summary = 'The user installs dependencies with pnpm.'): Reply => ({
  calls: [{ name: 'memory_save', arguments: { name, type: 'project', summary, mode: 'create' } }],
});

function types(events: Event[]): string[] {
  return events.map((e) => e.type);
}

test('initialize, then State with a fresh session', T, async () => {
  await withMino({ replies: [] }, async (m) => {
    const init = m.session.initializeResult;
    assert.equal(init.serverInfo?.name, 'mino');
    assert.equal(init.capabilities.experimental?.mino?.protocolVersion, PROTOCOL_VERSION);
    const s = await m.session.client.state();
    assert.match(s.sessionId ?? '', SESSION_ID_RE);
    assert.equal(s.restoreProblem, null);
    assert.equal(s.mode, 'manual');
    assert.equal(fs.realpathSync(s.workdir), fs.realpathSync(m.workdir));
    assert.equal(s.busy, false);
    assert.equal(typeof s.memory.dir, 'string');
    await until(() => m.states.length > 0, 5000, 'the first mino/stateChanged');
  });
});

test('a streamed turn: text deltas, the whole message, turn_end, the result', T, async () => {
  const answer = 'Hello from the scripted model. It streams its **answer** in several small pieces, one after another.';
  await withMino({ replies: [{ text: answer }] }, async (m) => {
    const r = await m.session.client.turn('Say hello.');
    assert.equal(r.status, 'completed');
    assert.equal(r.text, answer);
    assert.match(r.turnId, /.+/);
    const mine = m.events.filter((e) => e.turnId === r.turnId);
    const deltas = mine.filter((e) => e.type === 'text_delta');
    assert.ok(deltas.length >= 2, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.map((e) => (e as { text: string }).text).join(''), answer);
    assert.deepEqual(types(mine).filter((t) => t !== 'text_delta'), ['usage', 'assistant_message', 'turn_end']);
    // how full the context is: the event as the response reported it, and the same in State.usage
    const usage = mine.find((e) => e.type === 'usage');
    assert.ok(usage && usage.type === 'usage' && usage.inputTokens > 0 && usage.contextWindow > 0, JSON.stringify(usage));
    assert.deepEqual((await m.session.client.state()).usage, { inputTokens: usage.inputTokens, contextWindow: usage.contextWindow });
    assert.match(usageText((await m.session.client.state()).usage), /^(<1|\d+)%$/);
    // the panel's model of it
    const t = new Transcript();
    for (const e of mine) t.applyEvent(e);
    const items = t.snapshot();
    assert.equal(items.length, 1);
    assert.ok(items[0].kind === 'assistant' && items[0].text === answer && !items[0].streaming);
    // history has the exchange
    const h = await m.session.client.history();
    assert.deepEqual(
      h.items.map((i) => [i.role, i.text]),
      [
        ['user', 'Say hello.'],
        ['assistant', answer],
      ],
    );
    // busy went true, then false
    await until(() => m.states.some((s) => s.busy) && m.states.at(-1)?.busy === false, 5000, 'busy true then false');
  });
});

test('approve: memory_save asks with every field, the file is written', T, async () => {
  await withMino({ replies: [memorySave('uses-pnpm'), { text: 'Saved it.' }] }, async (m) => {
    m.approve = () => Promise.resolve(true);
    const r = await m.session.client.turn('Remember that I use pnpm.');
    assert.equal(r.status, 'completed');
    assert.equal(m.approvals.length, 1);
    const a = m.approvals[0];
    assert.equal(a.tool, 'memory_save');
    assert.equal(a.question, 'Approve this operation?'); // chapter 13's screen
    assert.equal(fs.realpathSync(a.workdir), fs.realpathSync(m.workdir));
    const labels = a.fields.map((f) => f.label);
    // chapter 13's screen: Memory, Directory, Mode, Type, Summary, in every front end
    assert.deepEqual(labels, ['Memory', 'Directory', 'Mode', 'Type', 'Summary']);
    assert.equal(a.fields.find((f) => f.label === 'Memory')?.value, 'uses-pnpm');
    assert.ok(a.warning && a.warning.length > 0, 'memory_save shows its warning');
    const file = path.join(m.home, 'memory', 'uses-pnpm.md');
    assert.ok(fs.existsSync(file), 'the memory file exists');
    assert.match(fs.readFileSync(file, 'utf8'), /The user installs dependencies with pnpm\./);
    const call = m.events.find((e) => e.type === 'tool_call');
    assert.ok(call && call.type === 'tool_call' && call.decision === 'ask' && call.callId === a.callId);
    const resolved = m.events.find((e) => e.type === 'approval_resolved');
    assert.ok(resolved && resolved.type === 'approval_resolved' && resolved.outcome === 'approved' && resolved.callId === a.callId);
    const result = m.events.find((e) => e.type === 'tool_result');
    assert.ok(result && result.type === 'tool_result' && result.status === 'completed', JSON.stringify(result));
    const list = await m.session.client.listMemories();
    assert.deepEqual(
      list.memories.map((x) => x.name),
      ['uses-pnpm'],
    );
    assert.equal(fs.realpathSync(list.memories[0].path), fs.realpathSync(file));
  });
});

test('deny: nothing is written', T, async () => {
  await withMino({ replies: [memorySave('denied-one'), { text: 'OK, not saved.' }] }, async (m) => {
    m.approve = () => Promise.resolve(false);
    const r = await m.session.client.turn('Remember something.');
    assert.equal(r.status, 'completed');
    assert.equal(m.approvals.length, 1);
    assert.ok(!fs.existsSync(path.join(m.home, 'memory', 'denied-one.md')));
    const result = m.events.find((e) => e.type === 'tool_result');
    assert.ok(result && result.type === 'tool_result' && result.status === 'denied', JSON.stringify(result));
    const resolved = m.events.find((e) => e.type === 'approval_resolved');
    assert.ok(resolved && resolved.type === 'approval_resolved' && resolved.outcome === 'denied');
  });
});

test('cancel while an approval is pending: the approval is cancelled, nothing written, turn interrupted', T, async () => {
  await withMino({ replies: [memorySave('never')] }, async (m) => {
    let approvalCancelled = false;
    m.approve = (_p, token) =>
      new Promise<boolean>((resolve) => {
        token.onCancellationRequested(() => {
          approvalCancelled = true;
          resolve(true); // too late: a cancelled request must not count as approved
        });
      });
    const cts = new CancellationTokenSource();
    const turn = m.session.client.turn('Remember never.', cts.token);
    await until(() => m.approvals.length === 1, 15000, 'the approval request');
    cts.cancel();
    const r = await turn;
    assert.equal(r.status, 'interrupted');
    const resolved = m.events.find((e) => e.type === 'approval_resolved');
    assert.ok(resolved && resolved.type === 'approval_resolved' && resolved.outcome === 'cancelled', JSON.stringify(m.events));
    await until(() => approvalCancelled, 5000, "the server's $/cancelRequest for its mino/approve");
    assert.ok(!fs.existsSync(path.join(m.home, 'memory', 'never.md')));
    const end = m.events.find((e) => e.type === 'turn_end');
    assert.ok(end && end.type === 'turn_end' && end.status === 'interrupted');
  });
});

test('cancel while text streams: interrupted, and the next turn works', T, async () => {
  const slow = 'This answer is slow. '.repeat(30);
  await withMino({ replies: [{ text: slow, delay: 0.05 }, { text: 'Second answer.' }] }, async (m) => {
    const cts = new CancellationTokenSource();
    const turn = m.session.client.turn('Talk slowly.', cts.token);
    await until(() => m.events.some((e) => e.type === 'text_delta'), 15000, 'the first delta');
    cts.cancel();
    const r = await turn;
    assert.equal(r.status, 'interrupted');
    // one turn at a time, and the next one is fine
    const r2 = await m.session.client.turn('Again.');
    assert.equal(r2.status, 'completed');
    assert.equal(r2.text, 'Second answer.');
  });
});

test('busy: a second turn during a turn is refused with -32001', T, async () => {
  await withMino({ replies: [{ text: 'slow '.repeat(40), delay: 0.05 }] }, async (m) => {
    const first = m.session.client.turn('One.');
    await until(() => m.events.some((e) => e.type === 'text_delta'), 15000, 'the first delta');
    const e = await m.session.client.turn('Two.').catch((x: unknown) => x);
    assert.ok(isRpcError(e) && e.code === ErrorCodes.busy, JSON.stringify(e));
    const e2 = await m.session.client.newSession().catch((x: unknown) => x);
    assert.ok(isRpcError(e2) && e2.code === ErrorCodes.busy, JSON.stringify(e2));
    assert.equal((await first).status, 'completed');
  });
});

test('sessions: new, list, resume, clear with a wrong then the right ID', T, async () => {
  await withMino({ replies: [{ text: 'pine' }] }, async (m) => {
    const c = m.session.client;
    const a = (await c.state()).sessionId!;
    await c.turn('Remember pine.');
    const s2 = await c.newSession();
    const b = s2.sessionId!;
    assert.match(b, SESSION_ID_RE);
    assert.notEqual(a, b);
    assert.deepEqual((await c.history()).items, []);
    const list = await c.listSessions();
    // newest first, by last update with one-second resolution: both may share a second
    assert.deepEqual(list.sessions.map((s) => s.id).sort(), [a, b].sort());
    assert.deepEqual(
      list.sessions.filter((s) => s.active).map((s) => s.id),
      [b],
    );
    const times = list.sessions.map((s) => s.updatedAt);
    assert.deepEqual([...times].sort().reverse(), times);
    for (const s of list.sessions) assert.match(s.updatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const back: State = await c.resumeSession(a);
    assert.equal(back.sessionId, a);
    assert.equal((await c.history()).items.length, 2);
    // a partial ID is refused with a message a person can act on
    const bad = await c.resumeSession(a.slice(0, 8)).catch((x: unknown) => x);
    assert.ok(isRpcError(bad) && bad.code === ErrorCodes.invalidParams, JSON.stringify(bad));
    // clear: a wrong ID clears nothing
    for (const typed of ['yes', '', a.toUpperCase(), b]) {
      const r = await c.clearSession(a, typed);
      assert.equal(r.cleared, false, `typed ${typed}`);
      assert.equal((await c.history()).items.length, 2);
    }
    // the right one (surrounding blanks ignored) clears, and the ID stays
    const ok = await c.clearSession(a, `  ${a} `);
    assert.equal(ok.cleared, true);
    assert.equal(ok.state.sessionId, a);
    assert.deepEqual((await c.history()).items, []);
    // the other session is untouched
    await c.resumeSession(b);
    assert.equal((await c.state()).sessionId, b);
  });
});

test('slash commands go to mino/command and return the CLI lines', T, async () => {
  await withMino({ replies: [] }, async (m) => {
    const c = m.session.client;
    const sessions = await c.command('/sessions');
    assert.ok(sessions.output.length >= 1, JSON.stringify(sessions));
    assert.ok(sessions.output.some((l) => l.includes(sessions.state.sessionId!)), JSON.stringify(sessions.output));
    const help = await c.command('/help');
    assert.ok(help.output.length >= 1);
    const mode = await c.command('/mode accept-edits');
    assert.equal(mode.state.mode, 'accept-edits');
    const unknown = await c.command('/nonsense').catch((x: unknown) => x);
    assert.ok(isRpcError(unknown) || (unknown as { output: string[] }).output.length >= 1);
    // a turn never takes a slash command
    const e = await c.turn('/help').catch((x: unknown) => x);
    assert.ok(isRpcError(e) && e.code === ErrorCodes.invalidParams, JSON.stringify(e));
  });
});

test('permission mode, compact, state notifications', T, async () => {
  await withMino({ replies: [] }, async (m) => {
    const c = m.session.client;
    const s = await c.setMode('bypass');
    assert.equal(s.mode, 'bypass');
    await until(() => m.states.some((x) => x.mode === 'bypass'), 5000, 'stateChanged with the new mode');
    const back = await c.setMode('manual');
    assert.equal(back.mode, 'manual');
    const compact = await c.compact();
    assert.equal(compact.compacted, false);
    assert.equal(compact.message, 'Nothing to compact.');
  });
});

test('a second Mino on the same store is not refused: it starts its own session (many windows on one home)', T, async () => {
  await withMino({ replies: [] }, async (first) => {
    const a = (await first.session.client.state()).sessionId;
    const second = await startMino({ mino: MINO!, replies: [], home: first.home });
    try {
      const s = await second.session.client.state();
      assert.match(s.sessionId ?? '', SESSION_ID_RE);
      assert.notEqual(s.sessionId, a);
      assert.equal(s.restoreProblem, null);
      assert.equal((await first.session.client.state()).sessionId, a, 'the first window keeps its session');
    } finally {
      await second.close();
    }
  });
});

test('restore problem: two sessions, none selected; turns refused until a resume fixes it', T, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-it-home-'));
  const home = path.join(root, 'home');
  const a = '0123456789abcdef0123456789abcdef';
  const b = 'fedcba9876543210fedcba9876543210';
  fs.mkdirSync(path.join(home, 'sessions'), { recursive: true, mode: 0o700 });
  for (const id of [a, b]) fs.writeFileSync(path.join(home, 'sessions', `${id}.jsonl`), '', { mode: 0o600 });
  try {
    await withMino(
      { replies: [], home },
      async (m) => {
        const c = m.session.client;
        const s = await c.state();
        assert.equal(s.sessionId, null);
        assert.match(s.restoreProblem ?? '', /^Cannot restore the active session: /);
        const r = await c.turn('Hello?');
        assert.equal(r.turnId, '');
        assert.equal(r.status, 'failed');
        assert.ok(r.error && r.error.length > 0);
        const fixed = await c.resumeSession(b);
        assert.equal(fixed.sessionId, b);
        assert.equal(fixed.restoreProblem, null);
      },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('recovery: a call without a result asks mino/confirm at start-up; yes restores the session', T, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-it-home-'));
  const home = path.join(root, 'home');
  try {
    // 1) a turn stops dead while its approval is pending: the log has a call without a result
    const first = await startMino({ mino: MINO!, replies: [memorySave('crashed')], home });
    first.approve = () => new Promise<boolean>(() => {});
    void first.session.client.turn('Remember crashed.').catch(() => undefined);
    await until(() => first.approvals.length === 1, 15000, 'the approval');
    const sid = (await first.session.client.state()).sessionId;
    first.session.process.kill('SIGKILL');
    await first.close().catch(() => '');
    // 2) the next start asks before the session becomes active
    const asked: string[] = [];
    const confirm = (message: string) => {
      asked.push(message);
      return true;
    };
    await withMino(
      { replies: [], home, confirm },
      async (m) => {
        const s = await m.session.client.state();
        assert.equal(asked.length, 1, 'mino/confirm was asked once');
        assert.equal(s.sessionId, sid);
        assert.equal(s.restoreProblem, null);
        assert.ok(!fs.existsSync(path.join(home, 'memory', 'crashed.md')), 'never re-executed');
        const tool = (await m.session.client.history()).items.find((i) => i.role === 'tool');
        assert.equal(tool?.status, 'unknown');
      },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('history in pages: the latest page first, earlier pages to the first message, a larger limit capped', T, async () => {
  // A long session written as Mino writes it: 1,200 turns (user, tool call and result, answer, turn end).
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mino-pages-'));
  const sid = 'c'.repeat(32);
  const lines: string[] = [];
  const at = '2026-10-21T10:00:00.000Z';
  const add = (r: Record<string, unknown>) => lines.push(JSON.stringify({ seq: lines.length + 1, ...r, at }));
  for (let n = 0; n < 1200; n++) {
    const turn_id = n.toString(16).padStart(16, '0');
    add({ type: 'user_message', turn_id, text: `question ${n}` });
    if (n % 4 === 0) {
      add({ type: 'tool_call', turn_id, call_id: `call_${n}`, name: 'read_file', arguments: '{}' });
      add({ type: 'tool_result', turn_id, call_id: `call_${n}`, status: 'completed', output: `file ${n}` });
    }
    add({ type: 'assistant_message', turn_id, text: `answer ${n}` });
    add({ type: 'turn_end', turn_id, status: 'completed' });
  }
  fs.mkdirSync(path.join(home, 'sessions'), { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(home, 'sessions', `${sid}.jsonl`), lines.join('\n') + '\n', { mode: 0o600 });
  fs.writeFileSync(path.join(home, 'sessions', 'active-session.json'), JSON.stringify({ session_id: sid }));
  try {
    await withMino(
      { replies: [], home },
      async (m) => {
        const c = m.session.client;
        assert.equal((await c.state()).sessionId, sid);
        const latest = await c.history(); // what a version-1 client asks: now the latest page
        assert.equal(latest.items.length, 200);
        assert.equal(latest.more, true);
        assert.equal(latest.items[199].text, 'answer 1199');
        const t = new Transcript();
        t.loadHistory(latest);
        let pages = 1;
        while (t.earlier().more) {
          assert.ok(t.prependHistory(await c.history({ before: t.earlier().before!, limit: 200 }), t.generation));
          pages++;
        }
        const shown = t.snapshot();
        assert.equal(pages, 14);
        assert.equal(shown.length, 1200 * 2 + 300);
        assert.deepEqual(shown.slice(0, 3).map((i) => (i.kind === 'tool' ? i.result : 'text' in i ? i.text : '')), ['question 0', 'file 0', 'answer 0']);
        const tool = shown.find((i) => i.kind === 'tool');
        assert.ok(tool && tool.kind === 'tool' && tool.tool === 'read_file' && tool.status === 'completed');
        assert.equal((await c.history({ limit: 5000 })).items.length, 1000);
        assert.deepEqual(await c.history({ before: 1 }), { items: [], more: false });
      },
    );
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
