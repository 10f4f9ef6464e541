# ebb: the only entry point a newcomer needs.
#
#   make demo    install what is missing, build, simulate the bundled snapshot
#                (with --reschedule: where the scheduler puts the evicted pods)
#   make test    install what is missing, build, run every test suite
#   make report  the demo's HTML report and a PNG of it (build/report/)
#   make bench   the synthetic-cluster benchmarks (spec/bench)
#   make fuzz    the libFuzzer targets (fuzz/), FUZZ_SECONDS each (60)
#
# Builds: build/ebb (the binary), build/ebb_core.so (the engine as a Lua
# module, for busted), build/asan/ (C unit tests under ASan+UBSan),
# build/fuzz/ (libFuzzer targets, clang).

CC      ?= gcc
PKGS    := lua5.4 libcjson yaml-0.1 libuv libcurl openssl libisal
DEBS    := liblua5.4-dev lua5.4 lua-busted libcurl4-openssl-dev libcjson-dev \
           libyaml-dev libuv1-dev libcmocka-dev libhttp-parser-dev pkg-config \
           curl python3 python3-yaml clang libclang-rt-14-dev prometheus chromium etcd-server \
           libssl-dev libisal-dev zlib1g-dev
# libssl-dev: HTTPS on the metrics port (engine/base/httpd_tls.c); libcurl
# already links libssl3, and TLS is not something to hand-roll.
# libisal-dev: gzip-encoded API answers are inflated by ISA-L's igzip
# (engine/kube/gunzip.c), 1.8 times zlib's speed on them. zlib1g-dev:
# the C tests write their gzip answers with zlib (an encoder other than
# the decoder under test); libcurl links zlib already.
LUA     := lua5.4
BUSTED  := $(LUA) /usr/bin/busted

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser -lm
TEST_LIBS  = $(shell pkg-config --libs zlib 2>/dev/null) -lcmocka

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS  ?= -O2 -g
# vendor/yyjson: the JSON parser of the bulk reads (vendor/yyjson/README.md)
YYJSON_DEFS := -DYYJSON_DISABLE_WRITER=1 -DYYJSON_DISABLE_UTILS=1
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Iengine -Ivendor/yyjson $(YYJSON_DEFS) \
             $(PKG_CFLAGS) $(CFLAGS)
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

