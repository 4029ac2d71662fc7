"""Test and benchmark support, not used by the product.

`synthetic` generates deterministic corpora, `simulator` speaks vLLM's API with token accounting and
prefix caching (no GPU), `sample_builder` regenerates the bundled sample quest from its story.
Nothing outside this package imports it; the import-linter contract in `pyproject.toml` checks that.
"""
