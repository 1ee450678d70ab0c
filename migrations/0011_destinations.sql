-- Where a webhook delivers (docs/destinations.md), and the custom headers of its requests.
-- destination: NULL for an HTTP endpoint (its `url`); else a JSON object, the type and its fields,
-- with its credentials sealed (the key ring of WEBHOOK_SECRET_KEYS) as one value under "sealed";
-- `url` then holds the destination's address (`<type>:...`), which the duplicate rule compares and
-- which no release requests (the release before refuses it as a URL).
-- headers: NULL for none; else {"values": {name: value}, "sensitive": [names], "sealed": the
-- sensitive values, sealed}. Expand only: nullable with no default, so the release before keeps
-- working on the upgraded database (it neither reads nor writes the columns).
ALTER TABLE webhooks ADD COLUMN destination TEXT CHECK (destination IS NULL OR json_valid(destination));
ALTER TABLE webhooks ADD COLUMN headers TEXT CHECK (headers IS NULL OR json_valid(headers));
