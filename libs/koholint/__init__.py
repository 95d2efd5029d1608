"""Koholint's shared library: schemas, RAM map, emulator adapter, environment and clients."""

__version__ = "0.1.0"
