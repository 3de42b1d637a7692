/**
 * Host <-> webview message handling: whatever the host's transcript does, the webview's mirror
 * (snapshot + patches, as posted) ends up equal to it, also when it joins late (a hidden view
 * re-created, a window reload) and after messages travel as JSON (postMessage).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Mirror } from '../../src/core/mirror';
import { Transcript, MAX_ITEMS } from '../../src/core/transcript';
import type { Patch } from '../../src/core/messages';
import { DECISIONS, OUTCOMES, TOOL_STATUSES, TURN_STATUSES } from '../../src/protocol';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A random but well-formed run of turns: deltas, messages, calls, approvals, results, notices. */
function* script(rand: () => number, turns: number): Generator<(t: Transcript) => void> {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  let call = 0;
  for (let n = 0; n < turns; n++) {
    const turnId = `turn${n}`;
    yield (t) => t.addUser(`question ${n} <b>&</b>`);
    const steps = 1 + Math.floor(rand() * 6);
    for (let k = 0; k < steps; k++) {
      const r = rand();
      if (r < 0.45) {
        const words = 1 + Math.floor(rand() * 4);
        for (let w = 0; w < words; w++) yield (t) => t.applyEvent({ turnId, type: 'text_delta', text: `w${w} ` });
        if (rand() < 0.5) yield (t) => t.applyEvent({ turnId, type: 'assistant_message', text: 'final **text**' });
      } else if (r < 0.8) {
        const callId = `call_${++call}`;
        const fields = [{ label: 'Memory', value: `m${call}\\n` }];
        yield (t) => t.applyEvent({ turnId, type: 'tool_call', callId, tool: 'memory_save', fields, warning: 'w', decision: pick(DECISIONS) });
        if (rand() < 0.6) {
          yield (t) => t.approvalRequested(`key${call}`, { turnId, callId, tool: 'memory_save', fields, warning: 'w', question: 'Approve this operation?', workdir: '/ws' });
          const outcome = pick(OUTCOMES);
          yield (t) => t.approvalSettled(callId, outcome);
          yield (t) => t.applyEvent({ turnId, type: 'approval_resolved', callId, outcome });
        }
        yield (t) => t.applyEvent({ turnId, type: 'tool_result', callId, tool: 'memory_save', status: pick(TOOL_STATUSES), text: 'result' });
      } else if (r < 0.9) {
        yield (t) => t.applyEvent({ turnId: rand() < 0.5 ? turnId : null, type: 'notice', text: 'a notice' });
      } else {
        yield (t) => t.addCommand('/sessions', ['* abc', '  def']);
      }
    }
    yield (t) => t.applyEvent({ turnId, type: 'turn_end', status: pick(TURN_STATUSES) });
    yield (t) => t.endTurn(turnId);
  }
}

function viaJson<T>(x: T): T {
  return JSON.parse(JSON.stringify(x)) as T;
}

for (const seed of [1, 2, 3, 42, 1234, 99999]) {
  test(`mirror equals the transcript (seed ${seed})`, () => {
    const rand = rng(seed);
    const mirror = new Mirror();
    let late: Mirror | undefined;
    const t = new Transcript((patches: Patch[]) => {
      mirror.apply(viaJson(patches));
      late?.apply(viaJson(patches));
    });
    let i = 0;
    for (const op of script(rand, 12)) {
      op(t);
      if (++i === 40) {
        // a webview that appears mid-way gets a snapshot, then the same patches
        late = new Mirror();
        late.reset(viaJson(t.snapshot()));
      }
      assert.deepEqual(mirror.list(), t.snapshot());
    }
    assert.ok(late);
    assert.deepEqual(late.list(), t.snapshot());
  });
}

test('a reset (history reload) then patches', () => {
  const mirror = new Mirror();
  const t = new Transcript((p) => mirror.apply(viaJson(p)));
  t.reset(t.fromHistory([{ seq: 1, turnId: 'a', role: 'user', text: 'hi' }, { seq: 2, turnId: 'a', role: 'assistant', text: 'hello' }]));
  mirror.reset(viaJson(t.snapshot()));
  t.applyEvent({ turnId: 'b', type: 'text_delta', text: 'more' });
  assert.deepEqual(mirror.list(), t.snapshot());
  assert.equal(mirror.size, 3);
});

test('the oldest items go when the transcript is full, on both sides', () => {
  const mirror = new Mirror();
  const t = new Transcript((p) => mirror.apply(p));
  for (let n = 0; n < MAX_ITEMS + 5; n++) t.addNotice(`n${n}`);
  assert.equal(t.length, MAX_ITEMS);
  assert.deepEqual(mirror.list(), t.snapshot());
  assert.equal((mirror.list()[0] as { text: string }).text, 'n5');
});

test('patches for unknown items are ignored', () => {
  const mirror = new Mirror();
  assert.deepEqual(mirror.apply([{ op: 'delta', id: 'nope', text: 'x' }]), []);
  assert.equal(mirror.size, 0);
});
