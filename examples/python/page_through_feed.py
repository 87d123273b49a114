"""Pages through the caller's whole notification feed, newest first (standard library only).

    API_URL=http://localhost:4000 GATEWAY_KEY=gk_... python3 examples/python/page_through_feed.py

Each page's nextCursor goes back as cursor until it is null. An error body is
{"error": {"code", "message", "details"?, "requestId"}}; quote requestId when asking for support.
"""

import json
import os
import sys
import urllib.error
import urllib.request

API_URL = os.environ.get("API_URL", "http://localhost:4000").rstrip("/")
GATEWAY_KEY = os.environ.get("GATEWAY_KEY")
PAGE_SIZE = int(os.environ.get("PAGE_SIZE", "25"))


def call_operation(operation_id, variables):
    """POST /api/v1/call; returns `data`, or exits with the error's code, message and request id."""
    request = urllib.request.Request(
        f"{API_URL}/api/v1/call",
        data=json.dumps({"operationId": operation_id, "variables": variables}).encode(),
        headers={"Authorization": f"Bearer {GATEWAY_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response)["data"]
    except urllib.error.HTTPError as failure:
        error = json.load(failure).get("error", {})
        sys.exit(f"{failure.code} {error.get('code')}: {error.get('message')} (request {error.get('requestId')})")


def main():
    if not GATEWAY_KEY:
        sys.exit("Set GATEWAY_KEY (the demo keys are printed at the first npm start).")
    cursor, pages, seen = None, 0, 0
    while True:
        variables = {"limit": PAGE_SIZE}
        if cursor:
            variables["cursor"] = cursor
        page = call_operation("listNotifications", variables)
        pages += 1
        for notification in page["notifications"]:
            seen += 1
            state = "read  " if notification["isSeen"] else "unread"
            print(f"{notification['id']} {notification['createdAt']} {state} {notification['title']}")
        cursor = page["nextCursor"]
        if not cursor:
            print(f"{seen} notifications in {pages} pages (total {page['total']})")
            return


if __name__ == "__main__":
    main()
