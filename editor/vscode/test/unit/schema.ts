/**
 * Reads docs/protocol.schema.json, which the Python side generates from mino_server/server/protocol.py,
 * for the test that checks src/protocol.ts against it. Its layout: `x-methods` gives each method's
 * sender, kind and `$ref`s to its params and result in `$defs`; an object's fields are its
 * `properties`, the always-present ones its `required`; the events of `mino/event` are a `oneOf`
 * whose branches name their `type` with `const`.
 */

type Json = unknown;

export interface Fields {
  /** every field the object may have */
  all: Set<string>;
  /** the ones that are always present */
  required: Set<string>;
}

export interface SchemaMethod {
  sender: string;
  kind: string;
  params: Fields;
  result: Fields;
}

function isObj(x: Json): x is Record<string, Json> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** The schema a (chain of) `$ref` points to, e.g. `#/$defs/mino~1state.result`. */
function deref(root: Json, schema: Json): Json {
  while (isObj(schema) && typeof schema.$ref === 'string') {
    let cur: Json = root;
    for (const part of schema.$ref.replace(/^#\//, '').split('/')) {
      cur = isObj(cur) ? cur[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    schema = cur;
  }
  return schema;
}

/** The fields of an object schema; of a `oneOf`, all fields of any branch and those every branch requires. */
export function fieldsOf(root: Json, schema: Json): Fields {
  const s = deref(root, schema);
  if (isObj(s) && Array.isArray(s.oneOf)) {
    const branches = s.oneOf.map((b) => fieldsOf(root, b));
    return {
      all: new Set(branches.flatMap((b) => [...b.all])),
      required: new Set([...(branches[0]?.required ?? [])].filter((f) => branches.every((b) => b.required.has(f)))),
    };
  }
  const strings = (x: Json): string[] => (Array.isArray(x) ? x.filter((k): k is string => typeof k === 'string') : []);
  return {
    all: new Set(isObj(s) && isObj(s.properties) ? Object.keys(s.properties) : []),
    required: new Set(isObj(s) ? strings(s.required) : []),
  };
}

export function schemaMethods(root: Json): Map<string, SchemaMethod> {
  const out = new Map<string, SchemaMethod>();
  const methods = isObj(root) ? root['x-methods'] : undefined;
  if (!isObj(methods)) return out;
  for (const [name, m] of Object.entries(methods)) {
    if (!isObj(m)) continue;
    out.set(name, {
      sender: String(m.sender),
      kind: String(m.kind),
      params: fieldsOf(root, m.params),
      result: fieldsOf(root, m.result),
    });
  }
  return out;
}

/** Event type -> its fields, from the `oneOf` branches of `mino/event`'s params. */
export function eventTypes(root: Json): Map<string, Fields> {
  const out = new Map<string, Fields>();
  const methods = isObj(root) ? root['x-methods'] : undefined;
  const event = isObj(methods) ? methods['mino/event'] : undefined;
  const union = deref(root, isObj(event) ? event.params : undefined);
  for (const branch of isObj(union) && Array.isArray(union.oneOf) ? union.oneOf : []) {
    const b = deref(root, branch);
    const type = isObj(b) && isObj(b.properties) && isObj(b.properties.type) ? b.properties.type.const : undefined;
    if (typeof type === 'string') out.set(type, fieldsOf(root, b));
  }
  return out;
}
