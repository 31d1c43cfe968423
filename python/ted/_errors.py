"""ted.Error and its subclasses, one per ted_status."""
from __future__ import annotations

from . import _capi


class Error(Exception):
    """A ted error: the C library's message (naming the file, key, tensor or
    option at fault); `status` is the ted_status number, `status_name` its
    short name ("I/O error", "bad argument"...)."""

    status: int = 0

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    @property
    def status_name(self) -> str:
        return _capi.lib.ted_status_name(self.status).decode()


class FileError(Error):
    """A file could not be opened, read or mapped (a missing model directory)."""
    status = _capi.ERR_IO


class FormatError(Error):
    """A file's content is malformed or truncated."""
    status = _capi.ERR_FORMAT


class ConfigError(Error):
    """config.yaml is invalid or inconsistent."""
    status = _capi.ERR_CONFIG


class WeightsError(Error):
    """A tensor is missing or has the wrong dtype or shape."""
    status = _capi.ERR_WEIGHTS


class VocabError(Error):
    """A vocabulary or SentencePiece file is invalid."""
    status = _capi.ERR_VOCAB


class InputError(Error):
    """A text or token ids are unusable (invalid UTF-8, too long...)."""
    status = _capi.ERR_INPUT


class OutOfMemoryError(Error):
    """An allocation failed or a size would overflow."""
    status = _capi.ERR_NOMEM


class ArgumentError(Error):
    """An option or argument is out of range or does not apply."""
    status = _capi.ERR_ARGUMENT


class CancelledError(Error):
    """A call stopped between decoding steps because its Translator was
    closed meanwhile (from another thread)."""
    status = _capi.ERR_CANCELLED


_BY_STATUS = {cls.status: cls for cls in (FileError, FormatError, ConfigError, WeightsError,
                                          VocabError, InputError, OutOfMemoryError,
                                          ArgumentError, CancelledError)}


def from_status(status: int, message: str) -> Error:
    """The Error subclass of `status`, carrying `message`."""
    return _BY_STATUS.get(status, Error)(message, status)


def check(status: int, err: _capi.Error_, prefix: str = "") -> None:
    """Raises the error `err` holds when `status` is not TED_OK."""
    if status == _capi.ERR_CANCELLED:
        # the package requests a call's flag when its Translator is closed
        # (Ctrl-C raises KeyboardInterrupt instead of this error)
        prefix = "the Translator was closed during the call: " + prefix
    if status != _capi.OK:
        raise from_status(status, prefix + err.message.decode("utf-8", "replace"))
