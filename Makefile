# isle top-level Makefile.
#
#   make                 build everything (-Wall -Wextra -Werror)
#   make test            unit tests (cmocka), then integration tests on a live cluster
#   make unit            unit tests only
#   make integration     integration tests only
#   make bench           benchmarks (isle vs baselines, ratios)
#   make demo            the end-to-end demo on a local test cluster
#   make install         PREFIX=/usr/local DESTDIR=  (plugins into Slurm's plugin dir)
#   SANITIZE=1           ASan + UBSan
#
# Each module folder has a module.mk that appends to the variables below.

PREFIX      ?= /usr/local
DESTDIR     ?=
ISLE_CACHE  ?= /opt/isle
SLURM_VER   := 24.11.5
SLURM_PREFIX ?= $(ISLE_CACHE)/slurm-$(SLURM_VER)
SLURM_SRC   ?= $(ISLE_CACHE)/src/slurm-$(SLURM_VER)
SLURM_PLUGIN_DIR ?= $(SLURM_PREFIX)/lib/slurm
CUDA_HOME   ?= /usr/local/cuda
B           := build

CC          ?= gcc
CFLAGS      ?= -O2 -g
CFLAGS      += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
               -fPIC -fvisibility=hidden -MMD -MP -pthread
CPPFLAGS    += -D_GNU_SOURCE -Itopology -Iplacement -Iagent -Icomm_shim
LDFLAGS     += -pthread
LDLIBS      +=

ifeq ($(SANITIZE),1)
CFLAGS      += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS     += -fsanitize=address,undefined
endif

export SLURM_PREFIX SLURM_SRC ISLE_CACHE

# Filled by module.mk fragments.
LIBS_A      :=
BINS        :=
SHLIBS      :=
PLUGINS     :=
UNIT_TESTS  :=
INTEG_TESTS :=
BENCHES     :=
ALL_OBJS    :=

.PHONY: all deps test unit integration bench demo install clean format check-format
all:

DEPS_OK := $(B)/.deps-ok
$(DEPS_OK): scripts/deps.sh
	@mkdir -p $(B)
	@scripts/deps.sh --check >/dev/null 2>&1 || scripts/deps.sh
	@touch $@
deps:
	@scripts/deps.sh

include topology/module.mk
include placement/module.mk
include agent/module.mk
include comm_shim/module.mk
include slurm_plugin/module.mk
include tests/module.mk

all: $(DEPS_OK) $(LIBS_A) $(BINS) $(SHLIBS) $(PLUGINS) $(UNIT_TESTS)

$(B)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Static archives of each module, linked into binaries, tests and plugins.
$(B)/lib%.a:
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

unit: all
	@tests/run-unit.sh $(UNIT_TESTS)

integration: all
	@tests/run-integration.sh $(INTEG_TESTS)

test: all
	@tests/run-unit.sh $(UNIT_TESTS)
	@tests/run-integration.sh $(INTEG_TESTS)

bench: all $(BENCHES)

demo: all
	@scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/isle $(DESTDIR)$(SLURM_PLUGIN_DIR)
	$(if $(BINS),install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/)
	$(if $(SHLIBS),install -m 0755 $(SHLIBS) $(DESTDIR)$(PREFIX)/lib/isle/)
	$(if $(PLUGINS),install -m 0755 $(PLUGINS) $(DESTDIR)$(SLURM_PLUGIN_DIR)/)

clean:
	rm -rf $(B)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
check-format:
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h')

-include $(shell find $(B) -name '*.d' 2>/dev/null)
