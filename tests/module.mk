# tests: the cmocka unit tests are declared by each module's module.mk
# (UNIT_TESTS += $(B)/tests/test_x); integration tests live in
# tests/integration/NN-name.sh and all run in name order.
INTEG_TESTS += $(sort $(wildcard tests/integration/*.sh))
CMOCKA_LIBS := -lcmocka
