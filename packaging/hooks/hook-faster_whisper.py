"""faster-whisper: its Silero VAD model (assets/, ~2 MB) is part of the engine, not an optional model.

The Whisper models themselves are never bundled: they live in <data dir>/models/whisper.
"""

from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("faster_whisper")