B       := build
# engine/ is in folders, one layer each (engine/README.md); objects keep
# the folder: build/obj/core/framework.o
LAYERS  := base model strategy core lua kube sched serve cmd
LIB_SRC := $(filter-out engine/cmd/main.c engine/cmd/module.c,$(foreach l,$(LAYERS),$(wildcard engine/$(l)/*.c)))
# vendored sources, built beside the engine's: build/obj/vendor/yyjson.o
VENDOR_SRC := vendor/yyjson/yyjson.c
VENDOR_HDRS := vendor/yyjson/yyjson.h
LIB_OBJ := $(LIB_SRC:engine/%.c=$(B)/obj/%.o) $(B)/obj/vendor/yyjson.o
PIC_OBJ := $(LIB_SRC:engine/%.c=$(B)/pic/%.o) $(B)/pic/vendor/yyjson.o
ASAN_OBJ := $(LIB_SRC:engine/%.c=$(B)/asan/obj/%.o) $(B)/asan/obj/vendor/yyjson.o
TEST_SRC := $(wildcard engine/test/test_*.c)
TEST_BIN := $(TEST_SRC:engine/test/%.c=$(B)/asan/%)
# libFuzzer targets: the engine built again with clang and coverage
FUZZ_CC := clang
FUZZ_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_OBJ := $(LIB_SRC:engine/%.c=$(B)/fuzz/obj/%.o) $(B)/fuzz/obj/vendor/yyjson.o
FUZZ_SRC := $(wildcard fuzz/*.c)
FUZZ_BIN := $(FUZZ_SRC:fuzz/%.c=$(B)/fuzz/%)
FUZZ_SECONDS ?= 60
# make test builds and runs the targets only where clang and its libFuzzer
# runtime are there (make deps installs both); otherwise it says so
FUZZ_RT := $(shell $(FUZZ_CC) --print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
FUZZ_OK := $(if $(filter /%,$(FUZZ_RT)),$(wildcard $(FUZZ_RT)))

.PHONY: all install image deps test test-c test-lua test-integration check-layers demo report bench fuzz clean
# the ASan and fuzz objects are shared by every binary: keep them
.SECONDARY: $(ASAN_OBJ) $(FUZZ_OBJ)

all: $(B)/ebb $(B)/ebb_core.so

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary and what it loads
# at start, laid out where it looks for them beside itself
# (<bin>/../share/ebb, engine/core/framework.c find_home): the tree under
# PREFIX can be copied anywhere and runs without EBB_HOME. The demo snapshot
# and policy go to share/ebb/examples.
PREFIX ?= /usr/local
install: $(B)/ebb
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/ebb/lua/ebb \
	  $(DESTDIR)$(PREFIX)/share/ebb/policies $(DESTDIR)$(PREFIX)/share/ebb/examples
	install -m 755 $(B)/ebb $(DESTDIR)$(PREFIX)/bin/ebb
	install -m 644 lua/ebb/*.lua $(DESTDIR)$(PREFIX)/share/ebb/lua/ebb/
	install -m 644 policies/*.lua $(DESTDIR)$(PREFIX)/share/ebb/policies/
	install -m 644 spec/fixtures/demo-cluster.json spec/fixtures/demo-policy.yaml \
	  $(DESTDIR)$(PREFIX)/share/ebb/examples/

# ebb's image from nothing, with Debian's buildah (not installed by `make
# deps`: only this target needs it): the binary, its libraries, the CA
# certificates and the Lua runtime; deploy/image/build.sh says what else.
IMAGE ?= localhost/ebb:$(shell $(B)/ebb version 2>/dev/null | cut -d' ' -f2)
image: $(B)/ebb
	rm -rf $(B)/image
	$(MAKE) --no-print-directory install DESTDIR=$(abspath $(B))/image/rootfs PREFIX=/usr
	sh deploy/image/build.sh $(B)/image/rootfs $(IMAGE)

# Install the stack from Debian when something is missing: as root with
# apt-get, otherwise print the exact command and stop.
deps:
	@missing=""; for p in $(DEBS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing || exit 1; \
	  else \
	    echo "missing packages:$$missing"; \
	    echo "run: sudo apt-get update && sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

HDRS := $(wildcard include/*.h include/ebb/*.h $(foreach l,$(LAYERS),engine/$(l)/*.h)) $(VENDOR_HDRS)
# V=1 shows the full commands
Q := $(if $(V),,@)

$(B)/obj/%.o: engine/%.c $(HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/pic/%.o: engine/%.c $(HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC -fPIC $<")
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

$(B)/asan/obj/%.o: engine/%.c $(HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC asan $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(ASAN_FLAGS) -c $< -o $@

$(B)/obj/vendor/%.o: vendor/yyjson/%.c $(VENDOR_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/pic/vendor/%.o: vendor/yyjson/%.c $(VENDOR_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC -fPIC $<")
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

$(B)/asan/obj/vendor/%.o: vendor/yyjson/%.c $(VENDOR_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC asan $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(ASAN_FLAGS) -c $< -o $@

$(B)/fuzz/obj/vendor/%.o: vendor/yyjson/%.c $(VENDOR_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC fuzz $<")
	$(Q)$(FUZZ_CC) $(ALL_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(B)/libebb.a: $(LIB_OBJ)
	$(Q)ar rcs $@ $^

$(B)/ebb: $(B)/obj/cmd/main.o $(B)/libebb.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS)

# build/ebb with the test hooks (engine/lua/lua_testhook.c with -DEBB_TEST_HOOKS),
# for the integration specs that need one; never installed.
$(B)/obj/lua/lua_testhook-on.o: engine/lua/lua_testhook.c $(HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (test hooks)")
	$(Q)$(CC) $(ALL_CFLAGS) -DEBB_TEST_HOOKS -c $< -o $@

$(B)/ebb-test: $(B)/obj/cmd/main.o $(B)/obj/lua/lua_testhook-on.o $(B)/libebb.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(PKG_LIBS)

# nodelete: the script watchdog thread (engine/lua/vm.c) lives in the module;
# lua_close at exit must not unmap it under the running thread.
$(B)/ebb_core.so: $(B)/pic/cmd/module.o $(PIC_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-z,nodelete -o $@ $^ $(filter-out -llua5.4,$(PKG_LIBS))

$(B)/asan/test_%: engine/test/test_%.c $(wildcard engine/test/*.h) $(ASAN_OBJ) | $(B)/asan
	@$(if $(Q),echo "  LD asan $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(ASAN_FLAGS) -o $@ $< $(ASAN_OBJ) $(PKG_LIBS) $(TEST_LIBS)

$(B)/fuzz/obj/%.o: engine/%.c $(HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC fuzz $<")
	$(Q)$(FUZZ_CC) $(ALL_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(B)/fuzz/%: fuzz/%.c fuzz/fuzz.h $(FUZZ_OBJ)
	@$(if $(Q),echo "  LD fuzz $@")
	$(Q)$(FUZZ_CC) $(ALL_CFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(PKG_LIBS)

$(B)/asan:
	mkdir -p $@

# Every suite prints TAP; spec/run_suites counts them and ends with
# "N passed, M failed" (non-zero exit when anything failed). The fuzz
# targets run a few seconds each there: a crash once found stays found.
test: deps all $(B)/ebb-test $(TEST_BIN) $(if $(FUZZ_OK),$(FUZZ_BIN)) check-layers
	@sh spec/run_suites $(B)

# One way down: every file of engine/ keeps to the table of engine/README.md
# (what it calls and includes, Lua's headers, circles, file sizes, the
# bindings' one reader of a script's values): spec/check_layers.py.
check-layers: $(LIB_OBJ) $(B)/obj/cmd/main.o $(B)/obj/cmd/module.o
	@python3 spec/check_layers.py $(B)/obj

test-c: deps $(TEST_BIN)
	@sh spec/run_suites $(B) c

test-lua: deps all
	@sh spec/run_suites $(B) lua

test-integration: deps all $(B)/ebb-test
	@sh spec/run_suites $(B) integration

fuzz: deps $(FUZZ_BIN)
	@sh fuzz/run $(B) $(FUZZ_SECONDS)

DEMO := --snapshot spec/fixtures/demo-cluster.json --policy spec/fixtures/demo-policy.yaml \
	--now 2026-11-22T12:00:00Z --reschedule

demo: deps all
	./$(B)/ebb simulate $(DEMO)

# The demo's report, checked in headless Chromium (no console error, every
# chart drawn), and a screenshot of it.
report: deps all
	@mkdir -p $(B)/report
	./$(B)/ebb simulate $(DEMO) -q --report $(B)/report/demo.html >/dev/null
	python3 spec/browser/report_check.py $(B)/report/demo.html \
	  --charts chart-nodes-cpu,chart-spread-cpu,chart-evictions --screenshot $(B)/report/demo.png >/dev/null
	@echo "wrote $(B)/report/demo.html and $(B)/report/demo.png"

bench: deps all $(B)/budget_arm $(B)/budget_escape
	@sh spec/bench/run $(B)

$(B)/budget_arm: spec/bench/budget_arm.c $(B)/libebb.a $(HDRS)
	$(Q)$(CC) $(ALL_CFLAGS) -O2 -o $@ $< $(B)/libebb.a $(PKG_LIBS)

$(B)/budget_escape: spec/bench/budget_escape.c $(B)/libebb.a $(HDRS)
	$(Q)$(CC) $(ALL_CFLAGS) -O2 -o $@ $< $(B)/libebb.a $(PKG_LIBS)

clean:
	rm -rf $(B)
