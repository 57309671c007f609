"""ember.compile's capture and replay: ``capture.py`` records a call, ``program.py`` turns the
recording into straight-line code, ``guards.py`` says what a capture depends on besides its
inputs, ``compiled.py`` caches, checks and replays it."""
