"""LibreTranslate for make bench-serve's comparison (bench/lt_bench.py), run
by the LibreTranslate virtualenv's Python:

    LT_VENV/bin/python bench/lt_server.py [--length-offset N] -- LIBRETRANSLATE_ARGS

Starts libretranslate.main.main() with LIBRETRANSLATE_ARGS, having changed
three things, offline necessities or alignments with ted's settings:

- Argos Translate's sentence splitter (minisbd) downloads its ONNX model on
  the first request; offline it fails, and the request answers 500. It is
  replaced by one that keeps each text whole: the bench's texts are one
  sentence each.
- --length-offset N (the random-weight model, which never chooses EOS):
  every translate_batch of CTranslate2 gets max_decoding_length = the
  longest source + N, the length bound ted's copy of the model gets
  (max_length_offset), so that both decode the same number of steps.
  Without it, CTranslate2's default bound (256 tokens) applies.
- waitress's connection_limit (100) and listen backlog become 4096, within
  the file limit, raised to its hard limit (wide_open below).
"""
import sys


def keep_whole():
    from argostranslate import sbd

    def split_sentences(self, text, *args, **kwargs):
        return [text]

    for name in dir(sbd):
        cls = getattr(sbd, name)
        if isinstance(cls, type) and hasattr(cls, "split_sentences"):
            cls.split_sentences = split_sentences


def bound_length(offset):
    import ctranslate2

    translate_batch = ctranslate2.Translator.translate_batch

    def bounded(self, source, *args, **kwargs):
        kwargs["max_decoding_length"] = max(len(s) for s in source) + 1 + offset
        return translate_batch(self, source, *args, **kwargs)

    ctranslate2.Translator.translate_batch = bounded


def wide_open():
    """waitress accepts at most 100 connections (connection_limit) and
    leaves the next ones unread in the listen queue until one closes: an
    open-loop client, which opens a connection for each request in flight,
    would see requests that never start. ted serve's bench runs with
    --max-connections-per-client 4096; waitress gets the same bound."""
    import resource
    import waitress

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    serve = waitress.serve

    def serve_wide(app, **kwargs):
        # below the file limit, as ted serve's --max-connections: past it
        # accept() fails and waitress stops listening
        kwargs.setdefault("connection_limit", min(4096, soft - 64))
        kwargs.setdefault("backlog", 4096)
        return serve(app, **kwargs)

    waitress.serve = serve_wide


def main():
    argv = sys.argv[1:]
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    keep_whole()
    wide_open()
    if "--length-offset" in own:
        bound_length(int(own[own.index("--length-offset") + 1]))
    sys.argv = ["libretranslate"] + rest
    from libretranslate.main import main as libretranslate_main
    libretranslate_main()


if __name__ == "__main__":
    main()
