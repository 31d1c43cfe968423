# ted — build, test, install.
#   make                 libted.a and the ted program (build/)
#   make check           every test suite (tests/run-all.sh): unit (Criterion), CLI,
#                        the fuzz corpora replayed (fuzz/replay.sh), PyTorch parity,
#                        serve, deploy, browser, Python, example; CHECK_JOBS suites at
#                        once (default 2), SUITES="unit tests/cli/hostile.sh" only those.
#                        Installs nothing: it needs what make test-deps venv installs
#   make test            make test-deps (apt-get, through sudo, of the Debian packages
#                        that are missing), make venv (.venv), then make check
#   make check SAN=1     the same suites, built with AddressSanitizer + UBSan in a
#                        build of their own (build-san/); make test SAN=1 installs first
#   make check-san       in build-san/, the suites that exercise memory (SAN_SUITES):
#                        the unit tests, every fuzz harness over its corpus, the
#                        bad-input corpus, hostile files, bad command lines, decoding
#                        options, ted serve under load, against hostile
#                        clients, with documents and streams
#   make check-tsan      ThreadSanitizer (build-tsan/): the unit suites that compute or
#                        start threads (the worker pool, shared models, batch workers)
#                        and ted serve's load and stream tests; halts at the first race
#                        (tests/lib/tsan-suppressions.txt: what is left out, and why)
#   make fuzz-replay     each fuzz harness over fuzz/corpus/NAME once, any compiler
#                        (fuzz/replay.c in place of libFuzzer); SAN=1 under ASan + UBSan
#   .ci/run              make check, make check-san, make check-tsan, make valgrind
#   make install PREFIX=/usr/local   ted, libted.a, libted.so.VERSION (soname
#                        libted.so.MAJOR), the headers, ted.pc, ted(1), bash completion;
#                        make uninstall PREFIX=/usr/local removes them (DESTDIR too)
#   make test-distributed  ted.ray, ted.spark, ted.dask on local clusters (tests/distributed)
#   make python         build/libted.so, the library the Python package loads
#                        (pip install . builds it: docs/python.md)
#   make valgrind        ted and ted serve under valgrind memcheck (tests/valgrind.sh,
#                        tests/serve/valgrind.sh), with the AVX2 kernels (TED_CPU=avx2:
#                        memcheck cannot run AVX-512); fails when a check fails
#   make fuzz FUZZ_SECONDS=N   builds the libFuzzer harnesses of fuzz/ (build-fuzz/)
#                        and runs each, one after another, for N seconds (default
#                        60; FUZZ_TARGETS="config vocab" runs only those). Needs clang
#                        and its runtimes, which make test does not:
#                        apt-get install clang libclang-rt-14-dev

PYTHON ?= /usr/bin/python3
PREFIX ?= /usr/local
CC ?= cc
CXX ?= c++

ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT ?= -O1
else ifeq ($(TSAN),1)
BUILD ?= build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT ?= -O1
else
BUILD ?= build
SANFLAGS :=
OPT ?= -O2
endif

# ICU's character classes split text for the bpe tokenizer (src/io/bpe.c).
DEPS := yaml-0.1 libcjson sentencepiece libmicrohttpd icu-uc
# What the front ends alone use, linked into the program and the unit tests,
# not into libted: the documents of src/document/ (sentences with ICU's
# BreakIterator, HTML with libxml2's parser) and ted serve's language
# detection (libexttextcat).
FRONT_END_DEPS := icu-i18n libxml-2.0 libexttextcat
DEP_CFLAGS := $(shell pkg-config --cflags $(DEPS) $(FRONT_END_DEPS) 2>/dev/null)
DEP_LIBS := $(shell pkg-config --libs $(DEPS) 2>/dev/null)
FRONT_END_LIBS := $(shell pkg-config --libs $(FRONT_END_DEPS) 2>/dev/null)
CRITERION_LIBS := $(shell pkg-config --libs criterion 2>/dev/null)

