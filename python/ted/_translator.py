"""ted.Translator: a loaded model, for applications and for learners."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import operator
import os
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_void_p
from dataclasses import dataclass, field
from typing import (Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union,
                    overload)

import numpy as np

from . import _capi, _shared
from ._errors import ArgumentError, InputError, check
from ._model import CLOSED, Call, Model

lib = _capi.lib

SEED_MAX = (1 << 64) - 1
THREADS_MAX = 256


def _bounds(option: int) -> Tuple[float, float, bool]:
    """(min, max, whether min itself is allowed) of a number option, from
    the library's option table (ted_option_bounds)."""
    low, high, included = ctypes.c_double(), ctypes.c_double(), ctypes.c_bool()
    lib.ted_option_bounds(option, byref(low), byref(high), byref(included))
    return low.value, high.value, included.value


def _words(option: int) -> List[str]:
    """The words of a word option, as the library's table spells them
    (ted_option_word), index = the setting."""
    words = []
    while True:
        word = lib.ted_option_word(option, len(words))
        if word is None:
            return words
        words.append(word.decode())


def _key(option: int) -> str:
    return lib.ted_option_key(option).decode()


MAX_LENGTH_MAX = int(_bounds(_capi.OPTION_MAX_LENGTH)[1])

# How this binding names the options in the library's messages
# (ted_error_spell_options): by the keyword arguments, which are the table's
# keys, sampling as sample=True.
_SPELLING = (ctypes.c_char_p * _capi.OPTION_COUNT)()
_SPELLING[_capi.OPTION_SAMPLE] = b"sample=True"


def _json_bool(word: str) -> Optional[bool]:
    """The bool a word reads as in JSON (the table's words of early_stopping
    that transformers' generate() takes as True and False), else None."""
    try:
        value = json.loads(word)
    except ValueError:
        return None
    return value if isinstance(value, bool) else None


def _word_setting(option: int, value: Any) -> Optional[int]:
    """The setting a word option's value gives: one of its words, or the
    bool a word reads as; None for any other value."""
    for setting, word in enumerate(_words(option)):
        if isinstance(value, str) and value == word:
            return setting
        if isinstance(value, bool) and _json_bool(word) is value:
            return setting
    return None


def _word_list(option: int) -> str:
    """The values a word option takes, as a message says them:
    False, True or 'never'."""
    spelled = [repr(w if _json_bool(w) is None else _json_bool(w)) for w in _words(option)]
    return ", ".join(spelled[:-1]) + " or " + spelled[-1]


def _code_bytes(code: Optional[str]) -> Optional[bytes]:
    return None if code is None else code.encode("utf-8")


def _uses_model(method: Any) -> Any:
    """The method runs as one call of the Translator's model (Model.enter):
    a closed Translator raises ted.ArgumentError, and close() waits for it."""
    @functools.wraps(method)
    def wrapper(self: "Translator", *args: Any, **kwargs: Any) -> Any:
        owner = self._loaded()
        call = owner.enter()
        try:
            return method(self, *args, **kwargs)
        finally:
            owner.leave(call)
    return wrapper


