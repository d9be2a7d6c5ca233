"""Alembic's entry: FileKiln runs the migrations on a connection it has opened and locked
(localapi/core/migrate.py), inside that connection's transaction."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
