"""Presets remember the key that made them: a key may change or delete only its own.

Revision ID: 0002_preset_owner
Revises: 0001_baseline
Create Date: 2026-12-08

``key_id`` is NULL for a preset made by the desktop, the CLI or a watch folder (the install's owner),
and for every preset saved before this revision: API keys read and use those, and cannot change them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_preset_owner"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("presets", sa.Column("key_id", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("presets", "key_id")
