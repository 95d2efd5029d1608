#!/bin/sh
# The S3 stand-in: moto's server, its state kept across restarts by moto's own recorder. Every
# request is appended to $S3_DATA/recording.jsonl (a volume); at start the recording is
# replayed before /tmp/s3-ready is written (the healthcheck waits for that file).
set -eu
S3_DATA=${S3_DATA:-/data}
S3_PORT=${S3_PORT:-9000}
mkdir -p "$S3_DATA"
rm -f /tmp/s3-ready
export MOTO_ENABLE_RECORDING=1 MOTO_RECORDER_FILEPATH="$S3_DATA/recording.jsonl"
touch "$MOTO_RECORDER_FILEPATH"
moto_server -H 0.0.0.0 -p "$S3_PORT" &
server=$!
trap 'kill -TERM $server; wait $server' TERM INT
python - "$S3_PORT" <<'PY'
import sys, time, urllib.request

port = sys.argv[1]
for _ in range(300):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1)
        break
    except OSError:
        time.sleep(0.1)
urllib.request.urlopen(urllib.request.Request(
    f"http://127.0.0.1:{port}/moto-api/recorder/replay-recording", method="POST"), timeout=600)
PY
touch /tmp/s3-ready
wait $server
