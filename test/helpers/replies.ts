// Assertions on the Worker's replies: the envelope, the common headers, each operation's failure.
import { expect } from 'vitest';

/** Asserts the status and the exact envelope, and the headers every reply carries. */
export async function expectEnvelope(res: Response, status: number, code: number, message: string) {
  const text = await res.text();
  expect({ status: res.status, body: JSON.parse(text) }).toEqual({ status, body: { return: code, message } });
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-request-id')).toMatch(/^\S{1,128}$/);
}

/** The form the docs give a signing secret: `whsec_` + padded base64 of 32 bytes. */
export const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** A webhook as a reply's `value` holds it, parsed (ids here stay below 2^53). */
export interface Webhook {
  webhook_id: number;
  url: string;
  is_enabled: boolean;
  event_types: string[] | null;
  created_at: string;
  updated_at: string;
  /** Why it is disabled ('gone', 'failing', 'application'); null while enabled. */
  disabled_reason?: string | null;
  disabled_at?: string | null;
  failing_since?: string | null;
}

/**
 * Asserts a successful reply with data: the status, `{return: 0, message: "success", value}` and
 * the common headers: X-D1-Bookmark on every reply that used D1, and on no other (`usedD1`
 * false: one delivery read by its id, which only its objects answer). Returns the body's text
 * (to check exact digits) and the parsed value.
 */
export async function expectValue<T = Record<string, unknown>>(
  res: Response,
  status = 200,
  { usedD1 = true }: { usedD1?: boolean } = {},
): Promise<{ text: string; value: T }> {
  const text = await res.text();
  const body = JSON.parse(text) as { return: number; message: string; value: T };
  expect({ status: res.status, return: body.return, message: body.message }).toEqual({
    status,
    return: 0,
    message: 'success',
  });
  expect(Object.keys(body).sort()).toEqual(['message', 'return', 'value']);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('cache-control')).toBe('no-store');
  if (usedD1) expect(res.headers.get('x-d1-bookmark')).toMatch(/^[0-9a-f]+(-[0-9a-f]+)+$/);
  else expect(res.headers.get('x-d1-bookmark')).toBeNull();
  return { text, value: body.value };
}

export const expectSuccess = (res: Response) => expectEnvelope(res, 200, 0, 'success');
export const expectInvalidToken = (res: Response) => expectEnvelope(res, 401, 20004, 'Invalid jwt token');
export const expectUpdateFail = (res: Response, status: number) => expectEnvelope(res, status, 64062, 'update fail');
export const expectDeleteFail = (res: Response, status: number) => expectEnvelope(res, status, 64063, 'delete fail');
export const expectCreateFail = (res: Response, status: number) => expectEnvelope(res, status, 64061, 'create fail');
export const expectQueryFail = (res: Response, status: number) => expectEnvelope(res, status, 64060, 'query fail');
export const expectEventFail = (res: Response, status: number) => expectEnvelope(res, status, 64064, 'event fail');
export const expectSecretFail = (res: Response, status: number) => expectEnvelope(res, status, 64065, 'secret fail');
export const expectApplicationFail = (res: Response, status: number) =>
  expectEnvelope(res, status, 64066, 'application fail');
