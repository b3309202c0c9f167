"""Stage-2 autoregressive sampling of secondaries (code under test for the ar_loop campaigns)."""
