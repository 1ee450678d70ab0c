// A webhook's destination and custom headers as stored: credentials and sensitive header values
// sealed with the key ring (secrets.ts), like signing secrets, under "sealed"; and as shown.

import { importPKCS8 } from 'jose';
import { type GivenHeaders, MASKED } from '../core/custom-headers';
import {
  DESTINATION_FIELDS,
  type DestinationFields,
  destinationUrl,
  type GivenDestination,
} from '../core/destinations';
import { InvalidInput } from '../core/errors';
import { type SecretKeys, sealSecret } from './secrets';

/**
 * Refuses a service account key whose private_key cannot sign (RS256): found when it is given,
 * not after every attempt has failed with it for days.
 */
async function checkSigningKey(credentials: Record<string, string> | null): Promise<void> {
  const text = credentials?.service_account_key;
  if (text === undefined) return;
  const pem = (JSON.parse(text) as { private_key: string }).private_key;
  try {
    await importPKCS8(pem, 'RS256');
  } catch {
    throw new InvalidInput(
      'destination.service_account_key must have a private_key that is an RSA private key (PEM, PKCS #8)',
    );
  }
}

/** The destination column: null for HTTP; its fields and, when given, its credentials sealed as one value. */
export async function storedDestination(keys: SecretKeys, given: GivenDestination): Promise<string | null> {
  if (given.fields.type === 'http') return null;
  await checkSigningKey(given.credentials);
  const stored: Record<string, string> = { ...given.fields };
  if (given.credentials !== null) stored.sealed = await sealSecret(keys, JSON.stringify(given.credentials));
  return JSON.stringify(stored);
}

/** The headers column: null for none; the sensitive values sealed as one value. */
export async function storedHeaders(keys: SecretKeys, given: GivenHeaders): Promise<string | null> {
  const names = Object.keys(given.values);
  if (names.length === 0) return null;
  const values: Record<string, string> = {};
  const sensitive: Record<string, string> = {};
  for (const name of names) {
    if (given.sensitive.includes(name)) sensitive[name] = given.values[name] as string;
    else values[name] = given.values[name] as string;
  }
  const sealed = given.sensitive.length === 0 ? null : await sealSecret(keys, JSON.stringify(sensitive));
  return JSON.stringify({ values, sensitive: given.sensitive, sealed });
}

/** A stored destination's fields (its credentials left out); HTTP when none is stored. */
export function destinationFields(stored: string | null): DestinationFields {
  if (stored === null) return { type: 'http' };
  const { sealed: _, ...fields } = JSON.parse(stored) as DestinationFields;
  return fields;
}

/** The `destination` object of a reply: its type, its fields, `"credentials": "set"` for the credentials. */
export function destinationJson(stored: string | null): string {
  const fields = destinationFields(stored);
  const shown: Record<string, string> = { type: fields.type };
  for (const name of DESTINATION_FIELDS[fields.type].fields) shown[name] = fields[name] as string;
  if (fields.type !== 'http') shown.credentials = 'set';
  return JSON.stringify(shown);
}

/** The `url` of a reply: the HTTP endpoint's, or the address the service sends a destination's messages to. */
export const shownUrl = (url: string, stored: string | null) =>
  stored === null ? url : destinationUrl(destinationFields(stored));

/** The `headers` object of a reply: sensitive values masked. */
export function headersJson(stored: string | null): string {
  if (stored === null) return '{}';
  const { values, sensitive } = JSON.parse(stored) as { values: Record<string, string>; sensitive: string[] };
  const shown: Record<string, string> = { ...values };
  for (const name of sensitive) shown[name] = MASKED;
  return JSON.stringify(shown);
}
