-- Content filters: a webhook's filter, as the JSON text it was sent as (docs/filters.md); NULL: no
-- filter, every event of its types is delivered. Expand only: nullable with no default, so the
-- release before keeps working on the upgraded database (it neither reads nor writes the column).
-- The value sets the filters' $in_set reads live in the application's Durable Object.
ALTER TABLE webhooks ADD COLUMN filter TEXT CHECK (filter IS NULL OR json_valid(filter));
