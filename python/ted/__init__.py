"""ted: Transformer encoder-decoder translation, from Python.

    import ted
    translator = ted.Translator("models/en-fr")
    translator.translate("The black cat eats the small bird.")
    # 'Le chat noir mange le petit oiseau.'

A binding over libted.so through ctypes (the C library ships inside the
package; NumPy is the only Python dependency). The GIL is released during
every call into C. docs/python.md documents every name.
"""
from ._capi import library_path
from ._capi import library_version as __version__  # ted_version(): libted.so's
from ._errors import (ArgumentError, CancelledError, ConfigError, Error, FileError, FormatError,
                      InputError, OutOfMemoryError, VocabError, WeightsError)
from ._translator import Candidate, Hypothesis, Step, Trace, Translator

__all__ = ["Translator", "Hypothesis", "Trace", "Step", "Candidate", "Error", "FileError",
           "FormatError", "ConfigError", "WeightsError", "VocabError", "InputError",
           "OutOfMemoryError", "ArgumentError", "CancelledError", "library_path", "__version__"]

for _public in (Translator, Hypothesis, Trace, Step, Candidate, Error, FileError, FormatError,
                ConfigError, WeightsError, VocabError, InputError, OutOfMemoryError,
                ArgumentError, CancelledError):
    _public.__module__ = "ted"
del _public
