"""FileKiln's tool catalogue: pure conversion code, no web, queue or Qt imports."""
