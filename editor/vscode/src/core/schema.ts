/**
 * Reads method names and field names out of a JSON Schema description of the protocol, for the
 * test that checks src/protocol.ts against docs/protocol.schema.json. Tolerant of the usual
 * layouts: `{methods: {name: {params, result}}}`, OpenRPC-like `{methods: [{name, params, result}]}`,
 * and definitions/$defs keyed by method name; `$ref`s inside the document are followed and the
 * properties of `allOf`/`anyOf`/`oneOf` branches are merged.
 */

type Json = unknown;

export interface SchemaMethod {
  /** every property name the params / result may have */
  params: Set<string>;
  result: Set<string>;
  /** the ones that are always present */
  requiredParams: Set<string>;
  requiredResult: Set<string>;
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
  return out;
}

/** Property names that are always present (refs followed; allOf: union; anyOf/oneOf: intersection). */
export function requiredNames(root: Json, schema: Json, seen = new Set<Json>()): Set<string> {
  const out = new Set<string>();
  if (!isObj(schema) || seen.has(schema)) return out;
  seen.add(schema);
  if (typeof schema.$ref === 'string') for (const n of requiredNames(root, resolveRef(root, schema.$ref), seen)) out.add(n);
  if (Array.isArray(schema.required)) for (const k of schema.required) if (typeof k === 'string') out.add(k);
  if (Array.isArray(schema.allOf)) for (const s of schema.allOf) for (const n of requiredNames(root, s, seen)) out.add(n);
  for (const comb of ['anyOf', 'oneOf']) {
    const list = schema[comb];
    if (Array.isArray(list) && list.length) {
      const sets = list.map((s) => requiredNames(root, s, new Set(seen)));
      for (const n of sets[0]) if (sets.every((x) => x.has(n))) out.add(n);
    }
  }
  return out;
}

/** The branches of a union (following refs), e.g. the event types of `mino/event`. */
export function unionBranches(root: Json, schema: Json, seen = new Set<Json>()): Json[] {
  if (!isObj(schema) || seen.has(schema)) return [];
  seen.add(schema);
  if (typeof schema.$ref === 'string') return unionBranches(root, resolveRef(root, schema.$ref), seen);
  for (const comb of ['oneOf', 'anyOf']) {
    const list: Json = schema[comb];
    if (Array.isArray(list)) return (list as Json[]).flatMap((b): Json[] => {
      const inner = unionBranches(root, b, seen);
      return inner.length ? inner : [isObj(b) && typeof b.$ref === 'string' ? resolveRef(root, b.$ref) : b];
    });
  }
  return [];
}

/** Event type -> {all fields, required fields}, from the `const` of each branch's `type`. */
export function extractEventTypes(root: Json, eventSchema: Json): Map<string, { fields: Set<string>; required: Set<string> }> {
  const out = new Map<string, { fields: Set<string>; required: Set<string> }>();
  for (const b of unionBranches(root, eventSchema)) {
    if (!isObj(b) || !isObj(b.properties)) continue;
    const t = b.properties.type;
    const en: Json = isObj(t) ? t.enum : undefined;
    const name: Json = isObj(t) ? (typeof t.const === 'string' ? t.const : Array.isArray(en) && en.length === 1 ? (en as Json[])[0] : undefined) : undefined;
    if (typeof name === 'string') out.set(name, { fields: propertyNames(root, b), required: requiredNames(root, b) });
  }
  return out;
}

/** The raw params schema of a method (for extractEventTypes). */
export function methodParamsSchema(root: Json, method: string): Json {
  if (!isObj(root)) return undefined;
  for (const c of [root['x-methods'], root.methods]) {
    if (isObj(c) && isObj(c[method])) return c[method].params;
    if (Array.isArray(c)) for (const m of c) if (isObj(m) && m.name === method) return m.params;
  }
  return undefined;
}

function paramsOf(root: Json, params: Json, names: typeof propertyNames): Set<string> {
  if (Array.isArray(params)) {
    // OpenRPC: a list of {name, schema, required?}
    const out = new Set<string>();
    for (const p of params) {
      if (isObj(p) && typeof p.name === 'string' && (names === propertyNames || p.required === true)) out.add(p.name);
    }
    return out;
  }
  return names(root, params);
}

function resultOf(root: Json, result: Json, names: typeof propertyNames): Set<string> {
  if (isObj(result) && 'schema' in result && !('properties' in result) && !('$ref' in result)) {
    return names(root, result.schema);
  }
  return names(root, result);
}

export function extractSchemaMethods(root: Json): Map<string, SchemaMethod> {
  const out = new Map<string, SchemaMethod>();
  if (!isObj(root)) return out;
  const add = (name: string, def: Json) => {
    if (!isObj(def)) return;
    const p = def.params ?? (isObj(def.properties) ? def.properties.params : undefined);
    const r = def.result ?? (isObj(def.properties) ? def.properties.result : undefined);
    const entry: SchemaMethod = {
      params: paramsOf(root, p, propertyNames),
      result: resultOf(root, r, propertyNames),
      requiredParams: paramsOf(root, p, requiredNames),
      requiredResult: resultOf(root, r, requiredNames),
    };
    const prev = out.get(name);
    if (prev) {
      for (const k of ['params', 'result', 'requiredParams', 'requiredResult'] as const) for (const x of entry[k]) prev[k].add(x);
    } else out.set(name, entry);
  };
  const containers: Json[] = [root['x-methods'], root.methods, root.requests, root.notifications, root.clientRequests, root.serverRequests, root.serverNotifications];
  if (isObj(root.properties)) containers.push(root.properties.methods);
  for (const c of containers) {
    if (Array.isArray(c)) {
      for (const m of c) if (isObj(m) && typeof m.name === 'string') add(m.name, m);
      for (const m of c)
        if (typeof m === 'string' && !out.has(m))
          out.set(m, { params: new Set(), result: new Set(), requiredParams: new Set(), requiredResult: new Set() });
    } else if (isObj(c)) {
      for (const [k, v] of Object.entries(c)) if (k.includes('/')) add(k, v);
    }
  }
  // definitions keyed by method name (e.g. "$defs": {"mino/turn": {...}})
  for (const defs of [root.$defs, root.definitions]) {
    if (isObj(defs)) for (const [k, v] of Object.entries(defs)) if ((k.startsWith('mino/') || k.startsWith('$/')) && !k.includes('.')) add(k, v);
  }
  return out;
}
