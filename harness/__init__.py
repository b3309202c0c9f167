"""abba-harness: A/B/B/A performance campaigns with parity and sealed evidence."""

__version__ = "0.1.0"
