"""The system under test as the harness loads it: sinks and pipelines named by catalog name, module or file."""
