# placement module: appends to LIBS_A BINS SHLIBS PLUGINS UNIT_TESTS INTEG_TESTS BENCHES (see Makefile)
