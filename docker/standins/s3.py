"""The S3 stand-in: moto's server, its state kept across restarts by moto's own recorder.

Every request is appended to $MOTO_RECORDER_FILEPATH (on a volume; moto reads the variable
when it is imported); at start the recording is
replayed before /tmp/s3-ready is written (the healthcheck waits for that file). Moto's
recorder appends from every request thread without a lock, so lines interleave under
concurrent requests: here each record is written whole, under one lock. A last line cut short
(the container killed mid-write, before that request was answered) is dropped at replay; any
other line that does not parse stops the start, naming it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

from moto.moto_api import recorder
from moto.moto_api._internal.recorder.models import Recorder
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

PORT = int(os.environ.get("S3_PORT", "9000"))
READY = Path("/tmp/s3-ready")
RECORDING = Path(os.environ["MOTO_RECORDER_FILEPATH"])

_record_lock = threading.Lock()
_record_unlocked = Recorder._record_request


def _record_whole(self: Recorder, request: object, body: bytes | None = None) -> None:
    with _record_lock:
        _record_unlocked(self, request, body)  # type: ignore[arg-type]


def intact_recording() -> None:
    """Check every line parses; drop a last line cut short by a kill."""
    text = RECORDING.read_text()
    lines = text.split("\n")
    if lines and lines[-1]:
        print(f"dropping a cut-short last record ({len(lines[-1])} bytes)", flush=True)
        RECORDING.write_text("\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else ""))
        lines = lines[:-1]
    for number, line in enumerate(lines, 1):
        if line:
            try:
                json.loads(line)
            except json.JSONDecodeError as error:
                raise SystemExit(f"{RECORDING} line {number} is not a record: {error}") from error


def main() -> None:
    READY.unlink(missing_ok=True)
    RECORDING.parent.mkdir(parents=True, exist_ok=True)
    RECORDING.touch()
    intact_recording()
    Recorder._record_request = _record_whole  # type: ignore[method-assign]
    server = ThreadedMotoServer(ip_address="0.0.0.0", port=PORT, verbose=False)
    server.start()
    records = sum(1 for line in RECORDING.read_text().splitlines() if line)
    recorder.replay_recording(target_host=f"http://127.0.0.1:{PORT}")
    recorder.start_recording()
    READY.touch()
    print(f"S3 stand-in on :{PORT}, {records} recorded requests replayed", flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()
    server.stop()


if __name__ == "__main__":
    main()
