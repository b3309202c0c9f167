"""A tiny library under test for the harness demo: moving means over integer series."""