def _token_id(what: str, value: Any, count: int) -> int:
    """A token id: a whole number (int or a NumPy integer; else TypeError)
    from 0 to count - 1 (else ted.ArgumentError)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("%s: expected a token id (int), got %s" % (what, type(value).__name__))
    try:
        i = operator.index(value)
    except TypeError:
        raise TypeError("%s: expected a token id (int), got %s" %
                        (what, type(value).__name__)) from None
    if not 0 <= i < count:
        raise ArgumentError("%s: %d is not a token id of the vocabulary (0 to %d)" %
                            (what, i, count - 1))
    return i


def _no_nul(what: str, value: Union[str, bytes]) -> None:
    """Refuses a NUL character, which would end the string in C."""
    if ("\0" if isinstance(value, str) else b"\0") in value:
        raise ArgumentError("%s: %r contains a NUL character" % (what, value))


@dataclass
class Hypothesis:
    """One translation of one text.

    text: the translation; ids: its target token ids (EOS included when
    produced); tokens: their tokens; token_log_probs: the model's
    log-probability of each; log_prob: their sum; score: what ranks the
    n-best list (beam search: log_prob / lp(length); otherwise log_prob),
    as `ted translate --scores` prints them."""

    text: str
    ids: List[int]
    tokens: List[str]
    token_log_probs: List[float]
    log_prob: float
    score: float


@dataclass
class Candidate:
    """One of the top-k tokens of a step: its id, token, logit and
    probability (softmax of the logits); `why`: what a rule on the scores
    did to it, in the words of `ted step` ("banned: would repeat the
    2-gram 'le chat'"; "" when none changed it), and whether it `banned`
    it."""

    id: int
    token: str
    logit: float
    probability: float
    why: str = ""
    banned: bool = False


@dataclass
class Step:
    """One step of Translator.trace: the token fed (`input`, BOS first), the
    token chosen (forced or the most likely not banned), its probability,
    the top-k candidates, and this step's attention weights: decoder masked
    self-attention (layers, heads, step + 1) and encoder-decoder attention
    (layers, heads, source length)."""

    index: int
    input: int
    chosen: int
    token: str
    probability: float
    forced: bool
    candidates: List[Candidate]
    self_attention: np.ndarray
    cross_attention: np.ndarray


@dataclass
class Trace:
    """A greedy decode step by step (Translator.trace).

    source_ids / source_tokens: the source as the encoder saw it;
    ids / tokens: the target tokens chosen (EOS included when reached);
    text: their text; encoder_attention: (layers, heads, source, source);
    self_attention: (layers, heads, steps, steps), row t the query of step t
    over positions 0..t (zeros above the diagonal); cross_attention:
    (layers, heads, steps, source); steps: one Step each."""

    source_ids: List[int]
    source_tokens: List[str]
    ids: List[int]
    tokens: List[str]
    text: str
    encoder_attention: np.ndarray
    self_attention: np.ndarray
    cross_attention: np.ndarray
    steps: List[Step] = field(default_factory=list)


def _text_bytes(text: Union[str, bytes], what: str) -> bytes:
    """A text as the C library takes it: UTF-8 bytes. A str with lone
    surrogates (each encoded as its three bytes) and bytes that are not
    UTF-8 go through as they are, for the library to refuse with its
    message (ted.InputError); a NUL byte cannot."""
    if isinstance(text, str):
        data = text.encode("utf-8", "surrogatepass")
    elif isinstance(text, (bytes, bytearray)):
        data = bytes(text)
    else:
        raise TypeError("%s: expected str or bytes, got %s" % (what, type(text).__name__))
    if b"\0" in data:
        raise InputError("%s: contains a NUL byte" % what)
    return data


def _whole(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ArgumentError("%s: %r is not a whole number from %d to %d" %
                            (name, value, low, high))
    return value


def _number(name: str, value: Any, low: float, low_ok: bool, high: float) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = v == v and abs(v) != float("inf") and (v >= low if low_ok else v > low) \
            and v <= high
    if not ok:
        relation = ">=" if low_ok else ">"
        if high == float("inf"):
            raise ArgumentError("%s: %r is not a number %s %g" % (name, value, relation, low))
        raise ArgumentError("%s: %r is not a number %s %g and <= %g" %
                            (name, value, relation, low, high))
    v32 = float(np.float32(v))
    if v != 0 and (v32 == 0 or v32 == float("inf")):
        raise ArgumentError("%s: %r does not fit a float" % (name, value))
    return v


def _bad_words(key: str, value: Any) -> List[int]:
    """bad_words_ids [[5, 17], [9]] as ted_logits_rules.bad_words holds
    them: each sequence's ids, then -1 (the library checks the ids
    against the vocabulary)."""
    flat: List[int] = []
    if not isinstance(value, (list, tuple)):
        raise ArgumentError("%s: %r is not a list of lists of token ids" % (key, value))
    for sequence in value:
        if not isinstance(sequence, (list, tuple)) or not sequence or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= 2 ** 31 - 1
                for i in sequence):
            raise ArgumentError("%s: %r is not a non-empty list of token ids" % (key, sequence))
        flat += list(sequence) + [-1]
    if len(flat) > _capi.BAD_WORDS_MAX:
        raise ArgumentError("%s: %d ints, more than %d (each sequence's ids and one more)"
                            % (key, len(flat), _capi.BAD_WORDS_MAX))
    return flat


def _option_value(option: int, value: Any) -> Any:
    """A keyword argument as the C field of `option` takes it: a whole
    number or a number within the option table's bounds (its messages'
    wording; the library checks them again, with the rules between
    options), a word option's setting, a seed that fits a uint64."""
    key = _key(option)
    if option == _capi.OPTION_SAMPLE:
        return value
    if option == _capi.OPTION_SEED:
        return _whole(key, value, 0, SEED_MAX)
    if option in (_capi.OPTION_LENGTH_NORMALIZATION, _capi.OPTION_EARLY_STOPPING):
        setting = _word_setting(option, value)
        if setting is None:
            raise ArgumentError("%s: %r is not %s" % (key, value, _word_list(option)))
        return setting
    if option == _capi.OPTION_BAD_WORDS_IDS:
        return _bad_words(key, value)
    low, high, included = _bounds(option)
    if option in (_capi.OPTION_LENGTH_PENALTY, _capi.OPTION_TEMPERATURE, _capi.OPTION_TOP_P,
                  _capi.OPTION_REPETITION_PENALTY):
        return _number(key, value, low, included, high)
    return _whole(key, value, int(low), int(high))


class _Threads:
    """A pool of compute threads of the C library (ted_threads_new), freed
    with the last Translator (copies included) that computes on it."""

    def __init__(self, threads: int) -> None:
        self.pointer = c_void_p()
        err = _capi.Error_()
        check(lib.ted_threads_new(threads, byref(self.pointer), byref(err)), err)

    def count(self) -> int:
        return int(lib.ted_threads_count(self.pointer))

    @contextlib.contextmanager
    def bound(self) -> Iterator[None]:
        """The calling thread's computations on this pool, meanwhile
        (ted_threads_use); the pool it was bound to before afterwards."""
        before = lib.ted_threads_use(self.pointer)
        try:
            yield
        finally:
            lib.ted_threads_use(before)

    def __del__(self) -> None:
        if self.pointer:
            lib.ted_threads_free(self.pointer)


