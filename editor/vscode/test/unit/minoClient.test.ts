import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import {
  CancellationTokenSource,
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  type CancellationToken,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import { MinoClient, errorMessage, isRpcError, type RpcEndpoint } from '../../src/client/minoClient';
import type { Event, State } from '../../src/protocol';

function pair(): { client: MinoClient; clientConn: MessageConnection; server: MessageConnection; close(): void } {
  const c2s = new PassThrough();
  const s2c = new PassThrough();
  const clientConn = createMessageConnection(new StreamMessageReader(s2c), new StreamMessageWriter(c2s));
  const server = createMessageConnection(new StreamMessageReader(c2s), new StreamMessageWriter(s2c));
  const client = new MinoClient(clientConn as unknown as RpcEndpoint);
  return {
    client,
    clientConn,
    server,
    close() {
      client.dispose();
      clientConn.dispose();
      server.dispose();
    },
  };
}

const approveParams = {
  turnId: 't',
  callId: 'c',
  tool: 'memory_save',
  fields: [{ label: 'Memory', value: '"m"' }],
  warning: null,
  question: 'Approve this operation?',
  workdir: '/w',
};

test('requests use the protocol method names and params', async () => {
  const { client, clientConn, server, close } = pair();
  const seen: [string, unknown][] = [];
  server.onRequest((method: string, params: unknown) => {
    seen.push([method, params]);
    if (method === 'mino/sessions/clear') return { cleared: false, state: {} };
    return {};
  });
  server.listen();
  clientConn.listen();
  await client.state();
  await client.command('/sessions');
  await client.listSessions();
  await client.newSession();
  await client.resumeSession('a'.repeat(32));
  await client.clearSession('a'.repeat(32), 'yes');
  await client.setMode('accept-edits');
  await client.compact();
  await client.listMemories();
  await client.history();
  await client.history({ before: 17, limit: 200 });
  assert.deepEqual(seen, [
    ['mino/state', {}],
    ['mino/command', { line: '/sessions' }],
    ['mino/sessions/list', {}],
    ['mino/sessions/new', {}],
    ['mino/sessions/resume', { id: 'a'.repeat(32) }],
    ['mino/sessions/clear', { id: 'a'.repeat(32), typedId: 'yes' }],
    ['mino/mode', { mode: 'accept-edits' }],
    ['mino/compact', {}],
    ['mino/memory/list', {}],
    ['mino/history', {}],
    ['mino/history', { before: 17, limit: 200 }],
  ]);
  close();
});

test('protocol 2 on the wire: context only when there is some (a version-1 turn is unchanged), files, sessionsChanged', async () => {
  const { client, clientConn, server, close } = pair();
  const seen: [string, unknown][] = [];
  server.onRequest((method: string, params: unknown) => {
    seen.push([method, params]);
    if (method === 'mino/files') return { paths: ['src/app.py'] };
    return { turnId: 't', status: 'completed', text: '' };
  });
  let changed = 0;
  client.onSessionsChanged(() => changed++);
  server.listen();
  clientConn.listen();
  await client.turn('plain');
  await client.turn('no chips', undefined, []);
  await client.turn('with chips', undefined, [{ path: 'src/app.py', startLine: 2, endLine: 3, text: 'x' }, { path: 'README.md' }]);
  assert.deepEqual(await client.files('sr'), { paths: ['src/app.py'] });
  assert.deepEqual(seen, [
    ['mino/turn', { text: 'plain' }],
    ['mino/turn', { text: 'no chips' }],
    ['mino/turn', { text: 'with chips', context: [{ path: 'src/app.py', startLine: 2, endLine: 3, text: 'x' }, { path: 'README.md' }] }],
    ['mino/files', { prefix: 'sr' }],
  ]);
  await server.sendNotification('mino/sessionsChanged', {});
  await server.sendNotification('mino/sessionsChanged');
  for (let i = 0; i < 50 && changed < 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(changed, 2);
  close();
});

test('approve: only an explicit true approves', async () => {
  const { client, clientConn, server, close } = pair();
  const answers: unknown[] = [true, false, 'yes', 1, undefined];
  let i = 0;
  client.onApprove(async () => answers[i++] as boolean);
  server.listen();
  clientConn.listen();
  const results = [];
  for (let k = 0; k < answers.length; k++) results.push(await server.sendRequest('mino/approve', approveParams));
  assert.deepEqual(results, [{ approved: true }, { approved: false }, { approved: false }, { approved: false }, { approved: false }]);
  close();
});

test('approve: a handler that throws, or malformed params, deny without asking', async () => {
  const { client, clientConn, server, close } = pair();
  let asked = 0;
  client.onApprove(async (p) => {
    asked++;
    if (p.callId === 'boom') throw new Error('x');
    return true;
  });
  server.listen();
  clientConn.listen();
  assert.deepEqual(await server.sendRequest('mino/approve', { ...approveParams, callId: 'boom' }), { approved: false });
  assert.equal(asked, 1);
  for (const bad of [{}, { ...approveParams, fields: 'x' }, { ...approveParams, fields: [{ label: 1, value: 'v' }] }, { ...approveParams, tool: 3 }]) {
    assert.deepEqual(await server.sendRequest('mino/approve', bad), { approved: false });
  }
  assert.equal(asked, 1);
  close();
});

test('approve: a request the server cancels is denied even if the person approves later', async () => {
  const { client, clientConn, server, close } = pair();
  let release: (v: boolean) => void = () => {};
  client.onApprove(() => new Promise<boolean>((r) => (release = r)));
  server.listen();
  clientConn.listen();
  const cts = new CancellationTokenSource();
  const pending = server.sendRequest('mino/approve', approveParams, cts.token);
  await new Promise((r) => setTimeout(r, 30));
  cts.cancel();
  await new Promise((r) => setTimeout(r, 30));
  release(true);
  const r = await pending.catch((e: unknown) => e);
  assert.ok(isRpcError(r) || (r as { approved: boolean }).approved === false, JSON.stringify(r));
  close();
});

test('confirm: yes only on explicit true', async () => {
  const { client, clientConn, server, close } = pair();
  const answers = [true, false];
  client.onConfirm(async () => answers.shift()!);
  server.listen();
  clientConn.listen();
  const p = { kind: 'recovery', sessionId: 'a'.repeat(32), message: 'The command may or may not have run.' };
  assert.deepEqual(await server.sendRequest('mino/confirm', p), { confirmed: true });
  assert.deepEqual(await server.sendRequest('mino/confirm', p), { confirmed: false });
  close();
});

test('events and state notifications reach their handlers; junk is dropped', async () => {
  const { client, clientConn, server, close } = pair();
  const events: Event[] = [];
  const states: State[] = [];
  client.onEvent((e) => events.push(e));
  client.onStateChanged((s) => states.push(s));
  server.listen();
  clientConn.listen();
  await server.sendNotification('mino/event', { turnId: 't', type: 'text_delta', text: 'hi' });
  await server.sendNotification('mino/event', { type: 'text_delta' });
  await server.sendNotification('mino/event', 'junk');
  await server.sendNotification('mino/stateChanged', { sessionId: null, mode: 'manual' });
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(events, [{ turnId: 't', type: 'text_delta', text: 'hi' }]);
  assert.equal(states.length, 1);
  close();
});

test('cancelling a turn sends $/cancelRequest', async () => {
  const { client, clientConn, server, close } = pair();
  let cancelled = false;
  server.onRequest('mino/turn', async (_p: unknown, token: CancellationToken) => {
    await new Promise<void>((r) => token.onCancellationRequested(() => r()));
    cancelled = true;
    return { turnId: 't', status: 'interrupted', text: '' };
  });
  server.listen();
  clientConn.listen();
  const cts = new CancellationTokenSource();
  const turn = client.turn('long task', cts.token);
  setTimeout(() => cts.cancel(), 30);
  const r = await turn.catch((e: unknown) => e);
  assert.equal(cancelled, true);
  // either the server's answer or vscode-jsonrpc's RequestCancelled error
  assert.ok((r as { status?: string }).status === 'interrupted' || isRpcError(r), JSON.stringify(r));
  close();
});

test('busy errors carry their code and message', async () => {
  const { client, clientConn, server, close } = pair();
  server.onRequest('mino/turn', () => new ResponseError(-32001, 'busy'));
  server.listen();
  clientConn.listen();
  const e = await client.turn('x').catch((x: unknown) => x);
  assert.ok(isRpcError(e));
  assert.equal((e as { code: number }).code, -32001);
  assert.equal(errorMessage(e), 'busy');
  close();
});

test('approve: always is sent only where the request offered it', async () => {
  const { client, clientConn, server, close } = pair();
  client.onApprove(async () => 'always');
  server.listen();
  clientConn.listen();
  assert.deepEqual(await server.sendRequest('mino/approve', approveParams), { approved: true });
  const offered = { ...approveParams, always: { rules: ['bash ls'], project: '/ws' } };
  assert.deepEqual(await server.sendRequest('mino/approve', offered), { approved: true, always: true });
  close();
});
