# isle top-level Makefile.
#
#   make                 build everything (-Wall -Wextra -Werror)
#   make test            unit tests (cmocka), then integration tests on a live cluster
#   make unit            unit tests only
#   make integration     integration tests only
#   make bench           benchmarks (isle vs baselines, ratios)
#   make demo            the end-to-end demo on a local test cluster
#   make install         PREFIX=/usr/local DESTDIR=  (plugins into Slurm's plugin dir)
#   SANITIZE=1           ASan + UBSan for the executables and unit tests, e.g.
#                        make B=build-asan SANITIZE=1 DEPS_OK=build/.deps-ok all
#                        Shared objects (SHLIBS, PLUGINS) and the programs the
#                        shims are LD_PRELOADed into are built unsanitized by a
#                        sub-make in $(B)/nosan and copied into place: they are
#                        loaded by uninstrumented hosts (slurmctld, slurmd,
#                        srun, mpirun'd programs) where a late ASan runtime
#                        aborts ("ASan runtime does not come first").
#                        Leak reports of third-party libraries: tests/lsan.supp.
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
include bench/fabric/module.mk
include tests/module.mk

all: $(DEPS_OK) $(LIBS_A) $(BINS) $(SHLIBS) $(PLUGINS) $(UNIT_TESTS)

ifeq ($(SANITIZE),1)
# See SANITIZE=1 above. One sub-make builds them all (no races under -j);
# these recipes replace the modules' ones (make warns "overriding recipe").
NOSAN_TARGETS := $(SHLIBS) $(PLUGINS) $(BINS_TESTS_COMM) \
		 $(filter %/nccl_smoke,$(GPU_CHECKS))
.PHONY: nosan-build
nosan-build: | $(DEPS_OK)
	+$(MAKE) --no-print-directory B=$(B)/nosan SANITIZE= DEPS_OK=$(DEPS_OK) \
		$(NOSAN_TARGETS:$(B)/%=$(B)/nosan/%)
$(NOSAN_TARGETS): nosan-build
	@mkdir -p $(dir $@)
	@cmp -s $(@:$(B)/%=$(B)/nosan/%) $@ || cp -fv $(@:$(B)/%=$(B)/nosan/%) $@
export LSAN_OPTIONS ?= suppressions=$(CURDIR)/tests/lsan.supp:fast_unwind_on_malloc=0
endif

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
# Lists the tracked C files clang-format would change (exit 1), e.g. to
# check one's own files before the lead commits; `clang-format --dry-run
# FILE` shows where.
check-format:
	@command -v clang-format >/dev/null || { echo "check-format: no clang-format"; exit 2; }
	@n=0 bad=; for f in $$(git ls-files '*.c' '*.h'); do n=$$((n + 1)); \
		clang-format --dry-run -Werror "$$f" >/dev/null 2>&1 || bad="$$bad $$f"; \
	done; if [ -n "$$bad" ]; then \
		echo "check-format: not clang-formatted ($$(echo $$bad | wc -w) of $$n):$$bad"; \
		exit 1; fi; echo "check-format: $$n files OK"

-include $(shell find $(B) -name '*.d' 2>/dev/null)
