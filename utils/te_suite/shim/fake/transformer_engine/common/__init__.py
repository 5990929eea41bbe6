"""cpu mode's stand-in for transformer_engine.common (only `recipe` is real)."""