# No -march: one binary runs on any CPU of its architecture and picks its
# kernels at run time (below). CFLAGS="-O2 -g -march=native" make builds for
# this machine only.
CFLAGS ?= $(OPT) -g
CFLAGS += -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wshadow -Wstrict-prototypes \
          -Iinclude -Isrc $(DEP_CFLAGS) $(SANFLAGS) -MMD -MP
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -Iinclude -Isrc $(DEP_CFLAGS) $(SANFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
LDLIBS := $(DEP_LIBS) -lstdc++ -lm -lpthread

LIB_SRC := $(wildcard src/core/*.c src/kernels/*.c src/layers/*.c src/model/*.c src/io/*.c src/learn/*.c) \
           $(wildcard src/io/*.cc)
CLI_SRC := $(wildcard src/cli/*.c src/serve/*.c src/frontend/*.c src/document/*.c)
DOCUMENT_SRC := $(wildcard src/document/*.c)
TEST_SRC := $(wildcard tests/unit/*.c)
EXAMPLE_SRC := $(wildcard examples/*.c)

LIB_OBJ := $(patsubst %.cc,$(BUILD)/%.o,$(LIB_SRC:%.c=$(BUILD)/%.o))

# The kernels of src/kernels/variant/ are compiled once per instruction set,
# each copy with its flags and its own names (src/kernels/variants.h);
# src/kernels/dispatch.c picks one at run time from what the CPU offers.
# -ffp-contract=fast lets the sets with FMA fuse a * b + c in the kernels
# (-std=c11 alone forbids it); the rest of the code is compiled without
# it, so its results do not depend on which CPU the compiler targets.
KERNEL_SRC := $(wildcard src/kernels/variant/*.c)
KERNEL_VARIANTS := portable
KERNEL_FLAGS_portable :=
ifneq ($(filter x86_64-%,$(shell $(CC) -dumpmachine)),)
KERNEL_VARIANTS += avx2 avx512
KERNEL_FLAGS_avx2 := -mavx2 -mfma
KERNEL_FLAGS_avx512 := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma
endif
KERNEL_OBJ := $(foreach v,$(KERNEL_VARIANTS),\
                $(KERNEL_SRC:src/kernels/variant/%.c=$(BUILD)/src/kernels/$(v)/%.o))
LIB_OBJ += $(KERNEL_OBJ)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
# The explorer's page (src/serve/explorer/) is built into the program by
# src/serve/explorer_assets.S (.incbin): no tool beyond the assembler.
EXPLORER_ASSETS := $(wildcard src/serve/explorer/*)
CLI_OBJ += $(BUILD)/src/serve/explorer_assets.o
# docs/openapi.yaml, served at /openapi.yaml, built in the same way.
CLI_OBJ += $(BUILD)/src/serve/openapi_asset.o
# The language profiles of libexttextcat (ted serve's language detection).
TEXTCAT_PROFILES := $(shell pkg-config --variable=pkgdatadir libexttextcat 2>/dev/null)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
ifeq ($(TSAN),1)
TEST_OBJ += $(BUILD)/tests/lib/tsan_criterion.o
endif

LIB := $(BUILD)/libted.a
BIN := $(BUILD)/ted
# the ted that the tests and benches run: TED=PATH on the command line runs
# another (make valgrind TED=/usr/local/bin/ted) and leaves it as it is
TED := $(BIN)
UNIT := $(BUILD)/unit-tests
# examples/NAME.c -> $(BUILD)/example-NAME, each against libted.a alone
EXAMPLE := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/example-%)
NORMALIZE_CHECK := $(BUILD)/normalize-check
DOCUMENT_CHECK := $(BUILD)/document-check
MARIAN_CHECK := $(BUILD)/marian-check

.PHONY: all test check check-san check-san-run check-tsan check-tsan-run fuzz-replay test-unit test-distributed demo install clean deps test-deps venv toy-model natural-model multi-model eval-multi eval bench bench-run bench-big bench-shortlist bench-serve bench-serve-run bench-serve-lt fuzz valgrind
all: $(LIB) $(BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/src/serve/explorer_assets.o: src/serve/explorer_assets.S $(EXPLORER_ASSETS)
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

$(BUILD)/src/serve/openapi_asset.o: src/serve/openapi_asset.S docs/openapi.yaml
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@

$(BUILD)/src/serve/detect.o: CFLAGS += -DSERVE_PROFILES='"$(TEXTCAT_PROFILES)"'

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

define KERNEL_VARIANT_RULE
$(BUILD)/src/kernels/$(1)/%.o: src/kernels/variant/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -ffp-contract=fast $$(KERNEL_FLAGS_$(1)) -DTED_VARIANT=$(1) -c $$< -o $$@
endef
$(foreach v,$(KERNEL_VARIANTS),$(eval $(call KERNEL_VARIANT_RULE,$(v))))

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ $(FRONT_END_LIBS) $(LDLIBS) -o $@

# The unit tests link the documents of src/document/ too (tests/unit/test_document.c).
$(UNIT): $(TEST_OBJ) $(DOCUMENT_SRC:%.c=$(BUILD)/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ $(CRITERION_LIBS) $(FRONT_END_LIBS) $(LDLIBS) -o $@

$(BUILD)/example-%: examples/%.c $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# libted.so, for the Python package (python/ted, docs/python.md): the
# library's objects compiled again with -fPIC into $(BUILD)/pic/, each
# kernel set with its flags, linked with the libraries libted needs.
# -fno-semantic-interposition: calls inside the library are direct (and may be
# inlined) as in libted.a, not through the PLT. -fvisibility=hidden: it
# exports the functions include/ted/*.h marks TED_API, and no other
# (tests/cli/api.sh checks).
PIC_FLAGS := -fPIC -fno-semantic-interposition -fvisibility=hidden
PIC_OBJ := $(patsubst $(BUILD)/%,$(BUILD)/pic/%,$(LIB_OBJ))
SHARED := $(BUILD)/libted.so
.PHONY: python bench-python

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PIC_FLAGS) -c $< -o $@

$(BUILD)/pic/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(PIC_FLAGS) -c $< -o $@

define PIC_KERNEL_RULE
$(BUILD)/pic/src/kernels/$(1)/%.o: src/kernels/variant/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(PIC_FLAGS) -ffp-contract=fast $$(KERNEL_FLAGS_$(1)) -DTED_VARIANT=$(1) -c $$< -o $$@
endef
$(foreach v,$(KERNEL_VARIANTS),$(eval $(call PIC_KERNEL_RULE,$(v))))

# Installed as libted.so.VERSION with the soname libted.so.MAJOR; the
# Python package loads build/libted.so by its path.
TED_VERSION := $(shell sed -n 's/^\#define TED_VERSION "\(.*\)"/\1/p' include/ted/ted.h)
TED_SOMAJOR := $(firstword $(subst ., ,$(TED_VERSION)))

# The version script keeps the rest local: the instances of C++ templates
# (std::vector<std::string>...) that src/io/*.cc makes, which the C++
# headers declare visible whatever -fvisibility says.
$(SHARED): $(PIC_OBJ)
	printf '{ global: ted_*; local: *; };\n' >$(BUILD)/pic/libted.map
	$(CC) -shared $(LDFLAGS) $^ $(LDLIBS) -Wl,-soname,libted.so.$(TED_SOMAJOR) \
	    -Wl,--version-script=$(BUILD)/pic/libted.map -o $@

# `make python`: the shared library the package loads (pip install . builds it too)
python: $(SHARED)

-include $(PIC_OBJ:.o=.d)

# The Python package's overhead: one short sentence through Python against
# the C API (tests/python/overhead.c), the test set against ted translate,
# eight Python threads against one.
bench-python: all $(SHARED)
	PYTHONPATH=python TED_LIBRARY=$(SHARED) TED=$(TED) BUILD=$(BUILD) \
	    $(PYTHON) tests/python/test_package.py overhead throughput threads

# tests/parity/test_normalize.py's way into src/io/normalize.c
$(NORMALIZE_CHECK): tests/parity/normalize_check.c tests/lib/records.c $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# tests/parity/test_marian_files.py's way into src/io/marian_file.c
$(MARIAN_CHECK): tests/parity/marian_check.c $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# tests/cli/html_markup.py's way into src/document
$(DOCUMENT_CHECK): tests/cli/document_check.c tests/lib/records.c \
                   $(DOCUMENT_SRC:%.c=$(BUILD)/%.o) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(FRONT_END_LIBS) $(LDLIBS) -o $@

# Installs the Debian packages ted needs (apt-get), if any are missing:
# `deps` what running needs, `test-deps` also what the tests need.
deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

# The test-only Python packages (tests/requirements.txt: Hugging Face
# transformers as the reference for Marian models, sacremoses) live in a
# virtualenv over Debian's Python packages; the runtime never needs them.
VENV ?= .venv
VENV_PYTHON := $(VENV)/bin/python
$(VENV)/installed: tests/requirements.txt
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV_PYTHON) -m pip install -q --disable-pip-version-check -r tests/requirements.txt
	@touch $@

venv: $(VENV)/installed

# The replay of the fuzz corpora (fuzz/replay.sh, a suite of make check):
# each harness of fuzz/ linked with fuzz/replay.c's main() in place of
# libFuzzer, into $(BUILD)/fuzz-replay/NAME, with the flags of $(BUILD) (gcc
# with ASan + UBSan under SAN=1); it feeds the harness every file of
# fuzz/corpus/NAME/ (written by fuzz/make_seeds.py). The front ends' objects
# (serve, documents) go into an archive, so each takes only what it uses.
REPLAY_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
REPLAY := $(REPLAY_NAMES:%=$(BUILD)/fuzz-replay/%)
REPLAY_FRONT := $(BUILD)/fuzz/front-ends.a
$(REPLAY_FRONT): $(filter-out $(BUILD)/src/cli/%,$(CLI_OBJ))
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fuzz-replay/%: $(BUILD)/fuzz/fuzz_%.o $(BUILD)/fuzz/replay.o $(REPLAY_FRONT) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(FRONT_END_LIBS) $(LDLIBS) -o $@

-include $(REPLAY_NAMES:%=$(BUILD)/fuzz/fuzz_%.d) $(BUILD)/fuzz/replay.d
.SECONDARY: $(REPLAY_NAMES:%=$(BUILD)/fuzz/fuzz_%.o) $(BUILD)/fuzz/replay.o

fuzz-replay: $(REPLAY)
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh fuzz/replay.sh

# `test` installs missing packages first, then re-reads this Makefile so the
# pkg-config flags see them. `check` is the runner alone: it installs nothing.
test: test-deps
	@$(MAKE) --no-print-directory venv check

# CHECK_JOBS suites run at once; SUITES="unit tests/cli/hostile.sh ..." runs
# only those (tests/run-all.sh names them).
CHECK_JOBS ?= 2
SUITES ?=
RUN_ALL = PYTHON=$(PYTHON) TEST_PYTHON=$(VENV_PYTHON) BUILD=$(BUILD) tests/run-all.sh -j $(CHECK_JOBS)
check: all $(UNIT) $(EXAMPLE) $(NORMALIZE_CHECK) $(DOCUMENT_CHECK) $(MARIAN_CHECK) $(SHARED) $(REPLAY)
	@SAN=$(SAN) $(RUN_ALL) $(SUITES)

# make check-san: the suites that exercise memory, built with ASan + UBSan
# (build-san/): the unit tests, the fuzz corpora, the bad-input corpus
# and hostile files, ted serve under load and against hostile clients.
SAN_SUITES := unit fuzz/replay.sh tests/cli/bad_inputs.sh tests/cli/hostile.sh \
              tests/cli/errors.sh tests/cli/decoding.sh \
              tests/serve/test_serve.py tests/serve/test_hostile.py \
              tests/serve/test_documents.py tests/serve/test_stream.py
check-san:
	@$(MAKE) --no-print-directory SAN=1 check-san-run

check-san-run: all $(UNIT) $(REPLAY)
	@SAN=1 $(RUN_ALL) $(SAN_SUITES)

# make check-tsan: the unit tests and ted serve's load tests built with
# ThreadSanitizer (build-tsan/): the worker pool of src/kernels/parallel.c,
# the threads of a served model (tests/lib/tsan-suppressions.txt names what
# is left out, and why). SAN=1 scales the load down for the tests.
TSAN_SUITES := unit tests/serve/test_serve.py tests/serve/test_stream.py
check-tsan:
	@$(MAKE) --no-print-directory TSAN=1 check-tsan-run

TSAN_UNIT_FILTER := !(config/*|hash/*|normalize/*|normalized_tokenizer/*|safetensors/*|tokenizer/*|vocab/*|document/*|sentences/*|decoding/sampled_*)
check-tsan-run: all $(UNIT)
	@SAN=1 UNIT_FILTER='$(TSAN_UNIT_FILTER)' TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 \
	    suppressions=$(CURDIR)/tests/lib/tsan-suppressions.txt $(TSAN_OPTIONS)" \
	    $(RUN_ALL) $(TSAN_SUITES)

# The quick start: translate a few sentences with the shipped model.
demo: deps
	@$(MAKE) --no-print-directory all
	$(TED) translate -m models/toy-en-fr $(DEMO_TEXT)

test-unit: $(UNIT)
	$(UNIT)

# ted.ray, ted.spark and ted.dask on local clusters (tests/distributed; make
# check runs them too)
test-distributed: $(BIN) $(SHARED)
	@$(RUN_ALL) tests/distributed/test_*.py

# ted(1), from the program's --help and each command's (scripts/make-man.sh)
MAN := $(BUILD)/ted.1
$(MAN): $(BIN) scripts/make-man.sh
	scripts/make-man.sh $(BIN) >$@.tmp && mv $@.tmp $@

# Every file install writes, relative to $(DESTDIR)$(PREFIX); uninstall
# removes these and the directories of ted's own.
INSTALLED := bin/ted lib/libted.a lib/libted.so lib/libted.so.$(TED_SOMAJOR) \
	lib/libted.so.$(TED_VERSION) lib/pkgconfig/ted.pc share/man/man1/ted.1 \
	share/bash-completion/completions/ted $(wildcard include/ted/*.h)
INSTALL_DIRS := bin lib/pkgconfig include/ted share/man/man1 share/bash-completion/completions
.PHONY: uninstall

install: all $(SHARED) $(MAN)
	install -d $(INSTALL_DIRS:%=$(DESTDIR)$(PREFIX)/%)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ted
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libted.a
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/libted.so.$(TED_VERSION)
	ln -sf libted.so.$(TED_VERSION) $(DESTDIR)$(PREFIX)/lib/libted.so.$(TED_SOMAJOR)
	ln -sf libted.so.$(TED_SOMAJOR) $(DESTDIR)$(PREFIX)/lib/libted.so
	install -m 644 include/ted/*.h $(DESTDIR)$(PREFIX)/include/ted/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TED_VERSION)|' \
	    ted.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ted.pc
	install -m 644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/ted.1
	install -m 644 scripts/ted-completion.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ted

uninstall:
	rm -f $(INSTALLED:%=$(DESTDIR)$(PREFIX)/%)
	rmdir $(DESTDIR)$(PREFIX)/include/ted 2>/dev/null || true

clean:
	rm -rf build build-san build-tsan build-fuzz build-valgrind

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# The shipped toy model: `make eval` translates its held-out test set with
# ted and scores it; `make toy-model` regenerates the data, trains (about 11
# minutes on one core) and exports it into models/toy-en-fr.
TOY := models/toy-en-fr
eval: all
	@mkdir -p $(BUILD)/toy
	$(TED) translate -m $(TOY) --batch-size 32 < $(TOY)/test.en > $(BUILD)/toy/test.ted.fr
	$(PYTHON) tools/toy/evaluate.py $(BUILD)/toy/test.ted.fr $(TOY)/test.fr

toy-model:
	@mkdir -p $(BUILD)/toy
	$(PYTHON) tools/toy/generate.py --out $(BUILD)/toy
	$(PYTHON) tools/toy/train.py --data $(BUILD)/toy > $(BUILD)/toy/train.out
	$(PYTHON) tools/export_torch.py $(BUILD)/toy/model.pt --src-vocab $(BUILD)/toy/vocab.en \
	    --tgt-vocab $(BUILD)/toy/vocab.fr --heads 4 --lowercase --out $(TOY)

# The natural-text model (models/en-fr, Marian layout with SentencePiece):
# `make natural-model` regenerates the data in natural form, trains the
# SentencePiece models, trains a MarianMTModel with transformers (the test
# virtualenv; two runs, the second continuing the first at a lower learning
# rate: about 25 minutes on one free core) and exports it.
NATURAL := $(BUILD)/toy/natural
NATURAL_TRAIN := nice -n 5 $(VENV_PYTHON) tools/toy/train_marian.py --data $(NATURAL) \
                 --spm $(NATURAL)/spm
natural-model: venv
	$(PYTHON) tools/toy/generate.py --out $(NATURAL)/tokenized --test-out $(NATURAL)/tokenized
	$(PYTHON) tools/toy/naturalize.py --out $(NATURAL) --test-out models/en-fr
	$(PYTHON) tools/toy/train_spm.py --data $(NATURAL) --out $(NATURAL)/spm
	$(NATURAL_TRAIN) --max-steps 2500 --out $(NATURAL)/hf-first > $(NATURAL)/train-first.out
	$(NATURAL_TRAIN) --init-from $(NATURAL)/hf-first --lr 3e-4 --warmup 100 --epochs 0.6 \
	    --seed 2 --out $(NATURAL)/hf > $(NATURAL)/train.out
	rm -rf $(NATURAL)/export
	$(PYTHON) tools/export_hf.py $(NATURAL)/hf --out $(NATURAL)/export
	cp $(NATURAL)/export/* models/en-fr/

# The multilingual model (models/multi-en-fr-es, NLLB layout): `make multi-model`
# regenerates the data with Spanish, trains the SentencePiece model and an
# M2M100ForConditionalGeneration with transformers (the test virtualenv; about
# 40 minutes on a shared core), exports it and writes the test sets;
# `make eval-multi` prints ted's exact match per direction.
MULTI := $(BUILD)/toy/multi
MULTI_MODEL := models/multi-en-fr-es
multi-model: venv
	$(PYTHON) tools/toy/generate.py --es --out $(MULTI)/tokenized --test-out $(MULTI)/tokenized
	$(PYTHON) tools/toy/naturalize.py --es --tokenized $(MULTI)/tokenized --out $(MULTI) \
	    --test-out $(MULTI)
	nice -n 5 $(VENV_PYTHON) tools/toy/train_multilingual.py --data $(MULTI) --out $(MULTI)/hf \
	    > $(MULTI)/train.out
	rm -rf $(MULTI)/export
	$(PYTHON) tools/export_hf.py $(MULTI)/hf --out $(MULTI)/export \
	    --languages "$$(cat $(MULTI)/hf/languages.txt)"
	cp $(MULTI)/export/* $(MULTI_MODEL)/
	for lang in en:eng_Latn fr:fra_Latn es:spa_Latn; do \
	    cp $(MULTI)/test.$${lang%%:*} $(MULTI_MODEL)/test.$${lang#*:}; done

eval-multi: all
	$(PYTHON) tools/toy/evaluate_multilingual.py --ted $(TED) --model $(MULTI_MODEL)

# The T5 model (models/t5-en-fr-es, T5 v1.1's layout, three tasks named by a
# text prefix): `make t5-model` regenerates the data with Spanish, trains a
# T5ForConditionalGeneration with transformers (the test virtualenv; about 19
# minutes on one core), exports it with bfloat16 weights and keeps the
# transformers checkpoint (hf/) and the first 300 test sentences beside it.
T5 := $(BUILD)/toy/t5
T5_MODEL := models/t5-en-fr-es
.PHONY: t5-model
T5_HF_FILES := config.json generation_config.json model.safetensors spiece.model \
               tokenizer_config.json special_tokens_map.json added_tokens.json
t5-model: venv all
	$(PYTHON) tools/toy/generate.py --es --out $(T5)/tokenized --test-out $(T5)/tokenized
	$(PYTHON) tools/toy/naturalize.py --es --tokenized $(T5)/tokenized --out $(T5) --test-out $(T5)
	nice -n 5 $(VENV_PYTHON) tools/train_t5.py --data $(T5) --out $(T5)/hf > $(T5)/train.out
	rm -rf $(T5)/export $(T5)/bf16
	$(PYTHON) tools/export_hf.py $(T5)/hf --out $(T5)/export
	$(TED) quantize --dtype bf16 $(T5)/export $(T5)/bf16
	mkdir -p $(T5_MODEL)/hf
	cp $(T5)/bf16/* $(T5_MODEL)/
	for f in $(T5_HF_FILES); do cp $(T5)/hf/$$f $(T5_MODEL)/hf/; done
	for lang in en fr es; do head -n 300 $(T5)/test.$$lang > $(T5_MODEL)/test.$$lang; done

# ted against PyTorch (float32 and quantize_dynamic int8) and CTranslate2 on the
# same Transformer-base-sized Marian checkpoint (bench/run.py), then the
# real-size check: ted fp32 and int8 on a model of NLLB-200-distilled-600M's
# shape (bench/make_nllb_model.py; built and converted once, kept in
# $(BUILD)/bench/nllb*). Writes $(BUILD)/bench/results.json and
# $(BUILD)/bench/table.md. BENCH_ARGS: options of bench/run.py, e.g. --quick (one
# timed run of everything), --no-nllb, --nllb-only. Then the real-size
# families against CTranslate2 and MADLAD-400-3B's shape in int8
# (bench/families.py; FAMILIES_ARGS, e.g. --quick, --no-madlad). Its Python
# packages (bench/requirements.txt) go into the test virtualenv.
BENCH_MACHINE := $(BUILD)/bench-machine
BENCH_CFLAGS := -O3 -march=native -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
                $(shell pkg-config --cflags openblas 2>/dev/null)
BENCH_LIBS := $(shell pkg-config --libs openblas 2>/dev/null) -lpthread
BENCH_ARGS ?=
FAMILIES_ARGS ?=

$(VENV)/bench-installed: bench/requirements.txt $(VENV)/installed
	$(VENV_PYTHON) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $@

# Like `test`: the packages first (OpenBLAS, PyTorch), then a fresh read of
# this Makefile for their pkg-config flags.
bench: test-deps
	@$(MAKE) --no-print-directory bench-run

bench-run: all $(VENV)/bench-installed
	$(CC) $(BENCH_CFLAGS) bench/machine.c $(BENCH_LIBS) -o $(BENCH_MACHINE)
	BUILD=$(BUILD) BENCH_MACHINE=$(BENCH_MACHINE) $(VENV_PYTHON) bench/run.py --no-build \
	    $(BENCH_ARGS)
	BUILD=$(BUILD) $(VENV_PYTHON) bench/families.py --ted $(TED) $(FAMILIES_ARGS)
	@$(MAKE) --no-print-directory bench-python
	@$(MAKE) --no-print-directory bench-shortlist
	@$(MAKE) --no-print-directory bench-marian
	@$(MAKE) --no-print-directory bench-big

# Real sizes (bench/big.py): NLLB-200-distilled-1.3B's and NLLB-200-3.3B's
# shapes, random weights from a fixed seed, in float32 (where memory holds it),
# bf16, int8 and int4 (portable and mapped): load time, peak RSS, tokens/s at
# batch 1 and 16 on one and two threads, the fraction of the read bandwidth
# bench-machine measures; CTranslate2's int8 beside them. BIG_ARGS: options of
# bench/big.py, e.g. --shape 3.3b. Models kept in $(BUILD)/bench/big/SHAPE
# (about 14 and 33 GiB); the tables in $(BUILD)/bench/big/table.md.
bench-big: all $(VENV)/bench-installed
	$(CC) $(BENCH_CFLAGS) bench/machine.c $(BENCH_LIBS) -o $(BENCH_MACHINE)
	nice $(VENV_PYTHON) bench/big.py --ted $(TED) --machine $(BENCH_MACHINE) --ct2 \
	    --out $(BUILD)/bench/big $(BIG_ARGS)

# The vocabulary shortlist (bench/shortlist.py): exact match and chrF of the
# shipped models with and without a shortlist built from their training data
# (regenerated into $(BUILD)/toy when missing), and tokens/s on the bench
# checkpoint at batch 1 and 32 with and without one.
bench-shortlist: all $(VENV)/installed
	BUILD=$(BUILD) $(VENV_PYTHON) bench/shortlist.py --ted $(TED)

# ted against Marian itself (bench/marian_bench.py): pymarian's Translator and
# ted's Python package in one process on random Bergamot-shaped models (tiny and
# base, SSRU decoder, 32 000 pieces; float32 and pymarian convert's intgemm8,
# with and without a binary shortlist), beam 1, batch 1 and 32, 1 and 2 threads:
# words/s, medians. Models kept in $(BUILD)/bench/marian-native, the table in
# its table.md. MARIAN_BENCH_ARGS: --quick (the default: 16 and 64 sentences,
# about 10 minutes on 2 busy cores); empty for 64 and 256.
.PHONY: bench-marian
MARIAN_BENCH_ARGS ?= --quick
bench-marian: all $(SHARED) $(VENV)/installed
	BUILD=$(BUILD) TED_LIBRARY=$(SHARED) $(VENV_PYTHON) bench/marian_bench.py \
	    $(MARIAN_BENCH_ARGS)

# ted serve under open-loop load (bench/serve_bench.py): unloaded latency,
# saturation throughput, then Poisson arrivals at 50% and 80% of it (p50 and
# p99 of short and long sentences), on the toy model and on make bench's
# Transformer-base checkpoint (random weights: greedy, source tokens + 4
# target tokens a sentence); then against LibreTranslate (bench-serve-lt).
bench-serve: test-deps
	@$(MAKE) --no-print-directory bench-serve-run

# Open-loop latency (bench/serve_bench.py): the toy model, then the
# Transformer-base checkpoint of make bench in float32 and in int8; then what
# the batching policy alone allows at int8's step costs (bench/queue_model.py).
bench-serve-run: all $(VENV)/installed
	$(VENV_PYTHON) bench/make_marian_model.py --out $(BUILD)/bench/marian
	rm -rf $(BUILD)/bench/marian-int8
	$(TED) quantize $(BUILD)/bench/marian $(BUILD)/bench/marian-int8
	$(CC) $(BENCH_CFLAGS) bench/openloop.c -lm -o $(BUILD)/bench-openloop
	$(PYTHON) bench/serve_bench.py --ted $(TED) --model $(TOY) --openloop $(BUILD)/bench-openloop
	for m in marian marian-int8; do \
	    $(PYTHON) bench/serve_bench.py --ted $(TED) --model $(BUILD)/bench/$$m --random-weights \
	        --texts $(TOY)/test.en --threads 2 --seconds 30 --warmup 3 \
	        --openloop $(BUILD)/bench-openloop || exit 1; \
	done
	$(PYTHON) bench/queue_model.py --ted $(TED) --model $(BUILD)/bench/marian-int8 \
	    --texts $(TOY)/test.en --threads 2
	@$(MAKE) --no-print-directory bench-serve-lt

# ted serve against LibreTranslate (bench/lt_bench.py) on the same weights
# (models/en-fr, and the Transformer-base checkpoint in int8), the same
# open-loop trace through each one's POST /translate. LibreTranslate goes into
# a virtualenv of its own, $(BUILD)/lt-venv (bench/requirements-lt.txt).
# LT_BENCH_ARGS: options of bench/lt_bench.py, e.g. --quick.
LT_VENV := $(BUILD)/lt-venv
LT_BENCH_ARGS ?=
$(LT_VENV)/installed: bench/requirements-lt.txt
	$(PYTHON) -m venv $(LT_VENV)
	$(LT_VENV)/bin/python -m pip install -q --disable-pip-version-check -r bench/requirements-lt.txt
	@touch $@

bench-serve-lt: all $(VENV)/bench-installed $(LT_VENV)/installed
	$(CC) $(BENCH_CFLAGS) bench/openloop.c -lm -o $(BUILD)/bench-openloop
	BUILD=$(BUILD) $(PYTHON) bench/lt_bench.py --ted $(TED) --lt-venv $(LT_VENV) \
	    --venv-python $(VENV_PYTHON) --openloop $(BUILD)/bench-openloop $(LT_BENCH_ARGS)

# memcheck cannot decode AVX-512 (under valgrind the CPU shows none, so
# TED_CPU=avx512 would be refused): the AVX2 kernels run. Both scripts run;
# the target fails when a check of either failed.
valgrind: test-deps
	@$(MAKE) --no-print-directory all
	@failed=0; \
	for script in tests/valgrind.sh tests/serve/valgrind.sh; do \
	    echo "TED=$(TED) TED_CPU=avx2 PYTHON=$(PYTHON) sh $$script"; \
	    TED=$(TED) TED_CPU=avx2 PYTHON=$(PYTHON) sh $$script || failed=1; \
	done; \
	exit $$failed

# Fuzzing (fuzz/): one libFuzzer harness per parser that takes bytes from
# memory, built with ASan + UBSan; fuzz/run.sh runs them in turn and keeps
# the corpora in build-fuzz/corpus.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_TARGETS := safetensors config vocab shortlist tokenizer normalize spm request document bpe \
                marian npy shortlist_bin
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_COMMON := -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Iinclude -Isrc \
               $(shell pkg-config --cflags yaml-0.1 libcjson libmicrohttpd libexttextcat icu-uc \
                                           libxml-2.0 2>/dev/null)
FUZZ_CFLAGS := $(FUZZ_COMMON) -fsanitize=fuzzer $(FUZZ_SAN)
FUZZ_LIBS := $(shell pkg-config --libs yaml-0.1 libcjson sentencepiece icu-uc icu-i18n \
                                        libxml-2.0 2>/dev/null) -lstdc++
# The harnesses link io/ and core/ whole (the parsers and what they stand on).
FUZZ_LIB_SRC := $(wildcard src/io/*.c src/core/*.c)
FUZZ_SPM := $(FUZZ_BUILD)/sentencepiece.o

$(FUZZ_SPM): src/io/sentencepiece.cc src/io/sentencepiece.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC)++ -g -O1 -std=c++17 -Iinclude -Isrc -fsanitize=fuzzer-no-link,address,undefined \
	    -fno-sanitize=vptr -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB_SRC) $(FUZZ_SPM) $(wildcard src/io/*.h src/core/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_LIB_SRC) $(FUZZ_SPM) $(FUZZ_LIBS) -o $@

# fuzz_request decodes (the explorer's endpoints): it links the whole of
# libted, each kernel set included, and serve's JSON, built into
# $(FUZZ_BUILD)/obj with coverage for the fuzzer (fuzzer-no-link).
FUZZ_OBJ := $(FUZZ_BUILD)/obj
FUZZ_OBJ_CFLAGS := $(FUZZ_COMMON) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP
FUZZ_REQUEST_SRC := $(filter %.c,$(LIB_SRC)) src/serve/request.c src/serve/explore.c \
                    src/serve/job.c src/frontend/options.c src/serve/fields.c \
                    src/serve/languages.c src/serve/libre.c src/serve/detect.c \
                    src/serve/documents.c \
                    $(DOCUMENT_SRC)
FUZZ_REQUEST_OBJ := $(FUZZ_REQUEST_SRC:%.c=$(FUZZ_OBJ)/%.o) \
                    $(foreach v,$(KERNEL_VARIANTS),\
                      $(KERNEL_SRC:src/kernels/variant/%.c=$(FUZZ_OBJ)/src/kernels/$(v)/%.o)) \
                    $(FUZZ_OBJ)/src/serve/explorer_assets.o

$(FUZZ_OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_OBJ_CFLAGS) -c $< -o $@

define FUZZ_KERNEL_RULE
$(FUZZ_OBJ)/src/kernels/$(1)/%.o: src/kernels/variant/%.c
	@mkdir -p $$(dir $$@)
	$$(FUZZ_CC) $$(FUZZ_OBJ_CFLAGS) -ffp-contract=fast $$(KERNEL_FLAGS_$(1)) -DTED_VARIANT=$(1) \
	    -c $$< -o $$@
endef
$(foreach v,$(KERNEL_VARIANTS),$(eval $(call FUZZ_KERNEL_RULE,$(v))))

$(FUZZ_OBJ)/src/serve/explorer_assets.o: src/serve/explorer_assets.S $(EXPLORER_ASSETS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -c $< -o $@

$(FUZZ_BUILD)/fuzz_request: fuzz/fuzz_request.c $(FUZZ_REQUEST_OBJ) $(FUZZ_SPM)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_REQUEST_OBJ) $(FUZZ_SPM) $(FUZZ_LIBS) \
	    $(shell pkg-config --libs libmicrohttpd libexttextcat 2>/dev/null) -lm -lpthread -o $@

-include $(FUZZ_REQUEST_OBJ:.o=.d)

# fuzz_document: the documents of src/document/ over core/.
FUZZ_DOCUMENT_SRC := $(DOCUMENT_SRC) $(wildcard src/core/*.c)
$(FUZZ_BUILD)/fuzz_document: fuzz/fuzz_document.c $(FUZZ_DOCUMENT_SRC) $(wildcard src/document/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_DOCUMENT_SRC) $(FUZZ_LIBS) -lpthread -o $@

fuzz: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	    PYTHON=$(PYTHON) fuzz/run.sh
