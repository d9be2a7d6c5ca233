"""PyAV (FFmpeg's libraries): guarded input, stream pipelines, and LAME for MP3."""
