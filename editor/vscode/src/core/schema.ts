/**
 * Reads method names and field names out of a JSON Schema description of the protocol, for the
 * test that checks src/protocol.ts against docs/protocol.schema.json. Tolerant of the usual
 * layouts: `{methods: {name: {params, result}}}`, OpenRPC-like `{methods: [{name, params, result}]}`,
 * and definitions/$defs keyed by method name; `$ref`s inside the document are followed and the
 * properties of `allOf`/`anyOf`/`oneOf` branches are merged.
 */

type Json = unknown;

export interface SchemaMethod {
  params: Set<string>;
  result: Set<string>;
}

function isObj(x: Json): x is Record<string, Json> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function resolveRef(root: Json, ref: string): Json {
  if (!ref.startsWith('#')) return undefined;
  const parts = ref
    .slice(1)
    .split('/')
    .filter(Boolean)
    .map((p) => decodeURIComponent(p.replace(/~1/g, '/').replace(/~0/g, '~')));
  let cur: Json = root;
  for (const p of parts) {
    if (!isObj(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}

/** All property names an object schema may have (following refs and combinators). */
export function propertyNames(root: Json, schema: Json, seen = new Set<Json>()): Set<string> {
  const out = new Set<string>();
  if (!isObj(schema) || seen.has(schema)) return out;
  seen.add(schema);
  if (typeof schema.$ref === 'string') for (const n of propertyNames(root, resolveRef(root, schema.$ref), seen)) out.add(n);
  if (isObj(schema.properties)) for (const k of Object.keys(schema.properties)) out.add(k);
  if (Array.isArray(schema.required)) for (const k of schema.required) if (typeof k === 'string') out.add(k);
  for (const comb of ['allOf', 'anyOf', 'oneOf']) {
    const list = schema[comb];
    if (Array.isArray(list)) for (const s of list) for (const n of propertyNames(root, s, seen)) out.add(n);
  }
  // OpenRPC: params as a list of {name, schema}
  return out;
}

function paramsOf(root: Json, params: Json): Set<string> {
  if (Array.isArray(params)) {
    const out = new Set<string>();
    for (const p of params) {
      if (isObj(p) && typeof p.name === 'string') {
        // by-name params
        out.add(p.name);
        // ...or a single object param that is the params object
        for (const n of propertyNames(root, p.schema)) out.add(n);
      }
    }
    return out;
  }
  return propertyNames(root, params);
}

function resultOf(root: Json, result: Json): Set<string> {
  if (isObj(result) && 'schema' in result && !('properties' in result) && !('$ref' in result)) {
    return propertyNames(root, result.schema);
  }
  return propertyNames(root, result);
}

export function extractSchemaMethods(root: Json): Map<string, SchemaMethod> {
  const out = new Map<string, SchemaMethod>();
  if (!isObj(root)) return out;
  const add = (name: string, def: Json) => {
    if (!isObj(def)) return;
    const params = paramsOf(root, def.params ?? (isObj(def.properties) ? def.properties.params : undefined));
    const result = resultOf(root, def.result ?? (isObj(def.properties) ? def.properties.result : undefined));
    const prev = out.get(name);
    if (prev) {
      for (const p of params) prev.params.add(p);
      for (const r of result) prev.result.add(r);
    } else out.set(name, { params, result });
  };
  const containers: Json[] = [root.methods, root.requests, root.notifications, root.clientRequests, root.serverRequests, root.serverNotifications];
  if (isObj(root.properties)) containers.push(root.properties.methods);
  for (const c of containers) {
    if (Array.isArray(c)) {
      for (const m of c) if (isObj(m) && typeof m.name === 'string') add(m.name, m);
      if (c.every((m) => typeof m === 'string')) for (const m of c) if (!out.has(m)) out.set(m, { params: new Set(), result: new Set() });
    } else if (isObj(c)) {
      for (const [k, v] of Object.entries(c)) if (k.includes('/')) add(k, v);
    }
  }
  // definitions keyed by method name (e.g. "$defs": {"mino/turn": {...}})
  for (const defs of [root.$defs, root.definitions]) {
    if (isObj(defs)) for (const [k, v] of Object.entries(defs)) if (k.startsWith('mino/') || k.startsWith('$/')) add(k, v);
  }
  return out;
}
