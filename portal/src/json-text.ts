// JSON as text, without parsing its numbers: a webhook's filter is shown as the service stores it,
// with every digit it was sent with (a double would round 12345678901234567890123 and write 1e3
// as 1000).

/** A JSON string, a bracket, a comma or colon, or a literal (number, true, false, null). */
const TOKEN = /"(?:[^"\\]|\\.)*"|[{}[\],:]|[^\s{}[\],:"]+/g;

/**
 * The texts of the values of the key `key` of every object at `depth` (1: the envelope, 2: its
 * `value`, 4: the objects of an array in it) in the JSON `text`, in order; null for a value that
 * is not an object.
 */
export function objectTextsAt(text: string, key: string, depth: number): (string | null)[] {
  const tokens = [...text.matchAll(TOKEN)];
  const quoted = JSON.stringify(key);
  const texts: (string | null)[] = [];
  let level = 0;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i]?.[0];
    if (level === depth && token === quoted && tokens[i + 1]?.[0] === ':') {
      const open = tokens[i + 2];
      let found: string | null = null;
      if (open?.[0] === '{') {
        let inner = 0;
        for (const close of tokens.slice(i + 2)) {
          if (close[0] === '{' || close[0] === '[') inner += 1;
          else if (close[0] === '}' || close[0] === ']') inner -= 1;
          if (inner === 0) {
            found = text.slice(open.index, close.index + 1);
            break;
          }
        }
      }
      texts.push(found);
    }
    if (token === '{' || token === '[') level += 1;
    else if (token === '}' || token === ']') level -= 1;
  }
  return texts;
}

/**
 * The text of the object after the key `key` of the object at `depth` (1: the envelope, 2: its
 * `value`) in the JSON `text`; null when there is none (or it is not an object).
 */
export const objectTextAt = (text: string, key: string, depth = 2): string | null =>
  objectTextsAt(text, key, depth)[0] ?? null;

/** JSON text laid out as JSON.stringify(value, null, 2) would, every token kept as written. */
export function formatJsonText(text: string): string {
  let out = '';
  let indent = 0;
  const tokens = [...text.matchAll(TOKEN)].map((m) => m[0]);
  const line = () => `\n${'  '.repeat(indent)}`;
  tokens.forEach((token, i) => {
    const next = tokens[i + 1];
    if (token === '{' || token === '[') {
      indent += 1;
      out += token + (next === '}' || next === ']' ? '' : line());
    } else if (token === '}' || token === ']') {
      indent -= 1;
      const prev = tokens[i - 1];
      out += (prev === '{' || prev === '[' ? '' : line()) + token;
    } else if (token === ',') out += `,${line()}`;
    else if (token === ':') out += ': ';
    else out += token;
  });
  return out;
}
