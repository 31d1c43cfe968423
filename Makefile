# ted — build, test, install.
#   make                 libted.a and the ted program (build/)
#   make test            every test: unit (Criterion), CLI, PyTorch parity, example
#   make test SAN=1      the same, built with AddressSanitizer + UBSan (build-san/)
#   make install PREFIX=/usr/local
#   make valgrind        ted under valgrind memcheck (tests/valgrind.sh), built for the
#                        baseline instruction set in build-valgrind/
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
else
BUILD ?= build
SANFLAGS :=
OPT ?= -O2
endif

DEPS := openblas yaml-0.1 libcjson sentencepiece
DEP_CFLAGS := $(shell pkg-config --cflags $(DEPS) 2>/dev/null)
DEP_LIBS := $(shell pkg-config --libs $(DEPS) 2>/dev/null)
CRITERION_LIBS := $(shell pkg-config --libs criterion 2>/dev/null)

CFLAGS ?= $(OPT) -g -march=native
CFLAGS += -std=c11 -ffp-contract=fast -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wshadow -Wstrict-prototypes \
          -Iinclude -Isrc $(DEP_CFLAGS) $(SANFLAGS) -MMD -MP
CXXFLAGS ?= $(OPT) -g
CXXFLAGS += -std=c++17 -Wall -Wextra -Iinclude -Isrc $(DEP_CFLAGS) $(SANFLAGS) -MMD -MP
LDFLAGS += $(SANFLAGS)
LDLIBS := $(DEP_LIBS) -lstdc++ -lm -lpthread

LIB_SRC := $(wildcard src/core/*.c src/kernels/*.c src/layers/*.c src/model/*.c src/io/*.c) \
           $(wildcard src/io/*.cc)
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard tests/unit/*.c)
EXAMPLE_SRC := examples/translate.c

LIB_OBJ := $(patsubst %.cc,$(BUILD)/%.o,$(LIB_SRC:%.c=$(BUILD)/%.o))
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)

LIB := $(BUILD)/libted.a
TED := $(BUILD)/ted
UNIT := $(BUILD)/unit-tests
EXAMPLE := $(BUILD)/example-translate

.PHONY: all test check test-unit demo install clean deps test-deps venv toy-model eval bench fuzz valgrind
all: $(LIB) $(TED)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(TED): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(UNIT): $(TEST_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ $(CRITERION_LIBS) $(LDLIBS) -o $@

$(EXAMPLE): $(EXAMPLE_SRC) $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

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

# `test` installs missing packages first, then re-reads this Makefile so the
# pkg-config flags see them.
test: test-deps
	@$(MAKE) --no-print-directory venv check

check: all $(UNIT) $(EXAMPLE)
	@PYTHON=$(PYTHON) TEST_PYTHON=$(VENV_PYTHON) BUILD=$(BUILD) SAN=$(SAN) tests/run-all.sh

# The quick start: translate a few sentences with the shipped model.
demo: deps
	@$(MAKE) --no-print-directory all
	$(TED) translate -m models/toy-en-fr $(DEMO_TEXT)

test-unit: $(UNIT)
	$(UNIT)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/ted
	install -m 755 $(TED) $(DESTDIR)$(PREFIX)/bin/ted
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libted.a
	install -m 644 include/ted/*.h $(DESTDIR)$(PREFIX)/include/ted/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define TED_VERSION "\(.*\)"/\1/p' include/ted/ted.h)|' \
	    ted.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ted.pc

clean:
	rm -rf build build-san build-fuzz build-valgrind

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
	$(PYTHON) tools/toy/generate.py
	$(PYTHON) tools/toy/train.py > build/toy/train.out
	$(PYTHON) tools/export_torch.py build/toy/model.pt --src-vocab build/toy/vocab.en \
	    --tgt-vocab build/toy/vocab.fr --heads 4 --lowercase --out $(TOY)

# ted against PyTorch on a Transformer-base model (bench/run.py): writes
# $(BUILD)/bench/results.json and $(BUILD)/bench/table.md. BENCH_ARGS: options of
# bench/run.py, e.g. --quick (one timed run of everything).
BENCH_MACHINE := $(BUILD)/bench-machine
BENCH_CFLAGS := -O3 -march=native -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra \
                $(shell pkg-config --cflags openblas 2>/dev/null)
BENCH_LIBS := $(shell pkg-config --libs openblas 2>/dev/null) -lpthread
BENCH_ARGS ?=

bench: all
	$(CC) $(BENCH_CFLAGS) bench/machine.c $(BENCH_LIBS) -o $(BENCH_MACHINE)
	BUILD=$(BUILD) BENCH_MACHINE=$(BENCH_MACHINE) $(PYTHON) bench/run.py --no-build $(BENCH_ARGS)

# memcheck cannot decode AVX-512, which -march=native may emit: a build for
# the baseline x86-64 instruction set (the vector code returns vectors wider
# than SSE registers, which -Wpsabi notes; nothing crosses a library ABI).
VALGRIND_CFLAGS := -O2 -g -Wno-psabi
valgrind: test-deps
	@CFLAGS="$(VALGRIND_CFLAGS)" $(MAKE) --no-print-directory BUILD=build-valgrind all
	TED=build-valgrind/ted PYTHON=$(PYTHON) sh tests/valgrind.sh

# Fuzzing (fuzz/): one libFuzzer harness per parser that takes bytes from
# memory, built with ASan + UBSan; fuzz/run.sh runs them in turn and keeps
# the corpora in build-fuzz/corpus.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_TARGETS := safetensors config vocab tokenizer
FUZZ_CFLAGS := -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Iinclude -Isrc \
               $(shell pkg-config --cflags yaml-0.1 libcjson 2>/dev/null) \
               -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_LIBS := $(shell pkg-config --libs yaml-0.1 libcjson 2>/dev/null)
FUZZ_LIB_SRC := src/io/config.c src/io/safetensors.c src/io/vocab.c src/io/tokenizer.c \
                src/core/alloc.c src/core/error.c src/core/file.c

$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_LIB_SRC) $(wildcard src/io/*.h src/core/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(FUZZ_LIB_SRC) $(FUZZ_LIBS) -o $@

fuzz: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
	FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" \
	    PYTHON=$(PYTHON) fuzz/run.sh
