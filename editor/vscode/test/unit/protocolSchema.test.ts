/**
 * Checks src/protocol.ts against the JSON Schema the Python side generates at
 * docs/protocol.schema.json (repo root): every method the extension uses exists there; what the
 * extension reads is always present; what it sends exists and covers what the schema requires;
 * every event type is known on both sides. Skipped until the schema exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CLIENT_REQUESTS, EVENT_FIELDS, Methods, REQUIRED_FIELDS } from '../../src/protocol';
import { extractEventTypes, extractSchemaMethods, methodParamsSchema } from '../../src/core/schema';

// out/test/unit -> editor/vscode -> repo root
const repoRoot = path.resolve(__dirname, '..', '..', '..', '..', '..');
const schemaPath = process.env.MINO_PROTOCOL_SCHEMA ?? path.join(repoRoot, 'docs', 'protocol.schema.json');
const haveSchema = fs.existsSync(schemaPath);
const skip = haveSchema ? false : `no protocol schema yet at ${schemaPath} (the Python side generates it)`;

function loadSchema(): unknown {
  return JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
}

test('protocol.ts methods and fields agree with docs/protocol.schema.json', { skip }, () => {
  const schema = loadSchema();
  const methods = extractSchemaMethods(schema);
  assert.ok(methods.size > 0, 'no methods found in the schema');
  const problems: string[] = [];
  const clientRequests: readonly string[] = CLIENT_REQUESTS;
  for (const method of Object.values(Methods)) {
    const m = methods.get(method);
    if (!m) {
      problems.push(`${method}: missing from the schema`);
      continue;
    }
    const want = REQUIRED_FIELDS[method];
    assert.ok(want, `REQUIRED_FIELDS lacks ${method}`);
    const isClientRequest = clientRequests.includes(method);
    const sent = isClientRequest ? want.params : (want.result ?? []);
    const read = isClientRequest ? (want.result ?? []) : want.params;
    const schemaSent = isClientRequest ? m.params : m.result;
    const schemaSentRequired = isClientRequest ? m.requiredParams : m.requiredResult;
    const schemaReadRequired = isClientRequest ? m.requiredResult : m.requiredParams;
    for (const f of sent) if (!schemaSent.has(f)) problems.push(`${method}: we send "${f}", the schema has no such field`);
    for (const f of schemaSentRequired) if (!sent.includes(f)) problems.push(`${method}: the schema requires "${f}", we do not send it`);
    for (const f of read) if (!schemaReadRequired.has(f)) problems.push(`${method}: we read "${f}", the schema does not always send it`);
  }
  for (const method of Object.keys(REQUIRED_FIELDS)) {
    assert.ok((Object.values(Methods) as string[]).includes(method), `REQUIRED_FIELDS names unknown method ${method}`);
  }
  assert.deepEqual(problems, []);
});

test('every mino/event type is known on both sides, with the fields the chat reads', { skip }, () => {
  const schema = loadSchema();
  const events = extractEventTypes(schema, methodParamsSchema(schema, 'mino/event'));
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

test('the schema reader understands the usual layouts', () => {
  const a = extractSchemaMethods({
    $defs: { State: { type: 'object', properties: { sessionId: {}, mode: {} }, required: ['sessionId'] } },
    methods: {
      'mino/state': { params: { type: 'object', properties: {} }, result: { $ref: '#/$defs/State' } },
      'mino/event': { params: { oneOf: [{ properties: { turnId: {}, type: {} }, required: ['turnId', 'type'] }, { properties: { text: {}, turnId: {} }, required: ['turnId'] }] } },
    },
  });
  assert.deepEqual([...a.get('mino/state')!.result].sort(), ['mode', 'sessionId']);
  assert.deepEqual([...a.get('mino/state')!.requiredResult], ['sessionId']);
  assert.deepEqual([...a.get('mino/event')!.params].sort(), ['text', 'turnId', 'type']);
  assert.deepEqual([...a.get('mino/event')!.requiredParams], ['turnId']);
  const b = extractSchemaMethods({
    methods: [{ name: 'mino/turn', params: [{ name: 'text', required: true, schema: { type: 'string' } }], result: { name: 'r', schema: { properties: { turnId: {}, status: {} } } } }],
  });
  assert.deepEqual([...b.get('mino/turn')!.params], ['text']);
  assert.deepEqual([...b.get('mino/turn')!.requiredParams], ['text']);
  assert.deepEqual([...b.get('mino/turn')!.result].sort(), ['status', 'turnId']);
  const ev = extractEventTypes(
    { $defs: { A: { properties: { type: { const: 'a' }, x: {} }, required: ['type', 'x'] } } },
    { oneOf: [{ $ref: '#/$defs/A' }, { properties: { type: { enum: ['b'] } } }] },
  );
  assert.deepEqual([...ev.keys()], ['a', 'b']);
  assert.deepEqual([...ev.get('a')!.required], ['type', 'x']);
});
