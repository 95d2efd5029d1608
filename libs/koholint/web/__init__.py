"""The one service scaffold: problem+json errors, body limits, metrics, health, telemetry."""
