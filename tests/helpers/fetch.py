"""An HTTP handler that drops the connection half way, then serves Range requests: resumable
downloads."""

from __future__ import annotations

import http.server


class HalfThenRange(http.server.BaseHTTPRequestHandler):
    """Sends half of BODY and drops the connection, then honours Range requests."""

    BODY = bytes(range(256)) * 16384  # 4 MiB: whole 1 MiB chunks arrive before the break
    seen: list[str | None] = []

    def do_GET(self):
        ranged = self.headers.get("Range")
        type(self).seen.append(ranged)
        if ranged is None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(self.BODY)))
            self.end_headers()
            self.wfile.write(self.BODY[: len(self.BODY) // 2])
            self.close_connection = True
            return
        start = int(ranged.removeprefix("bytes=").rstrip("-"))
        self.send_response(206)
        self.send_header("Content-Length", str(len(self.BODY) - start))
        self.end_headers()
        self.wfile.write(self.BODY[start:])

    def log_message(self, *args):
        pass
