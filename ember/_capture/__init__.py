"""ember.compile's capture and replay: ``capture.py`` records a call, ``program.py`` turns the
recording into straight-line code, ``compiled.py`` guards, caches and replays it."""
