"""The service core: metadata, files, keys, jobs, queue, retention and signing."""
