# isle top-level Makefile.
#
#   make                 build everything (-Wall -Wextra -Werror)
#   make test            unit tests (cmocka), then integration tests on a live cluster
#   make unit            unit tests only
#   make integration     integration tests only
#   make bench           benchmarks (isle vs baselines, ratios)
#   make demo            the end-to-end demo on a local test cluster
#   make install         PREFIX=/usr/local DESTDIR=  (plugins into Slurm's plugin dir)
#   make deb, make rpm   packages isle-slurm-<release> for the Slurm built against
#                        (packaging/; $(B)/pkg/); SLURM_PLUGIN_DIR= as for install
#   make print-slurm     the Slurm release, prefix, tree and plugin dir in use
#   SLURM=26.05          the Slurm release for everything (plugins, test cluster,
#                        tests, benchmarks, demo): 24.11 (default), 25.11 or
#                        26.05.
#                        scripts/deps.sh --print maps it to the paths.
#   SLURM_SRC=DIR SLURM_PREFIX=DIR
#                        site mode: build against a site's configured Slurm
#                        tree and installation; Slurm is not built here (only
#                        the Debian packages are installed; ISLE_DEPS=none
#                        skips that too)
#   ISLE_DEPS=auto|all|packages|none
#                        what the dependency stage installs (auto: all, or
#                        packages in site mode)
#   SANITIZE=1           ASan + UBSan for the executables and unit tests, e.g.
#                        make B=build-asan SANITIZE=1 all
#                        Shared objects (SHLIBS, PLUGINS) and the programs the
#                        shims are LD_PRELOADed into are built unsanitized by a
#                        sub-make in $(B)/nosan and copied into place: they are
#                        loaded by uninstrumented hosts (slurmctld, slurmd,
#                        srun, mpirun'd programs) where a late ASan runtime
#                        aborts ("ASan runtime does not come first").
#                        Leak reports of third-party libraries: tests/lsan.supp.
#                        The integration tests run what is in build/, so
#                          make test SANITIZE=1
#                        builds there (switching SANITIZE recompiles) and runs
#                        the unit tests and the integration tests of the CLI
#                        tools and the shim's MPI path (SANITIZE_INTEG).
#
# Two stages. Stage 1 (every goal, this file without ISLE_DEPS_DONE) runs
# scripts/deps.sh and then re-invokes make with ISLE_DEPS_DONE=1 on the
# command line. Only stage 2 includes the module.mk fragments, so everything
# they compute when the makefile is parsed ($(shell mpicc -showme...),
# HAVE_MPI, HAVE_CUDA) sees the installed packages. A one-stage makefile
# decides those before deps.sh has run: on a fresh machine the first run
# then fails (mpi.h not found) and the second passes
# (tests/integration/02-deps-stage-first.sh).
#
# Each module folder has a module.mk that appends to the variables below.

# --- Settings both stages need --------------------------------------------
SLURM       ?= 24.11
ISLE_CACHE  ?= /opt/isle
DEPS_SCRIPT ?= scripts/deps.sh
ISLE_DEPS   ?= auto
B           := build
export SLURM ISLE_CACHE

# Site mode: SLURM_SRC on the command line means a site's configured tree;
# its SLURM_PREFIX must come with it. (Only the command line: make exports
# SLURM_SRC to the tests, and a make run by a test must not take that for a
# site's tree.)
ifeq ($(origin SLURM_SRC),command line)
ISLE_SITE   := 1
endif

# --- The Slurm release (both stages) ----------------------------------------
# SLURM_VER, SLURM_PREFIX, SLURM_SRC, SLURM_PLUGIN_DIR: from the site's tree
# in site mode, else the lines `deps.sh --print` writes for $(SLURM) (the one
# mapping from a release to its paths), included from $(B)/.slurm-vars.mk.
ifeq ($(ISLE_SITE),1)
ifneq ($(origin SLURM_PREFIX),command line)
$(error site mode: SLURM_SRC=$(SLURM_SRC) needs SLURM_PREFIX=<where that Slurm is installed>)
endif
ifeq ($(wildcard $(SLURM_SRC)/config.h),)
$(error site mode: $(SLURM_SRC)/config.h not found: SLURM_SRC must be a configured Slurm source tree)
endif
SLURM_VER   := $(shell sed -n 's/^\#define SLURM_VERSION_STRING "\(.*\)"/\1/p' $(SLURM_SRC)/config.h)
SLURM_PLUGIN_DIR ?= $(SLURM_PREFIX)/lib/slurm
else
# (make 4.3 does not export variables to $(shell): pass them by hand.)
$(shell mkdir -p $(B) && SLURM='$(SLURM)' ISLE_CACHE='$(ISLE_CACHE)' \
	$(DEPS_SCRIPT) --print >$(B)/.slurm-vars.mk)
