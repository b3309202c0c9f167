"""abba-harness: interleaved A/B performance campaigns with output parity and sealed, re-checkable evidence."""

__version__ = "0.1.0"
