"""The harness's triggers on a scenario's PostgreSQL table, as the SQL the server runs (PL/pgSQL, apart from
the table's Python, harness.output.postgres.table): the commit hold, which makes a writer's commit wait for
an absent synchronous standby and names the batches it wrote in its `application_name` (read back by
`held_batches`), and a state table's change log."""

from __future__ import annotations

import re

HOLD_PREFIX = "eo-hold"  # application_name of a transaction held at its commit: `eo-hold <table> <batches>`
HOLD_EVENTS = ("INSERT", "UPDATE")  # the statements whose written rows the hold trigger sees
CHANGES = "_changes"  # a state table's change log: `<table>_changes`


def held_batches(application_name: str, table: str) -> tuple[int, ...] | None:
    """The batches a held writer named (`eo-hold <table> 3,4`), None when it is not one of `table`'s."""
    parts = application_name.split(" ")
    if len(parts) != 3 or parts[0] != HOLD_PREFIX or parts[1] != table:
        return None
    return tuple(int(b) for b in parts[2].split(",") if re.fullmatch(r"\s*-?[0-9]+\s*", b))


HOLD_FUNCTION = """
CREATE OR REPLACE FUNCTION eo_hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  batches text;
BEGIN
  SELECT string_agg(DISTINCT batch_id::text, ',') INTO batches FROM written;
  IF batches IS NOT NULL THEN
    -- this transaction's commit waits for the synchronous standby that never comes, until the harness
    -- lets it go; the batches it wrote are said where the harness looks (pg_stat_activity)
    PERFORM set_config('synchronous_commit', 'on', true);
    PERFORM set_config('application_name',
                       left('""" + HOLD_PREFIX + """ ' || TG_TABLE_NAME || ' ' || batches, 63), true);
  END IF;
  RETURN NULL;
END $$
"""


CHANGE_FUNCTION = """
CREATE OR REPLACE FUNCTION eo_log_change() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
  log text := TG_TABLE_NAME || '""" + CHANGES + """';
BEGIN
  -- each row a transaction wrote, in the writer's transaction: committed with it, rolled back with it
  IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.key IS DISTINCT FROM NEW.key) THEN
    EXECUTE format('INSERT INTO %I (kind, key, before) VALUES (''D'', $1, $2)', log) USING OLD.key, OLD.value;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.key IS NOT DISTINCT FROM NEW.key THEN
    EXECUTE format('INSERT INTO %I (kind, key, before, after, batch_id) VALUES (''U'', $1, $2, $3, $4)', log)
      USING NEW.key, OLD.value, NEW.value, NEW.batch_id;
  ELSIF TG_OP <> 'DELETE' THEN
    EXECUTE format('INSERT INTO %I (kind, key, after, batch_id) VALUES (''I'', $1, $2, $3)', log)
      USING NEW.key, NEW.value, NEW.batch_id;
  END IF;
  RETURN NULL;
END $$
"""