ifneq ($(.SHELLSTATUS),0)
$(error $(DEPS_SCRIPT) --print failed for SLURM=$(SLURM))
endif
include $(B)/.slurm-vars.mk
endif

# Stage 2 only when ISLE_DEPS_DONE=1 came on the command line (stage 1's
# sub-make, or its own sub-makes through MAKEFLAGS). make also puts it in the
# environment of every recipe: a make that a test script runs must still
# start at stage 1.
ifneq ($(origin ISLE_DEPS_DONE)$(ISLE_DEPS_DONE),command line1)
# --- Stage 1: dependencies, then stage 2 ----------------------------------
# What to install: ISLE_DEPS (auto: everything, or only the packages in site
# mode), none for goals that need no dependencies (a `make clean` must not
# build Slurm) and for `make DEPS_OK=FILE ...` (the older spelling, e.g.
# tests/gpu/run-gpu-check.sh: the caller vouches for the dependencies).
NODEPS_GOALS := clean format check-format print-slurm
ISLE_GOALS   := $(or $(MAKECMDGOALS),all)
DEPS_MODE    := $(ISLE_DEPS)
ifeq ($(DEPS_MODE),auto)
DEPS_MODE    := $(if $(ISLE_SITE),packages,all)
endif
ifeq ($(filter-out $(NODEPS_GOALS),$(ISLE_GOALS)),)
DEPS_MODE    := none
endif
ifeq ($(origin DEPS_OK),command line)
DEPS_MODE    := none
endif
ifeq ($(filter all packages none,$(DEPS_MODE)),)
$(error ISLE_DEPS=$(ISLE_DEPS): expected auto, all, packages or none)
endif
DEPS_ARGS_all      :=
DEPS_ARGS_packages := --packages-only

.PHONY: isle-deps-stage $(ISLE_GOALS)
# Every goal waits for the one stage-1 recipe; the goals themselves are
# made by stage 2, in one sub-make (so -j and several goals work as usual).
$(ISLE_GOALS): isle-deps-stage
	@:
isle-deps-stage:
ifneq ($(DEPS_MODE),none)
	@$(DEPS_SCRIPT) --check $(DEPS_ARGS_$(DEPS_MODE)) >/dev/null 2>&1 || \
		$(DEPS_SCRIPT) $(DEPS_ARGS_$(DEPS_MODE))
endif
	+@$(MAKE) --no-print-directory ISLE_DEPS_DONE=1 $(MAKECMDGOALS)

else
# --- Stage 2: the build ----------------------------------------------------
comma := ,

PREFIX      ?= /usr/local
DESTDIR     ?=
CUDA_HOME   ?= /usr/local/cuda

CC          ?= gcc
CFLAGS      ?= -O2 -g
CFLAGS      += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
               -fPIC -fvisibility=hidden -MMD -MP -pthread
CPPFLAGS    += -D_GNU_SOURCE -Iproto -Itopology -Iplacement -Iagent -Icomm_shim
LDFLAGS     += -pthread
LDLIBS      +=

ifeq ($(SANITIZE),1)
CFLAGS      += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS     += -fsanitize=address,undefined
endif

# For the test cluster harness (tests/cluster/cluster.sh), the integration
# tests, bench-slurm and the demo: the same Slurm as the plugins.
ISLE_SLURM_PREFIX := $(SLURM_PREFIX)
export SLURM_PREFIX SLURM_SRC ISLE_SLURM_PREFIX

# Filled by module.mk fragments.
LIBS_A      :=
BINS        :=
SHLIBS      :=
PLUGINS     :=
UNIT_TESTS  :=
INTEG_TESTS :=
BENCHES     :=
ALL_OBJS    :=

.PHONY: all deps test unit integration bench demo install clean format \
	check-format print-slurm deb rpm FORCE
all:

# Stage 1 has installed the dependencies; objects keep `| $(DEPS_OK)` as an
# order-only prerequisite (DEPS_OK=FILE or DEPS_OK= still accepted).
DEPS_OK ?= $(B)/.deps-ok
ifneq ($(DEPS_OK),)
$(DEPS_OK):
	@mkdir -p $(dir $@)
	@touch $@
endif
deps:
	@:

print-slurm:
	@echo "SLURM_VER=$(SLURM_VER)"
	@echo "SLURM_PREFIX=$(SLURM_PREFIX)"
	@echo "SLURM_SRC=$(SLURM_SRC)"
	@echo "SLURM_PLUGIN_DIR=$(SLURM_PLUGIN_DIR)"

