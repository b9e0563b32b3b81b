"""The catalog: the reference and known-bad sinks and pipelines, named by their short names
(`--sink transactional`, `--pipeline fraud_windows`) from an installed harness."""
