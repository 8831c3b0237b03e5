"""DAP's wire format: each message is a JSON object preceded by a ``Content-Length`` header
(``Content-Length: N\\r\\n\\r\\n`` then N bytes of UTF-8 JSON), in both directions.

No maintained Python library provides this framing alone (debugpy embeds its own inside its
debugger), and it is a few lines, so it lives here. Writes are serialized by a lock: responses
come from the request loop and events (output of a launched program) from other threads."""

from __future__ import annotations

import json
import threading
from typing import IO, Any, Dict, Optional


class ProtocolError(Exception):
    """The peer sent something that is not a DAP message (bad header, bad JSON)."""


class Channel:
    """Reads and writes DAP messages over a pair of binary streams."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._r = reader
        self._w = writer
        self._lock = threading.Lock()
        self._seq = 0

    def read(self) -> Optional[Dict[str, Any]]:
        """The next message, or None at the end of the input."""
        length = None
        while True:
            line = self._r.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise ProtocolError(f"bad Content-Length header {line!r}: expected a byte count") from None
        body = self._r.read(length)
        if len(body) < length:
            return None
        try:
            msg = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ProtocolError(f"a message is not UTF-8 JSON ({e}): {body[:200]!r}") from None
        if not isinstance(msg, dict):
            raise ProtocolError(f"a message is not a JSON object: {body[:200]!r}")
        return msg

    def send(self, msg: Dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            msg["seq"] = self._seq
            data = json.dumps(msg, default=str).encode("utf-8")
            self._w.write(b"Content-Length: %d\r\n\r\n" % len(data))
            self._w.write(data)
            self._w.flush()

    def event(self, event: str, body: Optional[Dict[str, Any]] = None) -> None:
        msg: Dict[str, Any] = {"type": "event", "event": event}
        if body is not None:
            msg["body"] = body
        self.send(msg)

    def respond(self, request: Dict[str, Any], body: Optional[Dict[str, Any]] = None) -> None:
        msg: Dict[str, Any] = {
            "type": "response",
            "request_seq": request.get("seq", 0),
            "command": request.get("command", ""),
            "success": True,
        }
        if body is not None:
            msg["body"] = body
        self.send(msg)

    def fail(self, request: Dict[str, Any], message: str, error_id: int = 1) -> None:
        """An error response; ``message`` is shown to the user as is."""
        self.send(
            {
                "type": "response",
                "request_seq": request.get("seq", 0),
                "command": request.get("command", ""),
                "success": False,
                "message": message,
                "body": {"error": {"id": error_id, "format": message, "showUser": True}},
            }
        )
