import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWebviewMessage, WEBVIEW_MESSAGE_TYPES, type WebviewToHost } from '../../src/core/messages';
import { PanelRouter, type PanelRoutes } from '../../src/core/panelRoutes';

/** One valid message of every type the webview sends. */
const SAMPLES: WebviewToHost[] = [
  { type: 'ready' },
  { type: 'submit', text: 'hi' },
  { type: 'stop' },
  { type: 'approval', key: 'k', approved: true },
  { type: 'removeContext', id: 'c1' },
  { type: 'files', requestId: 1, prefix: 'sr' },
  { type: 'attachFile', path: 'a b.py' },
  { type: 'attachImage', name: 'a.png', mimeType: 'image/png', data: 'AAAA' },
  { type: 'openDiff', turnId: 't', callId: 'c' },
  { type: 'rewind', turnId: 'ab12' },
  { type: 'command', command: 'mino.showLog' },
  { type: 'loadEarlier' },
];

/** Routes answering every message type, recording what each got. */
function recording(seen: string[]): Record<string, PanelRoutes> {
  const all: PanelRoutes = {};
  for (const t of WEBVIEW_MESSAGE_TYPES) (all as Record<string, (m: WebviewToHost) => void>)[t] = (m) => seen.push(`${t}:${JSON.stringify(m)}`);
  const { rewind, approval, ...rest } = all;
  return { rest, rewind: { rewind }, approvals: { approval } };
}

test('the list of message types is every type the parser accepts', () => {
  assert.deepEqual([...WEBVIEW_MESSAGE_TYPES].sort(), SAMPLES.map((m) => m.type).sort());
  for (const m of SAMPLES) assert.deepEqual(parseWebviewMessage(m), m, m.type);
});

test('each message goes to the one feature that answers it, unchanged', async () => {
  const seen: string[] = [];
  const router = new PanelRouter(recording(seen));
  assert.equal(router.owner('rewind'), 'rewind');
  assert.equal(router.owner('approval'), 'approvals');
  assert.equal(router.owner('submit'), 'rest');
  for (const m of SAMPLES) await router.dispatch(m);
  assert.deepEqual(
    seen,
    SAMPLES.map((m) => `${m.type}:${JSON.stringify(m)}`),
  );
});

test('a handler that is async is awaited, and its failure reaches the caller', async () => {
  const features = recording([]);
  let done = false;
  features.rewind = {
    rewind: async () => {
      await new Promise((r) => setTimeout(r, 1));
      done = true;
    },
  };
  const router = new PanelRouter(features);
  await router.dispatch({ type: 'rewind', turnId: 'ab' });
  assert.equal(done, true);
  features.rewind = { rewind: () => Promise.reject(new Error('boom')) };
  await assert.rejects(new PanelRouter(features).dispatch({ type: 'rewind', turnId: 'ab' }), /boom/u);
});

test('a message two features answer, or none, is refused at start, named', () => {
  const twice = recording([]);
  twice.other = { rewind: () => undefined };
  assert.throws(() => new PanelRouter(twice), /panel message "rewind" is answered by both rewind and other/u);
  const missing = recording([]);
  delete missing.approvals;
  assert.throws(() => new PanelRouter(missing), /no feature answers the panel message\(s\) approval$/u);
});
