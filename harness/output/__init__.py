"""Outputs: where a sink writes, how the harness prepares that place, tells the sink where it is (through
its context) and reads back only what is committed there, with the store's own commit history as
evidence. The checkers see the same records whatever the output (harness.client.records)."""
