"""Input safety: what a file is (by content), and what it may not do (bombs, entities, playlists, page ranges)."""
