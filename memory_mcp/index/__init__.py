"""The derived SQLite index: its schema, migrations and the SQL that reads and writes it."""
