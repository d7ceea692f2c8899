"""The developer scripts: benchmarks (``bench``), the retrieval evaluation (``eval``), the stress runs
(``stress_load``, ``stress_crash``) and the privacy audit. Not part of the installed product.

Run them as modules from the repository root, e.g. ``.venv/bin/python -m scripts.bench --sizes 1000``; they
import the product (``indexer``, ``search_engine``, ``hooks``) and each other as packages, never through
``sys.path``. Every percentile they report comes from :func:`scripts.stats.percentile`.
"""
