// What an endpoint receives, said once in words from its event types and its content filter
// together: "NEW_NFT events whose data.price ≥ 100", "All events" only when neither limits them. A
// filter's `type` that names types (a string, `$eq`, `$in`, at its top level or in a top-level
// `$and`) narrows the event types; every other condition is said as it reads (docs/filters.md).
import type { Webhook } from './api';

/** A JSON number as it was written: shown with every digit (a double would round it). */
class Written {
  constructor(readonly text: string) {}
}

/** The filter's JSON text parsed, its numbers kept as written where the browser gives their source. */
function parseKeepingNumbers(text: string): unknown {
  const reviver = (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' ? new Written(context?.source ?? String(value)) : value;
  return JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Written);

/** A value of a condition: strings quoted, numbers as written. */
function valueText(v: unknown): string {
  if (v instanceof Written) return v.text;
  if (typeof v === 'string') return JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

/** A range's bound: a string of decimal digits is the number it writes, so it is shown as one. */
const boundText = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? v : valueText(v));

/** At most five values of a list, and how many there are past them. */
function listText(items: unknown): string {
  const all = Array.isArray(items) ? items : [items];
  const shown = all.slice(0, 5).map(valueText).join(', ');
  return all.length > 5 ? `${shown}, … (${all.length} in all)` : shown;
}

const RANGES: Record<string, string> = { $gt: '>', $gte: '≥', $lt: '<', $lte: '≤' };

/** One operator of a condition on `path`, in words: "data.price ≥ 100", "data.to is in the value set". */
export function operatorText(path: string, operator: string, operand: unknown): string {
  const range = RANGES[operator];
  if (range !== undefined) return `${path} ${range} ${boundText(operand)}`;
  switch (operator) {
    case '$eq':
      return `${path} is ${valueText(operand)}`;
    case '$ne':
      return `${path} is not ${valueText(operand)}`;
    case '$in':
      return `${path} is one of ${listText(operand)}`;
    case '$nin':
      return `${path} is none of ${listText(operand)}`;
    case '$exists':
      return operand === false ? `${path} is missing` : `${path} is present`;
    case '$prefix':
      return `${path} starts with ${valueText(operand)}`;
    case '$in_set':
      return `${path} is in the value set`;
    default:
      return `${path} ${operator} ${valueText(operand)}`;
  }
}

/** A condition on `path` (a bare value, or an object of operators), as conditions in words. */
function conditionTexts(path: string, condition: unknown): string[] {
  if (!isObject(condition)) return [operatorText(path, '$eq', condition)];
  return Object.entries(condition).map(([op, operand]) => operatorText(path, op, operand));
}

/** A filter's conditions in words, one per key (its `$and` items' own keys among them). */
function filterTexts(filter: Json): string[] {
  const texts: string[] = [];
  for (const [key, value] of Object.entries(filter)) {
    const items = Array.isArray(value) ? value.filter(isObject) : [];
    if (key === '$and') texts.push(...items.flatMap(filterTexts));
    else if (key === '$or') {
      const options = items.map((item) => joined(filterTexts(item)));
      texts.push(options.length === 1 ? (options[0] as string) : `(${options.join(' or ')})`);
    } else if (key === '$not') texts.push(`not (${joined(isObject(value) ? filterTexts(value) : [])})`);
    else texts.push(...conditionTexts(key, value));
  }
  return texts;
}

const joined = (texts: string[]) => (texts.length === 0 ? 'any event' : texts.join(' and '));

/** The types a `type` condition names (a string, `$eq`, or `$in` of strings), or null when it is any other condition. */
function namedTypes(condition: unknown): string[] | null {
  if (typeof condition === 'string') return [condition];
  if (!isObject(condition)) return null;
  const ops = Object.keys(condition);
  if (ops.length !== 1) return null;
  const operand = condition[ops[0] as string];
  if (ops[0] === '$eq' && typeof operand === 'string') return [operand];
  if (ops[0] === '$in' && Array.isArray(operand) && operand.every((t) => typeof t === 'string')) return operand;
  return null;
}

/** The filter's top-level conjuncts: its own keys, and those of the items of a top-level `$and`. */
function conjuncts(filter: Json): [string, unknown][] {
  return Object.entries(filter).flatMap(([key, value]) =>
    key === '$and' && Array.isArray(value)
      ? value.filter(isObject).flatMap(conjuncts)
      : [[key, value] as [string, unknown]],
  );
}

/** "A", "A and B", "A, B and C". */
function typeList(types: string[]): string {
  if (types.length <= 1) return types.join('');
  return `${types.slice(0, -1).join(', ')} and ${types[types.length - 1]}`;
}

/** What the endpoint receives, in one sentence (without the full stop). */
export function receivesText(webhook: Pick<Webhook, 'event_types' | 'filter' | 'filter_text'>): string {
  let types: string[] | null = webhook.event_types?.length ? [...webhook.event_types] : null;
  let conditions: string[] = [];
  if (webhook.filter != null) {
    let filter: unknown = webhook.filter;
    try {
      if (webhook.filter_text) filter = parseKeepingNumbers(webhook.filter_text);
    } catch {
      // The object as parsed: only a number's digits past a double's may differ.
    }
    for (const [key, value] of isObject(filter) ? conjuncts(filter) : []) {
      const named = key === 'type' ? namedTypes(value) : null;
      if (named === null) {
        // Two conditions on one key stay two (a top-level $and may repeat a path).
        conditions = conditions.concat(filterTexts({ [key]: value }));
      } else {
        types = types === null ? [...new Set(named)] : types.filter((t) => named.includes(t));
      }
    }
  }
  if (types !== null && types.length === 0) {
    return 'No events: its filter names no type among its event types';
  }
  const whose = conditions.length === 0 ? '' : ` whose ${conditions.join(' and ')}`;
  if (types === null) return whose === '' ? 'All events' : `Events of every type${whose}`;
  return `${typeList(types)} events${whose}`;
}
