"""Op-table rows by area; ``op_table.OPS`` gathers the ``OPS`` list of every module here."""
