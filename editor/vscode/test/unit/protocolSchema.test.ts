/**
 * Checks src/protocol.ts against the JSON Schema the Python side generates at
 * docs/protocol.schema.json (repo root): every method the extension uses exists there, sent by the
 * side and of the kind protocol.ts says; what the extension reads is always present; what it sends
 * exists and covers what the schema requires; every event type is known on both sides; the error
 * codes and the protocol version are the schema's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCodes, EVENT_FIELDS, Methods, PROTOCOL_VERSION, REQUIRED_FIELDS } from '../../src/protocol';
import { eventTypes, fieldsOf, schemaMethods } from './schema';

// out/test/unit -> editor/vscode -> repo root
const repoRoot = path.resolve(__dirname, '..', '..', '..', '..', '..');
const schemaPath = process.env.MINO_PROTOCOL_SCHEMA ?? path.join(repoRoot, 'docs', 'protocol.schema.json');
const schema: unknown = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));

test('protocol.ts methods and fields agree with docs/protocol.schema.json', () => {
  const methods = schemaMethods(schema);
  assert.ok(methods.size > 0, 'no methods found in the schema');
  const problems: string[] = [];
  for (const method of Object.values(Methods)) {
    const m = methods.get(method);
    if (!m) {
      problems.push(`${method}: missing from the schema`);
      continue;
    }
    const want = REQUIRED_FIELDS[method];
    assert.ok(want, `REQUIRED_FIELDS lacks ${method}`);
    // REQUIRED_FIELDS gives a result for requests only
    if ((want.result !== undefined) !== (m.kind === 'request')) problems.push(`${method}: a ${m.kind} in the schema`);
    const weSend = m.sender === 'client';
    const sent = weSend ? want.params : (want.result ?? []);
    const read = weSend ? (want.result ?? []) : want.params;
    const schemaSent = weSend ? m.params : m.result;
    const schemaRead = weSend ? m.result : m.params;
    for (const f of sent) if (!schemaSent.all.has(f)) problems.push(`${method}: we send "${f}", the schema has no such field`);
    for (const f of schemaSent.required) if (!sent.includes(f)) problems.push(`${method}: the schema requires "${f}", we do not send it`);
    for (const f of read) if (!schemaRead.required.has(f)) problems.push(`${method}: we read "${f}", the schema does not always send it`);
  }
  for (const method of Object.keys(REQUIRED_FIELDS)) {
    assert.ok((Object.values(Methods) as string[]).includes(method), `REQUIRED_FIELDS names unknown method ${method}`);
  }
  assert.deepEqual(problems, []);
});

test('every mino/event type is known on both sides, with the fields the chat reads', () => {
  const events = eventTypes(schema);
  assert.ok(events.size > 0, 'no event types found in the schema');
  const problems: string[] = [];
  for (const [type, fields] of Object.entries(EVENT_FIELDS)) {
    const e = events.get(type);
    if (!e) {
      problems.push(`event ${type}: missing from the schema`);
      continue;
    }
    for (const f of fields) if (!e.required.has(f)) problems.push(`event ${type}: we read "${f}", the schema does not always send it`);
  }
  for (const type of events.keys()) if (!(type in EVENT_FIELDS)) problems.push(`event ${type}: in the schema, unknown to protocol.ts`);
  assert.deepEqual(problems, []);
});

test('error codes and protocol version are the schema\'s', () => {
  const s = schema as { 'x-protocolVersion': unknown; 'x-errorCodes': Record<string, string> };
  assert.equal(PROTOCOL_VERSION, s['x-protocolVersion']);
  // "invalid params" -> invalidParams, "internal error" -> internal
  const camel = (name: string) => name.replace(/ error$/, '').replace(/ (\w)/g, (_, c: string) => c.toUpperCase());
  for (const [name, code] of Object.entries(ErrorCodes)) {
    const theirs = s['x-errorCodes'][String(code)];
    assert.ok(theirs !== undefined, `ErrorCodes.${name} = ${code} is not in the schema`);
    assert.equal(camel(theirs), name, `error ${code}`);
  }
});

test('the schema reader follows $refs and takes a oneOf\'s common required fields', () => {
  const root = {
    'x-methods': {
      'mino/state': { sender: 'client', kind: 'request', params: { $ref: '#/$defs/mino~1state.params' }, result: { $ref: '#/$defs/mino~1state.result' } },
      'mino/event': { sender: 'server', kind: 'notification', params: { $ref: '#/$defs/Event' } },
    },
    $defs: {
      'mino/state.params': { type: 'object', properties: {} },
      'mino/state.result': { $ref: '#/$defs/State' },
      State: { type: 'object', properties: { sessionId: {}, mode: {} }, required: ['sessionId'] },
      Event: { oneOf: [{ $ref: '#/$defs/A' }, { $ref: '#/$defs/B' }] },
      A: { properties: { type: { const: 'a' }, turnId: {}, x: {} }, required: ['type', 'turnId', 'x'] },
      B: { properties: { type: { const: 'b' }, turnId: {} }, required: ['type'] },
    },
  };
  const methods = schemaMethods(root);
  const state = methods.get('mino/state')!;
  assert.deepEqual([state.sender, state.kind], ['client', 'request']);
  assert.deepEqual([...state.params.all], []);
  assert.deepEqual([...state.result.all].sort(), ['mode', 'sessionId']);
  assert.deepEqual([...state.result.required], ['sessionId']);
  const event = methods.get('mino/event')!;
  assert.deepEqual([...event.params.all].sort(), ['turnId', 'type', 'x']);
  assert.deepEqual([...event.params.required], ['type']);
  assert.deepEqual([...event.result.all], []);
  const ev = eventTypes(root);
  assert.deepEqual([...ev.keys()], ['a', 'b']);
  assert.deepEqual([...ev.get('a')!.required], ['type', 'turnId', 'x']);
  assert.deepEqual([...fieldsOf(root, { $ref: '#/$defs/B' }).all].sort(), ['turnId', 'type']);
});
