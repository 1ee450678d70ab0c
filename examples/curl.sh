#!/usr/bin/env bash
# Every operation with curl, against `npm start` (or set BASE_URL and TOKEN for a deployment).
set -euo pipefail
BASE_URL=${BASE_URL:-http://localhost:8787}
TOKEN=${TOKEN:-$(npm run -s token -- demo-app-1)}
URL="$BASE_URL/v1.0/app/nft/webhook"

echo '# Register a webhook with an Idempotency-Key'
KEY="curl-$(date +%s)-$RANDOM"
register() {
  curl -sS -i -X POST "$URL" \
    -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H "Idempotency-Key: $KEY" \
    -d "{\"url\": \"https://hooks.example.com/$KEY\"}"
}
created=$(register)
echo "$created"
ID=$(printf '%s' "$created" | sed -n 's/.*"webhook_id":\([0-9]*\).*/\1/p')
BOOKMARK=$(printf '%s' "$created" | tr -d '\r' | sed -n 's/^x-d1-bookmark: //Ip')
echo

echo '# Retry it with the same Idempotency-Key and body: the same reply (Idempotent-Replayed: true), nothing new'
register
echo

echo "# Read it back, at least as new as the write (X-D1-Bookmark)"
curl -sS -i "$URL?webhook_id=$ID" -H "Authorization: Bearer $TOKEN" -H "X-D1-Bookmark: $BOOKMARK"
echo

echo '# List the enabled ones, two to a page (pass next_cursor back as cursor=...)'
curl -sS -i "$URL?limit=2&is_enabled=true" -H "Authorization: Bearer $TOKEN"
echo

echo "# Change some of its fields (PATCH: only what is given), and see the event catalog"
curl -sS -i -X PATCH "$URL" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID, \"description\": \"Orders service\", \"event_types\": [\"NEW_NFT\", \"webhook.test\"]}"
echo
curl -sS -i "$BASE_URL/v1.0/app/nft/event-types" -H "Authorization: Bearer $TOKEN"
echo

echo "# A content filter: only events whose token_id is in its value set; two values added, the set paged, the filter tried"
curl -sS -i -X PATCH "$URL" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID, \"filter\": {\"data.token_id\": {\"\$in_set\": true}}}"
echo
curl -sS -i -X POST "$URL/values" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID, \"add\": [\"42\", \"43\"]}"
echo
curl -sS -i "$URL/values?webhook_id=$ID&limit=10" -H "Authorization: Bearer $TOKEN"
echo
curl -sS -i -X POST "$URL/filter/test" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID, \"event\": {\"type\": \"NEW_NFT\", \"data\": {\"token_id\": \"42\"}}}"
echo

echo "# Its signing secret, then a new one (for 24 hours the previous one signs too)"
curl -sS -i "$URL/secret?webhook_id=$ID" -H "Authorization: Bearer $TOKEN"
echo
curl -sS -i -X POST "$URL/secret" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID}"
echo

echo "# A test event to it, and an event as a platform service publishes one (scope events:publish)"
curl -sS -i -X POST "$URL/test" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID}"
echo
PLATFORM=${PLATFORM_TOKEN:-$(npm run -s token -- platform-service --scope events:publish)}
curl -sS -i -X POST "$BASE_URL/v1.0/platform/nft/event" \
  -H "Authorization: Bearer $PLATFORM" -H 'Content-Type: application/json' \
  -d '{"app_id": "demo-app-1", "type": "NEW_NFT", "data": {"token_id": "42"}}'
echo

echo "# Its delivery log, newest first, its stats, a delivery sent again, and failed deliveries of the last hour attempted again"
log=$(curl -sS -i "$URL/delivery?webhook_id=$ID&limit=5" -H "Authorization: Bearer $TOKEN")
echo "$log"
DELIVERY=$(printf '%s' "$log" | sed -n 's/.*"delivery_id":\([0-9]*\).*/\1/p' | head -1)
echo
curl -sS -i "$URL/stats?webhook_id=$ID" -H "Authorization: Bearer $TOKEN"
echo
curl -sS -i -X POST "$URL/delivery/resend" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"delivery_id\": $DELIVERY}"
echo
curl -sS -i -X POST "$URL/recover" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": $ID, \"since\": \"$(node -p 'new Date(Date.now() - 3600e3).toISOString()')\"}"
echo

echo "# Disable it (the id may also be a decimal string: exact for any int64)"
curl -sS -i -X PUT "$URL" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "{\"webhook_id\": \"$ID\", \"is_enabled\": false}"
echo

echo "# Delete it, then repeat the delete: still success"
curl -sS -i -X DELETE "$URL?webhook_id=$ID" -H "Authorization: Bearer $TOKEN"
echo
curl -sS -i -X DELETE "$URL?webhook_id=$ID" -H "Authorization: Bearer $TOKEN"
echo

echo "# The platform's administration (scope platform:admin): an application's retention, read back, and the erasure of an application"
ADMIN=${ADMIN_TOKEN:-$(npm run -s token -- platform-admin --scope platform:admin)}
curl -sS -i -X PUT "$BASE_URL/v1.0/platform/nft/application" \
  -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  -d '{"app_id": "demo-app-1", "retention_days": 90}'
echo
curl -sS -i "$BASE_URL/v1.0/platform/nft/application?app_id=demo-app-1" -H "Authorization: Bearer $ADMIN"
echo
curl -sS -i -X DELETE "$BASE_URL/v1.0/platform/nft/application?app_id=$KEY" -H "Authorization: Bearer $ADMIN"
echo