class Translator:
    """A ted model, loaded once: its config, its memory-mapped weights and
    its vocabularies, read-only and shared by every call.

    >>> t = ted.Translator("models/en-fr")
    >>> t.translate("The black cat eats the small bird.")
    'Le chat noir mange le petit oiseau.'

    Every call decodes through a session of its own and the C code runs
    without the GIL, so any number of Python threads may use one Translator
    at once. copy.copy and copy.deepcopy give other handles of the same
    loaded model (close() closes one; the last frees the model). `threads`:
    the threads of this Translator's own pool (ted_threads), which its calls
    compute on, beside other Translators' (at most the CPUs the process may
    use); None: the process's pool (one thread unless ted_set_threads sets
    it).
    Raises a ted.Error subclass, with the C library's message, when the
    model cannot be loaded."""

    def __init__(self, model_dir: Union[str, "os.PathLike[str]"],
                 threads: Optional[int] = None) -> None:
        self.model_dir = os.fspath(model_dir)
        _no_nul("model_dir", self.model_dir)
        if threads is not None:
            _whole("threads", threads, 1, THREADS_MAX)
        try:
            path = os.fsencode(self.model_dir)
        except UnicodeEncodeError as e:
            raise ArgumentError("model_dir: %r is not a file name (%s)" %
                                (self.model_dir, e.reason)) from None
        pointer = c_void_p()
        err = _capi.Error_()
        check(lib.ted_model_load(path, byref(pointer), byref(err)), err)
        self._owner = Model(pointer)
        self._open = True
        self._threads = _Threads(threads) if threads is not None else None
        text = lib.ted_config_json(lib.ted_model_config(pointer))
        if not text:
            raise MemoryError("ted: out of memory")
        try:
            self._config: Dict[str, Any] = json.loads(ctypes.string_at(text).decode())
        finally:
            lib.ted_free(text)
        model, tokenizer = self._config["model"], self._config["tokenizer"]
        self._vocab = int(model["tgt_vocab_size"])
        self._source_vocab = int(model["src_vocab_size"])
        self._bos = int(tokenizer.get("decoder_start_id", tokenizer["bos_id"]))
        self._eos = int(tokenizer["eos_id"])
        self._layers = (int(model["encoder_layers"]), int(model["decoder_layers"]))
        self._languages = self._find_languages()
        self._language_checks: Dict[Any, None] = {}

    @property
    def _model(self) -> Optional[int]:
        """The C model, while a call (Model.enter) holds it."""
        return self._owner.pointer

    def close(self) -> None:
        """Closes this Translator: its calls raise ted.ArgumentError from
        now on. The model is freed once no copy of it is open: the calls
        still running (on other threads) stop at their next decoding step
        with ted.CancelledError, and close() waits for them to end. It is
        freed when the Translator is garbage collected otherwise."""
        if self.__dict__.pop("_open", False):
            self._owner.release()

    def __copy__(self) -> "Translator":
        """Another handle of the same loaded model (not a second load):
        each closes alone, and the model is freed with the last."""
        owner = self._loaded()
        other = object.__new__(Translator)
        other.__dict__.update(self.__dict__)
        owner.share()
        other._open = True
        return other

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Translator":
        return self.__copy__()

    def __reduce__(self) -> Any:
        """Pickles as what reopens it: the model directory (absolute) and
        `threads`. Unpickling opens the model once per process and gives a
        handle of it (ted._shared.reopen), its weights mapped from the file."""
        self._loaded()
        threads = self.__dict__.get("_threads")
        return (_shared.reopen, (os.path.abspath(self.model_dir),
                                 threads.count() if threads else None))

    def __enter__(self) -> "Translator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the interpreter is shutting down
            pass

    def _loaded(self) -> Model:
        if not self.__dict__.get("_open"):
            raise ArgumentError(CLOSED)
        return self._owner

    def __repr__(self) -> str:
        return "ted.Translator(%r)" % self.model_dir

    # ---------------------------------------------------------------- model

    @property
    def config(self) -> Dict[str, Any]:
        """config.yaml as a dict, every key with its value (the defaults
        included): {"model": {...}, "weights": ..., "tokenizer": {...},
        "decoding": {...}} (docs/model-format.md)."""
        return json.loads(json.dumps(self._config))

    @property
    def languages(self) -> Dict[str, List[str]]:
        """The language codes the model translates from ("source") and into
        ("target"), as source_lang and target_lang take them
        (ted_model_languages): a multilingual model's codes ("eng_Latn",
        "fra" for Marian's >>fra<<), a bilingual model's source_lang and
        target_lang of config.yaml; empty where the model names none."""
        return {k: list(v) for k, v in self._languages.items()}

    def _find_languages(self) -> Dict[str, List[str]]:
        out = {}
        for kind, side in (("source", _capi.SIDE_SOURCE), ("target", _capi.SIDE_TARGET)):
            codes = POINTER(c_char_p)()
            count = lib.ted_model_languages(self._model, side, byref(codes))
            out[kind] = [codes[i].decode("utf-8", "replace") for i in range(count)]
        return out

    @property
    def kernels(self) -> str:
        """The kernel set that runs: "avx512", "avx2" or "portable"."""
        return lib.ted_cpu_kernels().decode()

    def _target_token(self, i: int) -> str:
        return lib.ted_target_token(self._model, i).decode("utf-8", "replace")

    def _source_token(self, i: int) -> str:
        return lib.ted_source_token(self._model, i).decode("utf-8", "replace")

    # ---------------------------------------------------------------- text

    def _prepare(self, text: Union[str, bytes], what: str, source_lang: Optional[str] = None,
                 target_lang: Optional[str] = None) -> _capi.Source:
        languages = self._language_codes(source_lang, target_lang)
        source = _capi.Source()
        err = _capi.Error_()
        check(lib.ted_prepare_source(self._model, _text_bytes(text, what), byref(languages),
                                     byref(source), byref(err)), err, what + ": ")
        return source

    @_uses_model
    def tokenize(self, text: Union[str, bytes], *, source_lang: Optional[str] = None,
                 target_lang: Optional[str] = None) -> List[int]:
        """The source token ids of `text`, as the encoder takes them: the
        config's normalizer and tokenizer, wrapped in BOS ... EOS as the
        config says, with the language code tokens of source_lang and
        target_lang where the config puts them in the source
        (ted_prepare_source; a code forced as the first target token is no
        source token). The languages are translate's. Unknown words are
        unk_id."""
        source = self._prepare(text, "text", source_lang, target_lang)
        try:
            return [source.ids[i] for i in range(source.count)]
        finally:
            lib.ted_source_free(byref(source))

    @_uses_model
    def tokenize_target(self, text: Union[str, bytes]) -> List[int]:
        """The target token ids of `text`, without BOS or EOS (what
        Translator.logits feeds)."""
        ids = POINTER(c_int)()
        count, unknown = c_int(), c_int()
        err = _capi.Error_()
        check(lib.ted_encode_target(self._model, _text_bytes(text, "target"), byref(ids),
                                    byref(count), byref(unknown), byref(err)), err, "target: ")
        try:
            return [ids[i] for i in range(count.value)]
        finally:
            lib.ted_free(ids)

    @_uses_model
    def detokenize(self, ids: Sequence[int]) -> str:
        """Target ids back to text (stops at EOS; BOS and padding are
        skipped), as translations are made. An id that is not a whole
        number raises TypeError; one outside the target vocabulary,
        ted.ArgumentError."""
        checked = [_token_id("ids[%d]" % k, i, self._vocab) for k, i in enumerate(ids)]
        array = (c_int * len(checked))(*checked)
        text = lib.ted_decode_target(self._model, array, len(checked))
        if not text:
            raise MemoryError("ted: out of memory")
        try:
            return ctypes.string_at(text).decode("utf-8", "replace")
        finally:
            lib.ted_free(text)

    @_uses_model
    def source_token(self, id: int) -> str:
        """The token of a source id (ted.ArgumentError outside the source
        vocabulary, TypeError for what is no whole number)."""
        return self._source_token(_token_id("id", id, self._source_vocab))

    @_uses_model
    def target_token(self, id: int) -> str:
        """The token of a target id (ted.ArgumentError outside the target
        vocabulary, TypeError for what is no whole number)."""
        return self._target_token(_token_id("id", id, self._vocab))

    # ---------------------------------------------------------- translation

    @_uses_model
    def options(self, *, beam_size: Optional[int] = None, n_best: int = 1,
                sample: bool = False, temperature: Optional[float] = None,
                top_k: Optional[int] = None, top_p: Optional[float] = None,
                seed: Optional[int] = None, max_length: Optional[int] = None,
                length_penalty: Optional[float] = None,
                length_normalization: Optional[str] = None,
                early_stopping: Union[bool, str, None] = None,
                batch_size: int = 32, repetition_penalty: Optional[float] = None,
                no_repeat_ngram_size: Optional[int] = None,
                min_length: Optional[int] = None, min_new_tokens: Optional[int] = None,
                bad_words_ids: Optional[List[List[int]]] = None,
                encoder_no_repeat_ngram_size: Optional[int] = None
                ) -> _capi.TranslateOptions:
        """The C options translate() decodes with: the model's config.yaml
        defaults (ted_translate_model_options) with the arguments applied,
        checked as `ted translate` checks its options."""
        values = {_capi.OPTION_BEAM_SIZE: beam_size, _capi.OPTION_N_BEST: n_best,
                  _capi.OPTION_MAX_LENGTH: max_length, _capi.OPTION_TOP_K: top_k,
                  _capi.OPTION_LENGTH_PENALTY: length_penalty,
                  _capi.OPTION_TEMPERATURE: temperature, _capi.OPTION_TOP_P: top_p,
                  _capi.OPTION_SEED: seed,
                  _capi.OPTION_LENGTH_NORMALIZATION: length_normalization,
                  _capi.OPTION_EARLY_STOPPING: early_stopping,
                  _capi.OPTION_SAMPLE: True if sample else None,
                  _capi.OPTION_REPETITION_PENALTY: repetition_penalty,
                  _capi.OPTION_NO_REPEAT_NGRAM_SIZE: no_repeat_ngram_size,
                  _capi.OPTION_MIN_LENGTH: min_length,
                  _capi.OPTION_MIN_NEW_TOKENS: min_new_tokens,
                  _capi.OPTION_BAD_WORDS_IDS: bad_words_ids,
                  _capi.OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE: encoder_no_repeat_ngram_size}
        values = {option: _option_value(option, value) for option, value in values.items()
                  if value is not None}
        o = lib.ted_translate_model_options(self._model)
        d = o.decode
        if _capi.OPTION_BEAM_SIZE in values:
            d.strategy = _capi.DECODE_BEAM
        elif sample:
            d.strategy = _capi.DECODE_SAMPLE
        fields = {_capi.OPTION_BEAM_SIZE: (d.beam, "beam_size"),
                  _capi.OPTION_LENGTH_PENALTY: (d.beam, "length_penalty"),
                  _capi.OPTION_LENGTH_NORMALIZATION: (d.beam, "length_normalization"),
                  _capi.OPTION_EARLY_STOPPING: (d.beam, "early_stopping"),
                  _capi.OPTION_TEMPERATURE: (d.sampling, "temperature"),
                  _capi.OPTION_TOP_K: (d.sampling, "top_k"),
                  _capi.OPTION_TOP_P: (d.sampling, "top_p"), _capi.OPTION_N_BEST: (d, "n_best"),
                  _capi.OPTION_MAX_LENGTH: (o, "max_length"),
                  _capi.OPTION_REPETITION_PENALTY: (d.rules, "repetition_penalty"),
                  _capi.OPTION_NO_REPEAT_NGRAM_SIZE: (d.rules, "no_repeat_ngram_size"),
                  _capi.OPTION_MIN_LENGTH: (d.rules, "min_length"),
                  _capi.OPTION_MIN_NEW_TOKENS: (d.rules, "min_new_tokens"),
                  _capi.OPTION_ENCODER_NO_REPEAT_NGRAM_SIZE:
                      (d.rules, "encoder_no_repeat_ngram_size")}
        for option, (struct, field) in fields.items():
            if option in values:
                setattr(struct, field, values[option])
        if _capi.OPTION_BAD_WORDS_IDS in values:
            flat = values[_capi.OPTION_BAD_WORDS_IDS]
            d.rules.bad_words_length = len(flat)
            d.rules.bad_words[:len(flat)] = flat
        d.sampling.seed = seed if seed is not None else int.from_bytes(os.urandom(8), "little")
        o.batch_size = _whole("batch_size", batch_size, 1, 4096)
        given = sum(1 << option for option in values)
        err = _capi.Error_()
        if lib.ted_translate_options_check_given(self._model, byref(o), given, byref(err)) and \
                err.option:
            lib.ted_error_spell_options(byref(err), _SPELLING)
        check(err.status, err)
        return o

    def _language_codes(self, source_lang: Optional[str],
                        target_lang: Optional[str]) -> _capi.Languages:
        """The languages of a call, checked: a code the model does not know,
        or none where the model needs one (a multilingual model's target
        language), raises ted.ArgumentError. The library decides what a
        model needs (ted_prepare_source of an empty text, once per pair)."""
        languages = _capi.Languages()
        languages.source = _code_bytes(self._check_language("source", source_lang))
        languages.target = _code_bytes(self._check_language("target", target_lang))
        if (source_lang, target_lang) not in self._language_checks:
            source = _capi.Source()
            err = _capi.Error_()
            status = lib.ted_prepare_source(self._model, b"", byref(languages), byref(source),
                                            byref(err))
            lib.ted_source_free(byref(source))
            if status == _capi.ERR_INPUT:
                raise ArgumentError(err.message.decode("utf-8", "replace"))
            check(status, err)
            self._language_checks[(source_lang, target_lang)] = None
        return languages

    def _check_language(self, kind: str, code: Optional[str]) -> Optional[str]:
        if code is None:
            return None
        if not isinstance(code, str):
            raise TypeError("%s_lang: expected a language code (str), got %s" %
                            (kind, type(code).__name__))
        _no_nul(kind + "_lang", code)
        known = self._languages[kind]
        if code not in known:  # an ISO code ("fr" for "fra_Latn"), or refused with a hint
            found = c_char_p()
            err = _capi.Error_()
            side = _capi.SIDE_SOURCE if kind == "source" else _capi.SIDE_TARGET
            if isinstance(code, str) and lib.ted_model_find_language(
                    self._model, side, _code_bytes(code), byref(found), byref(err)) == 0:
                return found.value.decode()
            raise ArgumentError("%s_lang: unknown language code %r: %s" %
                                (kind, code, err.message.decode("utf-8", "replace") or
                                 "a language code is a string"))
        return code

    @overload
    def translate(self, texts: str, **options: Any) -> Any: ...

    @overload
    def translate(self, texts: Sequence[str], **options: Any) -> List[Any]: ...

    @_uses_model
    def translate(self, texts: Union[str, bytes, Sequence[Union[str, bytes]]], *,
                  beam_size: Optional[int] = None, n_best: int = 1, sample: bool = False,
                  temperature: Optional[float] = None, top_k: Optional[int] = None,
                  top_p: Optional[float] = None, seed: Optional[int] = None,
                  max_length: Optional[int] = None, source_lang: Optional[str] = None,
                  target_lang: Optional[str] = None, return_scores: bool = False,
                  length_penalty: Optional[float] = None,
                  length_normalization: Optional[str] = None,
                  early_stopping: Union[bool, str, None] = None, batch_size: int = 32,
                  repetition_penalty: Optional[float] = None,
                  no_repeat_ngram_size: Optional[int] = None,
                  min_length: Optional[int] = None, min_new_tokens: Optional[int] = None,
                  bad_words_ids: Optional[List[List[int]]] = None,
                  encoder_no_repeat_ngram_size: Optional[int] = None) -> Any:
        """Translates a text (str in, str out) or a list of texts (a list out,
        in order), as `ted translate` does line by line.

        Defaults are the model's config.yaml `decoding:` section (else
        greedy). beam_size: beam search with that many hypotheses;
        sample=True: sampling, with temperature (> 0), top_k (0: all),
        top_p (0 < p <= 1) and seed (text i draws from stream i of the seed,
        as line i of `ted translate --seed`; None: a random seed); n_best: that
        many hypotheses per text (beam search, at most the beam, or
        sampling); max_length: at most that many tokens generated;
        length_penalty / length_normalization ("gnmt" or "power"): beam
        search's ranking; early_stopping (True, False or "never", as
        transformers' generate takes it, or "marian", Marian's beam search):
        when beam search stops.
        repetition_penalty (>= 0; 1: none), no_repeat_ngram_size (0: off)
        min_length (EOS counted; 0: off), min_new_tokens (EOS not counted;
        0: off), bad_words_ids (lists of target token ids never
        generated in that order) and encoder_no_repeat_ngram_size (no
        n-gram of the source ids; 0: off): the rules every strategy applies to its
        scores, as transformers' generate() does.
        source_lang / target_lang: a language code of
        Translator.languages (None: the model's only one; a multilingual
        model needs its target language), put where the model's config
        says (ted_prepare_source).

        With n_best > 1 each text gives a list of n_best Hypothesis objects,
        best first; with return_scores (and n_best 1) each text gives one
        Hypothesis. Raises ted.ArgumentError for a bad option and
        ted.InputError for an unusable text, with ted's message."""
        single = isinstance(texts, (str, bytes, bytearray))
        items = [texts] if single else list(texts)  # type: ignore[list-item]
        o = self.options(beam_size=beam_size, n_best=n_best, sample=sample,
                         temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                         max_length=max_length, length_penalty=length_penalty,
                         length_normalization=length_normalization,
                         early_stopping=early_stopping, batch_size=batch_size,
                         repetition_penalty=repetition_penalty,
                         no_repeat_ngram_size=no_repeat_ngram_size, min_length=min_length,
                         min_new_tokens=min_new_tokens, bad_words_ids=bad_words_ids,
                         encoder_no_repeat_ngram_size=encoder_no_repeat_ngram_size)
        o.languages = self._language_codes(source_lang, target_lang)
        data = [_text_bytes(t, "text %d" % i if not single else "text")
                for i, t in enumerate(items)]
        texts_only = not return_scores and n_best == 1
        o.decode.tokens_only = texts_only  # no scores returned: none computed
        results = self._translate_bytes(data, o, texts_only)
        if texts_only:
            out: List[Any] = results
        elif n_best == 1:
            out = [r[0] for r in results]
        else:
            out = results
        return out[0] if single else out

    def _translate_bytes(self, data: List[bytes], o: _capi.TranslateOptions,
                         texts_only: bool = False) -> List[Any]:
        """ted_translate_n_best: per text, its n-best Hypothesis list, or
        (texts_only) the best translation's text."""
        count = len(data)
        if count == 0:
            return []
        return self._owner.run(lambda call: self._translate_call(call, data, o, texts_only),
                               cancellable=True)

    def _translate_call(self, call: Call, data: List[bytes], o: _capi.TranslateOptions,
                        texts_only: bool) -> List[Any]:
        count, n_best = len(data), o.decode.n_best
        sources = (c_char_p * count)(*data)
        outputs = (_capi.Translation * (count * n_best))()
        err = _capi.Error_()
        translate_call = _capi.TranslateCall(ctypes.pointer(o), call.flag)
        with self._bound():
            status = lib.ted_translate_n_best_cancellable(self._model, sources, count,
                                                          byref(translate_call), outputs, None,
                                                          byref(err))
        check(status, err)
        try:
            if texts_only:
                return [ctypes.string_at(outputs[i * n_best].text).decode("utf-8", "replace")
                        for i in range(count)]
            return [[self._hypothesis(outputs[i * n_best + k]) for k in range(n_best)]
                    for i in range(count)]
        finally:
            lib.ted_translations_free(outputs, count * n_best)

    def _hypothesis(self, t: _capi.Translation) -> Hypothesis:
        h = t.hypothesis
        ids = [h.ids[k] for k in range(h.length)]
        return Hypothesis(text=ctypes.string_at(t.text).decode("utf-8", "replace"), ids=ids,
                          tokens=[self._target_token(i) for i in ids],
                          token_log_probs=[h.log_probs[k] for k in range(h.length)],
                          log_prob=h.log_prob, score=h.score)

    # -------------------------------------------------------------- learners

    def _cancellable(self, work: Any, *args: Any) -> Any:
        """work(call, *args) as one call of the model whose flag close()
        requests (the sessions of _session watch it)."""
        owner = self._loaded()
        call = owner.enter(cancellable=True)
        try:
            with self._bound():
                return work(call, *args)
        finally:
            owner.leave(call)

    def _bound(self) -> Any:
        """The calling thread on this Translator's pool, for a call (the
        process's pool without one)."""
        return self._threads.bound() if self._threads else contextlib.nullcontext()

    def _session(self, call: Call) -> c_void_p:
        session = c_void_p()
        err = _capi.Error_()
        check(lib.ted_session_new(self._model, byref(session), byref(err)), err)
        lib.ted_session_watch(session, call.flag)
        return session

    def logits(self, source: Union[str, bytes], target: Union[str, bytes], *,
               source_lang: Optional[str] = None,
               target_lang: Optional[str] = None) -> np.ndarray:
        """The decoder fed its start token (the config's decoder_start_id),
        the target language's code when the model forces one, and then
        `target`'s tokens, teacher-forced, with `source` encoded (languages
        as translate takes them): a float32 array (len(decoder input),
        target vocabulary), row i the logits that predict decoder input
        i + 1, the last row those that predict EOS. The same numbers `ted
        logits` prints."""
        return self._cancellable(self._logits, source, target, source_lang, target_lang)

    def _logits(self, call: Call, source: Union[str, bytes], target: Union[str, bytes],
                source_lang: Optional[str], target_lang: Optional[str]) -> np.ndarray:
        src = self._prepare(source, "source", source_lang, target_lang)
        session = c_void_p()
        try:
            if src.count == 0:
                raise InputError("source: the source is empty")
            target_ids = [src.prefix_ids[i] for i in range(src.prefix_count)]
            target_ids += self.tokenize_target(target)
            session = self._session(call)
            err = _capi.Error_()
            ids = (POINTER(c_int) * 1)(src.ids)
            check(lib.ted_session_encode(session, ids, byref(c_int(src.count)), 1,
                                         len(target_ids) + 1, byref(err)), err)
            out = np.empty((len(target_ids) + 1, self._vocab), dtype=np.float32)
            token = c_int(self._bos)
            logits = POINTER(c_float)()
            for t in range(len(target_ids) + 1):
                check(lib.ted_session_step(session, byref(token), byref(logits), byref(err)),
                      err)
                out[t] = np.ctypeslib.as_array(logits, (self._vocab,))
                if t < len(target_ids):
                    token.value = target_ids[t]
            return out
        finally:
            lib.ted_session_free(session)
            lib.ted_source_free(byref(src))

    def trace(self, source: Union[str, bytes], *, force: Optional[Mapping[int, int]] = None,
              top_k: int = 5, max_length: Optional[int] = None,
              source_lang: Optional[str] = None, target_lang: Optional[str] = None,
              **rules: Any) -> Trace:
        """The greedy decode of `source`, step by step, with every attention
        weight kept (as `ted attention` and the explorer show them).

        Steps count from 1, as `ted step --force N:TOKEN` and the explorer
        count them. Each step feeds the token chosen before (BOS first) and
        chooses the next: the most likely token that the rules leave, or
        force[step] when `force` (a dict {step: target id}) names the step.
        It stops at EOS or at the model's length limit (max_length: at most
        that many steps). Probabilities are the softmax of the logits; the
        top_k candidates are the most likely tokens, those a rule banned
        included (Candidate.why says which rule and why).
        source_lang / target_lang: as translate takes them; a target code
        the model forces is the first step's token unless `force` names
        step 1. `rules`: the rules on the scores as translate() takes them
        (repetition_penalty, no_repeat_ngram_size, min_length,
        min_new_tokens, bad_words_ids, encoder_no_repeat_ngram_size; the
        model's by default): the token chosen is the best they leave, and
        each candidate says what they did to it (Candidate.why). Returns a
        Trace."""
        allowed = {"repetition_penalty", "no_repeat_ngram_size", "min_length", "min_new_tokens",
                   "bad_words_ids", "encoder_no_repeat_ngram_size"}
        for name in rules:
            if name not in allowed:
                raise TypeError("trace() got an unexpected keyword argument %r" % name)
        chosen_rules = self.options(**rules).decode.rules
        forced: Dict[int, int] = {}
        _whole("top_k", top_k, 1, self._vocab)
        for step, token in dict(force or {}).items():
            _whole("force step", step, 1, MAX_LENGTH_MAX)
            for i, id in enumerate(self._forced_ids(step, token)):
                if step - 1 + i in forced:
                    raise ArgumentError("force[%d]: step %d is forced twice" % (step, step + i))
                forced[step - 1 + i] = id
        if max_length is not None:
            _whole("max_length", max_length, 1, MAX_LENGTH_MAX)
        return self._cancellable(self._trace, source, forced, top_k, max_length, source_lang,
                                 target_lang, chosen_rules)

    @_uses_model
    def _forced_ids(self, step: int, token: Union[int, str]) -> List[int]:
        """The ids force[step] forces from that step on: a target id, or a
        token or word as typed ("noire" on a SentencePiece model: "▁noire";
        a word of several pieces forces one a step), as ted step takes it."""
        if not isinstance(token, str):
            return [_whole("force[%d]" % step, token, 0, self._vocab - 1)]
        ids, count = (c_int * _capi.WORD_PIECES_MAX)(), c_int()
        err = _capi.Error_()
        if lib.ted_target_word(self._model, _text_bytes(token, "force[%d]" % step), ids,
                               _capi.WORD_PIECES_MAX, byref(count), byref(err)) != _capi.OK:
            raise ArgumentError("force[%d]: %s" % (step, err.message.decode("utf-8", "replace")))
        return list(ids[:count.value])

    def _trace(self, call: Call, source: Union[str, bytes], force: Dict[int, int], top_k: int,
               max_length: Optional[int], source_lang: Optional[str],
               target_lang: Optional[str], rules: _capi.LogitsRules) -> Trace:
        """trace(), `force` keyed by the step's index from 0: the C library's
        trace (ted_learn_start, ted_learn_advance of ted/learn.h), the one
        `ted step`, `ted attention` and the explorer run."""
        src = self._prepare(source, "source", source_lang, target_lang)
        trace = _capi.LearnTrace()
        try:
            if src.count == 0:
                raise InputError("source: the source is empty")
            err = _capi.Error_()
            status = lib.ted_learn_start(byref(trace), self._model, byref(src), max_length or 0,
                                         top_k, byref(err))
            if trace.session:
                lib.ted_session_watch(trace.session, call.flag)
            check(status, err)
            lib.ted_learn_use_rules(byref(trace), byref(rules))
            while not trace.finished:
                check(lib.ted_learn_advance(byref(trace), force.get(trace.count, -1),
                                            byref(err)), err)
            return self._trace_view(trace)
        finally:
            lib.ted_learn_end(byref(trace))
            lib.ted_source_free(byref(src))

    def _trace_view(self, trace: _capi.LearnTrace) -> Trace:
        """The Trace of a finished ted_learn_trace, its arrays copied out."""
        source_ids = [trace.source[i] for i in range(trace.source_len)]
        (encoder_layers, decoder_layers), S = self._layers, trace.source_len
        heads = int(self._config["model"]["heads"])
        encoder = np.array(np.ctypeslib.as_array(trace.encoder,
                                                 (encoder_layers, heads, S, S)), dtype=np.float32)
        n = trace.count
        steps = [self._trace_step(trace, t, (heads, S, trace.top_k)) for t in range(n)]
        chosen = [s.chosen for s in steps]
        self_att = np.zeros((decoder_layers, heads, n, n), dtype=np.float32)
        cross = np.zeros((decoder_layers, heads, n, S), dtype=np.float32)
        for t, s in enumerate(steps):
            self_att[:, :, t, :t + 1] = s.self_attention
            cross[:, :, t, :] = s.cross_attention
        return Trace(source_ids=source_ids, source_tokens=[self._source_token(i)
                                                           for i in source_ids],
                     ids=chosen, tokens=[self._target_token(i) for i in chosen],
                     text=self.detokenize(chosen), encoder_attention=encoder,
                     self_attention=self_att, cross_attention=cross, steps=steps)

    def _trace_step(self, trace: _capi.LearnTrace, t: int,
                    sizes: Tuple[int, int, int]) -> Step:
        """Step t (0-based) of a ted_learn_trace, its attention weights copied;
        sizes: (heads, source length, the candidates each step holds)."""
        layers, (heads, S, top_k) = self._layers[1], sizes
        s = trace.steps[t]
        words = ctypes.create_string_buffer(512)
        candidates = []
        for k in range(top_k):
            c, change = s.top[k], s.changes[k]
            why = lib.ted_learn_change_words(byref(trace), t, c.id, byref(change), words,
                                             len(words)).decode("utf-8", "replace")
            banned = (change.rule not in (_capi.LEARN_RULE_NONE, _capi.LEARN_RULE_REPETITION)
                      and change.rule < _capi.LEARN_RULE_FORCED_BOS)
            candidates.append(Candidate(id=c.id, token=self._target_token(c.id),
                                        logit=float(c.logit), probability=float(c.p),
                                        why=why, banned=banned))
        return Step(index=t + 1, input=s.input, chosen=s.chosen,
                    token=self._target_token(s.chosen), probability=float(s.taken.p),
                    forced=bool(s.forced), candidates=candidates,
                    self_attention=np.array(np.ctypeslib.as_array(s.self, (layers, heads, t + 1)),
                                            dtype=np.float32),
                    cross_attention=np.array(np.ctypeslib.as_array(s.cross, (layers, heads, S)),
                                             dtype=np.float32))

__all__ = ["Translator", "Hypothesis", "Trace", "Step", "Candidate"]
