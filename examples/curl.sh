#!/usr/bin/env bash
# Every operation with curl, against `npm start` (or set BASE_URL and TOKEN for a deployment).
set -euo pipefail
BASE_URL=${BASE_URL:-http://localhost:8787}
TOKEN=${TOKEN:-$(npm run -s token -- demo-app-1)}
URL="$BASE_URL/v1.0/app/nft/webhook"

echo '# Register a webhook (retry with the same Idempotency-Key and body: the same reply, nothing new)'
KEY="curl-$(date +%s)"
created=$(curl -sS -i -X POST "$URL" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H "Idempotency-Key: $KEY" \
  -d "{\"url\": \"https://hooks.example.com/$KEY\"}")
echo "$created"
ID=$(printf '%s' "$created" | sed -n 's/.*"webhook_id":\([0-9]*\).*/\1/p')
BOOKMARK=$(printf '%s' "$created" | tr -d '\r' | sed -n 's/^x-d1-bookmark: //Ip')
echo

echo "# Read it back, at least as new as the write (X-D1-Bookmark)"
curl -sS -i "$URL?webhook_id=$ID" -H "Authorization: Bearer $TOKEN" -H "X-D1-Bookmark: $BOOKMARK"
echo

echo '# List the enabled ones, two to a page (pass next_cursor back as cursor=...)'
curl -sS -i "$URL?limit=2&is_enabled=true" -H "Authorization: Bearer $TOKEN"
echo

echo "# Disable it (the id may also be a decimal string: exact for any int64)"
curl -sS -i -X PUT "$URL" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": \"$ID\", \"is_enabled\": false}"
echo

echo "# Delete it (repeat it: still success)"
curl -sS -i -X DELETE "$URL?webhook_id=$ID" -H "Authorization: Bearer $TOKEN"
echo