# The Slurm tree the Slurm-dependent objects were compiled against. Its
# contents change when the release (or site tree) changes, and those objects
# list it as a prerequisite: switching SLURM= between runs recompiles them
# instead of linking objects built for the other release into the plugins.
SLURM_TREE_STAMP := $(B)/.slurm-tree
$(SLURM_TREE_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(SLURM_VER) $(SLURM_SRC) $(SLURM_PREFIX)' | cmp -s - $@ || \
		echo '$(SLURM_VER) $(SLURM_SRC) $(SLURM_PREFIX)' >$@

include proto/module.mk
include topology/module.mk
include placement/module.mk
include agent/module.mk
include comm_shim/module.mk
include slurm_plugin/module.mk
include exporter/module.mk
include bench/fabric/module.mk
include bench/load/module.mk
include bench/soak/module.mk
include bench/startcheck/module.mk
include tests/module.mk
include tests/fuzz/module.mk

# Objects compiled against the Slurm tree (see SLURM_TREE_STAMP).
SLURM_DEP_OBJS := $(filter $(B)/slurm_plugin/%,$(ALL_OBJS)) \
		  $(SLURM_TOPO_COMMON_OBJS) \
		  $(B)/tests/unit/test_slurm_plugin_spank_opts.o
$(SLURM_DEP_OBJS): $(SLURM_TREE_STAMP)

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
# The shim sanitized too, for a launcher that takes LD_PRELOAD with the
# ASan runtime first (mpirun -x LD_PRELOAD=libasan.so:...:
# tests/integration/40-comm-mpi-local.sh); its backend sits beside it.
ifeq ($(HAVE_MPI),1)
ASAN_SHIM := $(B)/asan/lib/libisle_preload.so $(B)/asan/lib/libisle_mpi_ompi.so
all: $(ASAN_SHIM)
# The same objects as build/lib's (comm_shim/module.mk), without the
# libc-only check, which the ASan runtime fails by design.
$(B)/asan/lib/libisle_preload.so: $(B)/comm_shim/preload.o $(B)/proto/plan_scan.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_preload.so \
		-Wl,--version-script=comm_shim/libisle_preload.map -o $@ $^ -ldl
$(B)/asan/lib/libisle_mpi_ompi.so: $(COMM_MPI_OBJS) $(COMM_OBJS) $(B)/libisle_proto.a
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libisle_mpi_ompi.so \
		-Wl,--version-script=comm_shim/libisle_mpi.map -Wl,--no-undefined \
		-o $@ $^ $(COMM_LDLIBS)
endif
# `make test SANITIZE=1`: the unit tests, then the integration tests that
# run the CLI tools (islectl, isle-agent, islesim) and the shim's MPI path;
# INTEG_TESTS=... on the command line picks others.
SANITIZE_INTEG := 10 20 21 35 40 41 42 43 44 51
ifneq ($(origin INTEG_TESTS),command line)
INTEG_TESTS := $(filter $(foreach n,$(SANITIZE_INTEG),tests/integration/$(n)-%),$(INTEG_TESTS))
endif
endif

# The SANITIZE setting the objects were compiled with: switching it in one
# build dir recompiles them instead of linking sanitized and plain objects.
BUILD_FLAGS_STAMP := $(B)/.build-flags
$(BUILD_FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo 'SANITIZE=$(SANITIZE)' | cmp -s - $@ || echo 'SANITIZE=$(SANITIZE)' >$@

$(B)/%.o: %.c $(BUILD_FLAGS_STAMP) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Static archives of each module, linked into binaries, tests and plugins.
# An archive may name another it needs as a prerequisite (topology's
# needs proto's): users relink when either changes, and only objects go in.
$(B)/lib%.a:
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $(filter %.o,$^)

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
	install -d $(DESTDIR)$(PREFIX)/share/isle
	printf '# The Slurm release the isle plugins were built for (make install)\nSLURM_VER=%s\nSLURM_PLUGIN_DIR=%s\n' \
		'$(SLURM_VER)' '$(SLURM_PLUGIN_DIR)' >$(DESTDIR)$(PREFIX)/share/isle/slurm-release

# --- Packages: isle-slurm-<major.minor> for the Slurm built against ---------
# Both run `make install DESTDIR=` (PREFIX=/usr, plugins into
# SLURM_PLUGIN_DIR) from the packaging tool, with the make arguments that
# selected this Slurm. The name and version carry the Slurm release; so do
# the package's fields and share/isle/slurm-release (docs/admin.md).
SLURM_REL     := $(word 1,$(subst ., ,$(SLURM_VER))).$(word 2,$(subst ., ,$(SLURM_VER)))
SLURM_REL_NEXT := $(word 1,$(subst ., ,$(SLURM_VER))).$(shell echo $$(($(word 2,$(subst ., ,$(SLURM_VER))) + 1)))
PKG_NAME      := isle-slurm-$(SLURM_REL)
ISLE_PKG_VERSION ?= $(shell d=$$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null) && \
			echo 0.1+git$$d.$$(git rev-parse --short HEAD) || echo 0.1)
PKG_MAKE_ARGS := $(if $(ISLE_SITE),SLURM_SRC=$(SLURM_SRC) SLURM_PREFIX=$(SLURM_PREFIX),SLURM=$(SLURM))
PKG_DIR       := $(abspath $(B))/pkg
DEB_VERSION   := $(ISLE_PKG_VERSION)+slurm$(SLURM_VER)
DEB_FILE      := $(PKG_DIR)/deb/$(PKG_NAME)_$(DEB_VERSION)_$(shell dpkg --print-architecture 2>/dev/null).deb
# A Debian-packaged Slurm (the owner of its topology/tree plugin) becomes a
# dependency, limited to this release.
DEB_SLURM_PKG  = $(shell dpkg -S $(SLURM_PLUGIN_DIR)/topology_tree.so 2>/dev/null | sed -n '1s/:.*//p')

deb: all
	rm -rf $(PKG_DIR)/deb && mkdir -p $(PKG_DIR)/deb/src/debian/source
	cp packaging/debian/rules packaging/debian/copyright $(PKG_DIR)/deb/src/debian/
	cp packaging/debian/source/format $(PKG_DIR)/deb/src/debian/source/
	sed -e 's|@PKG@|$(PKG_NAME)|' -e 's|@SLURM_VER@|$(SLURM_VER)|g' \
		-e 's|@SLURM_PLUGIN_DIR@|$(SLURM_PLUGIN_DIR)|g' \
		-e 's|@SLURM_DEPENDS@|$(if $(DEB_SLURM_PKG),$(comma) $(DEB_SLURM_PKG) (>= $(SLURM_REL))$(comma) $(DEB_SLURM_PKG) (<< $(SLURM_REL_NEXT)))|' \
		packaging/debian/control.in >$(PKG_DIR)/deb/src/debian/control
	sed -e 's|@VERSION@|$(DEB_VERSION)|' -e 's|@SLURM_VER@|$(SLURM_VER)|' \
		-e "s|@DESCRIBE@|$$(git describe --always --dirty 2>/dev/null || echo unknown)|" \
		-e "s|@DATE@|$$(date -R)|" packaging/debian/changelog.in >$(PKG_DIR)/deb/src/debian/changelog
	cd $(PKG_DIR)/deb/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ISLE_TOP=$(CURDIR) \
		ISLE_MAKE_ARGS='$(PKG_MAKE_ARGS)' ISLE_PLUGIN_DIR=$(SLURM_PLUGIN_DIR) \
		dpkg-buildpackage -b -us -uc --no-check-builddeps >$(PKG_DIR)/deb/build.log 2>&1 || \
		{ tail -30 $(PKG_DIR)/deb/build.log; exit 1; }
	@echo "deb: $(DEB_FILE)"

# RPMs: rpmbuild from packaging/rpm/isle.spec (Debian's rpm package).
# RPM_SLURM_REQUIRES: the package Slurm's own spec installs the plugins
# with (slurm); empty for none.
RPM_SLURM_REQUIRES ?= slurm
rpm: all
	rm -rf $(PKG_DIR)/rpm && mkdir -p $(PKG_DIR)/rpm
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL rpmbuild -bb --nodeps \
		--define '_topdir $(PKG_DIR)/rpm' --define 'isle_top $(CURDIR)' \
		--define 'isle_make_args $(PKG_MAKE_ARGS)' --define 'isle_version $(ISLE_PKG_VERSION)' \
		--define 'slurm_ver $(SLURM_VER)' --define 'slurm_rel $(SLURM_REL)' \
		--define 'slurm_rel_next $(SLURM_REL_NEXT)' --define 'slurm_plugin_dir $(SLURM_PLUGIN_DIR)' \
		--define 'slurm_requires $(RPM_SLURM_REQUIRES)' \
		packaging/rpm/isle.spec >$(PKG_DIR)/rpm/build.log 2>&1 || \
		{ tail -30 $(PKG_DIR)/rpm/build.log; exit 1; }
	@echo "rpm: $$(ls $(PKG_DIR)/rpm/RPMS/*/$(PKG_NAME)-*.rpm)"

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
endif # stage 2
