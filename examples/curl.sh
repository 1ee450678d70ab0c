#!/usr/bin/env bash
# Both operations with curl, against `npm start` (or set BASE_URL and TOKEN for a deployment).
set -euo pipefail
BASE_URL=${BASE_URL:-http://localhost:8787}
TOKEN=${TOKEN:-$(npm run -s token -- demo-app-1)}

echo '# Disable webhook 1'
curl -sS -i -X PUT "$BASE_URL/v1.0/app/nft/webhook" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"webhook_id": 1, "is_enabled": false}'
echo

echo '# Enable it again (the id may also be a decimal string: exact for any int64)'
curl -sS -i -X PUT "$BASE_URL/v1.0/app/nft/webhook" \
  -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"webhook_id": "1", "is_enabled": true}'
echo

echo '# Delete webhook 2 (repeat it: still success)'
curl -sS -i -X DELETE "$BASE_URL/v1.0/app/nft/webhook?webhook_id=2" -H "Authorization: Bearer $TOKEN"
echo
