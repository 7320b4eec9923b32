# ringfence: plain make. `make V=1` shows full commands.
# Targets: all (default), install, uninstall, deps, demo, check, check-unit,
#          check-san, check-integration, check-vm, bench, bench-busy, bench-vm,
#          fuzz, format, format-check, clean.
# make install [PREFIX=/usr/local] [DESTDIR=] (also sbindir, libdir,
#          libexecdir, sysconfdir, includedir, mandir, docdir, unitdir).

CC      ?= cc
BUILD   ?= build
VERSION := 0.1.0

# Where make install puts things (GNU names; DESTDIR is prepended when
# copying, never compiled in).
PREFIX      ?= /usr/local
prefix      ?= $(PREFIX)
sbindir     ?= $(prefix)/sbin
bindir      ?= $(prefix)/bin
libdir      ?= $(prefix)/lib
libexecdir  ?= $(prefix)/libexec
includedir  ?= $(prefix)/include
datarootdir ?= $(prefix)/share
mandir      ?= $(datarootdir)/man
docdir      ?= $(datarootdir)/doc/ringfence
sysconfdir  ?= $(prefix)/etc
unitdir     ?= $(prefix)/lib/systemd/system
pkgconfigdir ?= $(libdir)/pkgconfig
plugindir   := $(libdir)/ringfence/plugins
workerdir   := $(libexecdir)/ringfence
libfusedir  := $(libdir)/ringfence/libfuse
confdir     := $(sysconfdir)/ringfence

# The paths a broker knows without being told. A plain build points them
# into this tree, so that it runs where it was built; make install builds
# again, in $(BUILD)/installed, with the installed ones.
ifeq ($(INSTALLED),1)
PATHS := -DRF_PLUGIN_DIR=\"$(plugindir)\" -DRF_SECCOMP_POLICY=\"$(confdir)/seccomp.policy\" \
         -DRF_PROGRAM_POLICY=\"$(confdir)/program.policy\" \
         -DRF_WORKER_PATH=\"$(workerdir)/ringfence-worker\" -DRF_LIBFUSE_DIR=\"$(libfusedir)\"
else
PATHS := -DRF_PLUGIN_DIR=\"$(abspath $(BUILD))/plugins\" -DRF_SECCOMP_POLICY=\"$(abspath seccomp.policy)\" \
         -DRF_PROGRAM_POLICY=\"$(abspath program.policy)\" \
         -DRF_WORKER_PATH=\"$(abspath $(BUILD))/ringfence-worker\" -DRF_LIBFUSE_DIR=\"$(abspath $(BUILD))/libfuse\"
endif
PATHS += -DRF_POLICY_PATH=\"$(confdir)/ringfence.policy\" -DRF_VERSION=\"$(VERSION)\"

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wsign-compare \
           -Wformat=2 -Wno-format-nonliteral -Werror
CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 $(WARN) -D_GNU_SOURCE -fno-strict-aliasing -fstack-protector-strong \
           -Iinclude -Iipc -Ipolicy -MMD -MP $(PATHS)
LDFLAGS ?=
PIE     := -fPIE
SAN     ?=
ifneq ($(SAN),)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
endif

LIB_SRC    := ipc/log.c ipc/msg.c ipc/fdpass.c ipc/status.c ipc/fuse_attr.c policy/policy.c policy/readfile.c policy/seccomp_policy.c policy/mountinfo.c
BROKER_SRC := $(wildcard broker/*.c)
WORKER_SRC := $(filter-out worker/host/runtime.c,$(wildcard worker/*.c worker/*/*.c))
CTL_SRC    := tools/ringfencectl.c
FSCK_SRC   := tools/ringfence-fsck.c plugins/record.c
PLUGINS    := passthrough memfs hello
TEST_PLUGINS := $(patsubst tests/plugins/%.c,%,$(wildcard tests/plugins/*.c))
UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/check_*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
pobj = $(patsubst %.c,$(BUILD)/pic/%.o,$(1))

LIB        := $(BUILD)/libringfence.a
BINS       := $(BUILD)/ringfenced $(BUILD)/ringfence-worker $(BUILD)/ringfencectl \
              $(BUILD)/ringfence-fsck $(BUILD)/ringfence-plugin-check
PLUGIN_SOS := $(patsubst %,$(BUILD)/plugins/%.so,$(PLUGINS)) \
              $(patsubst %,$(BUILD)/tests/plugins/%.so,$(TEST_PLUGINS))
UNIT_BINS  := $(patsubst %,$(BUILD)/tests/%,$(UNIT_TESTS)) $(BUILD)/tests/check_libfuse_debian \
              $(BUILD)/tests/check_libfuse4

URING_LIBS  := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
SECCOMP_LIBS := $(shell pkg-config --libs libseccomp 2>/dev/null || echo -lseccomp)
EVENT_LIBS  := $(shell pkg-config --libs libevent_core 2>/dev/null || echo -levent_core)
CAPNG_LIBS  := $(shell pkg-config --libs libcap-ng 2>/dev/null || echo -lcap-ng)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -lpthread)

.PHONY: FORCE all installable install uninstall check-man deb check-deb deps demo check check-unit check-san check-integration check-vm vm-build bench bench-busy bench-vm fuzz format format-check clean

all: $(BINS) $(PLUGIN_SOS)

# the compiled-in paths, rewritten only when they change (every object
# depends on it, so a new prefix rebuilds what has them)
$(BUILD)/paths: FORCE
	@mkdir -p $(dir $@)
	@echo '$(PATHS)' >$@.new; cmp -s $@.new $@ && rm $@.new || mv $@.new $@
FORCE:

$(BUILD)/obj/%.o: %.c $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(PIE) -c -o $@ $<

$(BUILD)/pic/%.o: %.c $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(LIB): $(call obj,$(LIB_SRC))
	$(call say,AR,$@)ar rcs $@ $^

$(BUILD)/ringfenced: $(call obj,$(BROKER_SRC)) $(LIB)
	$(call say,LD,$@)$(CC) -pie $(LDFLAGS) -o $@ $^ $(URING_LIBS) $(EVENT_LIBS) $(SECCOMP_LIBS)

# The plugin ABI as a library to link against: plugin.h's rf_* functions as
# empty stubs, under a name the worker carries as its own (its soname). A
# plugin linked with -z defs and this library fails at link time on an rf_*
# name the worker does not offer; when the worker loads it, the loader finds
# the plugin's need for the library met by the worker itself, whose rf_*
# are the ones called. The name stays: abi_version says the ABI's version.
ABI_SONAME := libringfence-plugin.so.1
ABI_LIB    := $(BUILD)/libringfence-plugin.so

$(BUILD)/abi/stubs.c: include/ringfence/plugin.h
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)sed -n -e '/^static/d' -e 's/^[a-z][^(]*[ *]\(rf_[a-z0-9_]*\)(.*/void \1(void) {}/p' $< >$@
	@test -s $@ || { echo "$@: no rf_* function found in $<" >&2; rm -f $@; exit 1; }

$(ABI_LIB): $(BUILD)/abi/stubs.c
	$(call say,LD,$@)$(CC) -shared -fPIC -g -w $(LDFLAGS) -Wl,-soname,$(ABI_SONAME) -o $@ $<

# libfuse3.so.3 for unmodified libfuse programs: Debian's libfuse3-dev
# headers give the structures, libfuse3.map the symbol versions of
# Debian's libfuse3-3; nothing but the map's names leaves it. And
# libfuse3.so.4, for programs of libfuse 3.17 on (Debian's libfuse3-4):
# the same files built with RF_LIBFUSE_ABI4 (libfuse/libfuse.h says what
# differs), libfuse3.map and libfuse3-4.map's versions.
LIBFUSE_SRC  := $(wildcard libfuse/*.c) ipc/fuse_attr.c
LIBFUSE      := $(BUILD)/libfuse/libfuse3.so.3
LIBFUSE4     := $(BUILD)/libfuse/libfuse3.so.4
FUSE3_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
p4obj = $(patsubst %.c,$(BUILD)/pic4/%.o,$(1))

$(BUILD)/pic/libfuse/%.o: CFLAGS += $(FUSE3_CFLAGS) -Ilibfuse -fvisibility=hidden
$(BUILD)/pic4/%.o: %.c $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(FUSE3_CFLAGS) -Ilibfuse -fvisibility=hidden -DRF_LIBFUSE_ABI4 -fPIC -c -o $@ $<

# It answers through the plugin ABI (rf_reply_*), as a plugin does.
$(LIBFUSE): $(call pobj,$(LIBFUSE_SRC)) libfuse/libfuse3.map $(ABI_LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -Wl,-soname,libfuse3.so.3 -Wl,--version-script,libfuse/libfuse3.map -Wl,-z,defs -o $@ $(call pobj,$(LIBFUSE_SRC)) $(ABI_LIB)

$(BUILD)/libfuse/libfuse3-4.map: libfuse/libfuse3.map libfuse/libfuse3-4.map
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)cat $^ >$@

$(LIBFUSE4): $(call p4obj,$(LIBFUSE_SRC)) $(BUILD)/libfuse/libfuse3-4.map $(ABI_LIB)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -Wl,-soname,libfuse3.so.4 -Wl,--version-script,$(BUILD)/libfuse/libfuse3-4.map -Wl,-z,defs -o $@ $(call p4obj,$(LIBFUSE_SRC)) $(ABI_LIB)

# A program tenant's plugin host, as the library the program's libfuse3.so.3
# needs (worker/host/runtime.c): the host's code again, exporting only the
# plugin ABI and the runtime's entry.
RUNTIME_SRC := worker/host/runtime.c worker/host/host.c worker/report.c worker/channel.c \
	worker/mbox.c worker/title.c $(addprefix worker/plugin/,dispatch.c reply.c restore.c nodetab.c idmap.c) \
	ipc/log.c ipc/msg.c ipc/fdpass.c ipc/fuse_attr.c
RUNTIME     := $(BUILD)/libfuse/$(ABI_SONAME)

$(BUILD)/pic/worker/%.o: CFLAGS += -Iworker

$(BUILD)/abi/runtime.map: include/ringfence/plugin.h
	@mkdir -p $(dir $@)
	$(call say,GEN,$@){ echo '{ global: rf_host_program_serve;'; sed -n -e '/^static/d' -e 's/^[a-z][^(]*[ *]\(rf_[a-z0-9_]*\)(.*/\1;/p' $<; echo 'local: *; };'; } >$@

$(RUNTIME): $(call pobj,$(RUNTIME_SRC)) $(BUILD)/abi/runtime.map
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -Wl,-soname,$(ABI_SONAME) -Wl,--version-script,$(BUILD)/abi/runtime.map -Wl,-z,defs -o $@ $(call pobj,$(RUNTIME_SRC)) $(URING_LIBS) -lpthread

# what a program tenant loads (make all builds it)
all: $(LIBFUSE) $(LIBFUSE4) $(RUNTIME)

$(BUILD)/ringfence-worker: $(call obj,$(WORKER_SRC)) $(LIB)
	$(call say,LD,$@)$(CC) -pie -rdynamic -Wl,-soname,$(ABI_SONAME) $(LDFLAGS) -o $@ $^ $(URING_LIBS) $(CAPNG_LIBS) $(SECCOMP_LIBS) -ldl -lpthread

$(BUILD)/ringfencectl: $(call obj,$(CTL_SRC)) $(LIB)
	$(call say,LD,$@)$(CC) -pie $(LDFLAGS) -o $@ $^

$(BUILD)/ringfence-fsck: $(call obj,$(FSCK_SRC)) $(LIB)
	$(call say,LD,$@)$(CC) -pie $(LDFLAGS) -o $@ $^

$(BUILD)/ringfence-plugin-check: $(call obj,tools/ringfence-plugin-check.c) $(LIB)
	$(call say,LD,$@)$(CC) -pie $(LDFLAGS) -o $@ $^

# the ownership record's format, shared with ringfence-fsck
$(BUILD)/plugins/passthrough.so: $(BUILD)/pic/plugins/record.o

# the shipped plugins are linked as the SDK links one (ringfence-plugin.pc)
$(BUILD)/plugins/%.so: $(BUILD)/pic/plugins/%.o $(ABI_LIB)
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -Wl,-z,defs -o $@ $(filter %.o,$^) -L$(BUILD) -lringfence-plugin -lpthread

$(BUILD)/tests/plugins/%.so: $(BUILD)/pic/tests/plugins/%.o
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -shared $(LDFLAGS) -o $@ $^ -lpthread

# Unit suites link the module under test; each lists what it needs.
UNIT_DEPS_check_policy := $(LIB)
UNIT_DEPS_check_ipc    := $(LIB)
UNIT_DEPS_check_uapi   := $(BUILD)/obj/broker/init.o $(LIB)
UNIT_DEPS_check_seccomp := $(LIB)
# the rules live beside their handlers (spawn.c), which take the broker with them
UNIT_DEPS_check_phase  := $(call obj,$(filter-out broker/main.c,$(BROKER_SRC))) $(LIB)
UNIT_DEPS_check_cgroup := $(BUILD)/obj/broker/cgroup.o $(LIB)
UNIT_DEPS_check_ring   := $(BUILD)/obj/broker/ring.o $(LIB)
UNIT_DEPS_check_sandbox := $(BUILD)/obj/worker/sandbox.o $(LIB)
UNIT_DEPS_check_pool   := $(BUILD)/obj/broker/pool.o $(LIB)
UNIT_DEPS_check_users  := $(BUILD)/obj/broker/users.o $(LIB)
UNIT_DEPS_check_backoff := $(BUILD)/obj/broker/backoff.o $(LIB)
UNIT_DEPS_check_config := $(BUILD)/obj/broker/config.o $(LIB)
UNIT_DEPS_check_handover := $(BUILD)/obj/broker/handover.o $(BUILD)/obj/broker/state.o $(LIB)
UNIT_DEPS_check_state := $(BUILD)/obj/broker/state.o $(LIB)
UNIT_DEPS_check_record := $(BUILD)/obj/plugins/record.o $(LIB)
PLUGIN_OBJ := $(BUILD)/obj/worker/plugin/dispatch.o $(BUILD)/obj/worker/plugin/reply.o $(BUILD)/obj/worker/plugin/restore.o \
	$(BUILD)/obj/worker/plugin/nodetab.o $(BUILD)/obj/worker/plugin/idmap.o
RESTORE_OBJ := $(BUILD)/obj/worker/plugin/restore.o $(BUILD)/obj/worker/plugin/nodetab.o $(BUILD)/obj/worker/plugin/idmap.o
UNIT_DEPS_check_restore := $(RESTORE_OBJ) $(LIB)
# check_nodetab includes worker/plugin/nodetab.c itself, with points of death
UNIT_DEPS_check_nodetab := $(BUILD)/obj/worker/plugin/idmap.o $(LIB)
UNIT_DEPS_check_dispatch := $(PLUGIN_OBJ) $(LIB)
# rescue.o takes the rest of the keeper with it (adoption and probes use the ring)
UNIT_DEPS_check_rescue := $(call obj,$(wildcard worker/keeper/*.c)) $(BUILD)/obj/worker/host/host.o \
	$(BUILD)/obj/worker/plugin/learn.o \
	$(BUILD)/obj/worker/sandbox.o $(BUILD)/obj/worker/channel.o $(BUILD)/obj/worker/mbox.o \
	$(BUILD)/obj/worker/title.o $(BUILD)/obj/worker/report.o $(PLUGIN_OBJ) $(LIB)
UNIT_DEPS_check_channel := $(BUILD)/obj/worker/channel.o $(LIB)
UNIT_DEPS_check_uexec := $(BUILD)/obj/worker/uexec.o $(LIB)
# the program check_uexec starts in place, never instrumented (a second
# ASan runtime cannot start in a process that has one)
$(BUILD)/tests/uexec_target: tests/unit/uexec_target.c tests/unit/uexec_target.h
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -O2 -g -std=gnu11 -D_GNU_SOURCE $(WARN) -o $@ $< -lpthread
$(BUILD)/tests/check_uexec: $(BUILD)/tests/uexec_target
# libfuse 3 programs, linked with Debian's libfuse3 as any is; a tenant runs
# them with ringfence's (never instrumented: they load ringfence's
# library, which is not)
TEST_PROGRAMS := $(patsubst tests/programs/%.c,$(BUILD)/tests/programs/%,$(wildcard tests/programs/*.c))
$(BUILD)/tests/programs/%: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) -O2 -g -std=gnu11 -D_GNU_SOURCE $(WARN) $(FUSE3_CFLAGS) -o $@ $< -lfuse3
all: $(TEST_PROGRAMS)
UNIT_DEPS_check_passthrough := $(PLUGIN_OBJ) $(LIB)
# against the library in the build tree, not the system's of that soname;
# its rf_* (the plugin ABI it needs) are the test's own, under the ABI's soname
UNIT_DEPS_check_libfuse := $(LIBFUSE) -Wl,-rpath,$(abspath $(BUILD)/libfuse) -Wl,--allow-shlib-undefined
$(BUILD)/tests/check_libfuse: $(LIBFUSE)
$(BUILD)/obj/tests/unit/check_libfuse.o: CFLAGS += $(FUSE3_CFLAGS) -Ilibfuse -Iipc
# the same tests against Debian's libfuse3-3: what they expect is libfuse's
$(BUILD)/obj/tests/unit/check_libfuse_debian.o: tests/unit/check_libfuse.c $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(CHECK_CFLAGS) $(FUSE3_CFLAGS) -Ilibfuse $(PIE) -DRF_AGAINST_DEBIAN -c -o $@ $<
$(BUILD)/tests/check_libfuse_debian: $(BUILD)/obj/tests/unit/check_libfuse_debian.o
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< -l:libfuse3.so.3 $(CHECK_LIBS) -ldl
# and against libfuse3.so.4, with what differs there
$(BUILD)/obj/tests/unit/check_libfuse4.o: tests/unit/check_libfuse.c $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(CHECK_CFLAGS) $(FUSE3_CFLAGS) -Ilibfuse -Iipc $(PIE) -DRF_LIBFUSE_ABI4 -c -o $@ $<
$(BUILD)/tests/check_libfuse4: $(BUILD)/obj/tests/unit/check_libfuse4.o $(LIBFUSE4)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -rdynamic -Wl,-soname,$(ABI_SONAME) -o $@ $< $(LIBFUSE4) -Wl,-rpath,$(abspath $(BUILD)/libfuse) -Wl,--allow-shlib-undefined $(CHECK_LIBS) -ldl

$(BUILD)/tests/check_%: $(BUILD)/obj/tests/unit/check_%.o $(LIB) $(call obj,$(BROKER_SRC)) $(call obj,$(WORKER_SRC)) $(BUILD)/obj/plugins/record.o
	@mkdir -p $(dir $@)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -rdynamic -Wl,-soname,$(ABI_SONAME) -o $@ $< $(UNIT_DEPS_check_$*) $(CHECK_LIBS) $(URING_LIBS) $(CAPNG_LIBS) $(EVENT_LIBS) $(SECCOMP_LIBS) -ldl -lpthread

$(BUILD)/pic/tests/plugins/%.o: CFLAGS += -Iworker
$(BUILD)/obj/worker/%.o: CFLAGS += -Iworker

$(BUILD)/obj/tests/unit/%.o: CFLAGS += $(CHECK_CFLAGS) -Ibroker -Iworker -DFIXTURES=\"$(abspath tests/fixtures)\" -DSHIPPED_POLICY=\"$(abspath seccomp.policy)\" -DPROGRAM_POLICY=\"$(abspath program.policy)\"

# ---- make install: a build of its own with the installed paths ----
INST      := $(BUILD)/installed
INSTALL   ?= install
SHIPPED_SOS = $(patsubst %,$(BUILD)/plugins/%.so,$(PLUGINS))
SUBST = sed -e 's|@prefix@|$(prefix)|g' -e 's|@includedir@|$(includedir)|g' -e 's|@libdir@|$(libdir)|g' \
	-e 's|@plugindir@|$(plugindir)|g' -e 's|@sbindir@|$(sbindir)|g' \
	-e 's|@confdir@|$(confdir)|g' -e 's|@docdir@|$(docdir)|g' -e 's|@VERSION@|$(VERSION)|g' \
	-e 's|@workerdir@|$(workerdir)|g'
# what make install puts where (uninstall removes the same)
SBIN_FILES := ringfenced ringfencectl ringfence-fsck ringfence-plugin-check
DOC_FILES  := README.md $(wildcard docs/*.md)

MAN_PAGES  := $(patsubst man/%.in,%,$(wildcard man/*.in))

$(BUILD)/dist/%: dist/%.in $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(SUBST) $< >$@

$(BUILD)/man/%: man/%.in $(BUILD)/paths
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(SUBST) $< >$@

installable: $(BINS) $(SHIPPED_SOS) $(ABI_LIB) $(LIBFUSE) $(LIBFUSE4) $(RUNTIME) $(BUILD)/dist/ringfenced.service $(BUILD)/dist/ringfence-plugin.pc \
	$(addprefix $(BUILD)/man/,$(MAN_PAGES))

# every man page renders without a warning, as lintian checks them
check-man: $(addprefix $(BUILD)/man/,$(MAN_PAGES))
	@./tests/check-man.sh $^

# the SDK's example plugin, as the -dev package ships it
SDK_FILES := examples/sdk/Makefile examples/sdk/motd.c

install:
	$(Q)$(MAKE) --no-print-directory BUILD=$(INST) INSTALLED=1 installable
	$(INSTALL) -d $(DESTDIR)$(sbindir) $(DESTDIR)$(workerdir) $(DESTDIR)$(plugindir) \
		$(DESTDIR)$(confdir) $(DESTDIR)$(includedir)/ringfence $(DESTDIR)$(pkgconfigdir) \
		$(DESTDIR)$(unitdir) $(DESTDIR)$(docdir)/examples/sdk $(DESTDIR)$(mandir)/man3 \
		$(DESTDIR)$(mandir)/man5 $(DESTDIR)$(mandir)/man8
	$(INSTALL) -m 0644 $(patsubst %,$(INST)/man/%,$(filter %.3,$(MAN_PAGES))) $(DESTDIR)$(mandir)/man3/
	$(INSTALL) -m 0644 $(patsubst %,$(INST)/man/%,$(filter %.5,$(MAN_PAGES))) $(DESTDIR)$(mandir)/man5/
	$(INSTALL) -m 0644 $(patsubst %,$(INST)/man/%,$(filter %.8,$(MAN_PAGES))) $(DESTDIR)$(mandir)/man8/
	$(INSTALL) -m 0755 $(addprefix $(INST)/,$(SBIN_FILES)) $(DESTDIR)$(sbindir)/
	$(INSTALL) -m 0755 $(INST)/ringfence-worker $(DESTDIR)$(workerdir)/
	$(INSTALL) -m 0644 $(patsubst %,$(INST)/plugins/%.so,$(PLUGINS)) $(DESTDIR)$(plugindir)/
	$(INSTALL) -m 0644 seccomp.policy worker.policy program.policy $(DESTDIR)$(confdir)/
	$(INSTALL) -m 0644 include/ringfence/plugin.h $(DESTDIR)$(includedir)/ringfence/
	$(INSTALL) -m 0644 $(INST)/libringfence-plugin.so $(DESTDIR)$(libdir)/ringfence/
	$(INSTALL) -d $(DESTDIR)$(libfusedir)
	$(INSTALL) -m 0644 $(INST)/libfuse/libfuse3.so.3 $(INST)/libfuse/libfuse3.so.4 \
		$(INST)/libfuse/$(ABI_SONAME) $(DESTDIR)$(libfusedir)/
	$(INSTALL) -m 0644 $(INST)/dist/ringfence-plugin.pc $(DESTDIR)$(pkgconfigdir)/
	$(INSTALL) -m 0644 $(INST)/dist/ringfenced.service $(DESTDIR)$(unitdir)/
	$(INSTALL) -m 0644 $(DOC_FILES) $(DESTDIR)$(docdir)/
	$(INSTALL) -m 0644 examples/ringfence.policy $(DESTDIR)$(docdir)/examples/
	$(INSTALL) -m 0644 $(SDK_FILES) $(DESTDIR)$(docdir)/examples/sdk/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(sbindir)/,$(SBIN_FILES)) \
		$(DESTDIR)$(workerdir)/ringfence-worker \
		$(patsubst %,$(DESTDIR)$(plugindir)/%.so,$(PLUGINS)) \
		$(DESTDIR)$(confdir)/seccomp.policy $(DESTDIR)$(confdir)/worker.policy \
		$(DESTDIR)$(confdir)/program.policy \
		$(DESTDIR)$(includedir)/ringfence/plugin.h $(DESTDIR)$(libdir)/ringfence/libringfence-plugin.so \
		$(DESTDIR)$(libfusedir)/libfuse3.so.3 $(DESTDIR)$(libfusedir)/libfuse3.so.4 \
		$(DESTDIR)$(libfusedir)/$(ABI_SONAME) \
		$(DESTDIR)$(pkgconfigdir)/ringfence-plugin.pc $(DESTDIR)$(unitdir)/ringfenced.service \
		$(addprefix $(DESTDIR)$(docdir)/,$(notdir $(DOC_FILES))) \
		$(DESTDIR)$(docdir)/examples/ringfence.policy \
		$(addprefix $(DESTDIR)$(docdir)/examples/sdk/,$(notdir $(SDK_FILES))) \
		$(patsubst %,$(DESTDIR)$(mandir)/man3/%,$(filter %.3,$(MAN_PAGES))) \
		$(patsubst %,$(DESTDIR)$(mandir)/man5/%,$(filter %.5,$(MAN_PAGES))) \
		$(patsubst %,$(DESTDIR)$(mandir)/man8/%,$(filter %.8,$(MAN_PAGES)))
	@for d in $(DESTDIR)$(plugindir) $(DESTDIR)$(libfusedir) $(DESTDIR)$(libdir)/ringfence $(DESTDIR)$(workerdir) \
		$(DESTDIR)$(includedir)/ringfence $(DESTDIR)$(docdir)/examples/sdk \
		$(DESTDIR)$(docdir)/examples $(DESTDIR)$(docdir) \
		$(DESTDIR)$(confdir); do rmdir "$$d" 2>/dev/null || :; done

# the Debian packages (debian/), built in build/deb and checked by lintian
DEB_DEPS := debhelper dpkg-dev fakeroot lintian systemd
deb: deps
	@./tools/install-deps.sh $(DEB_DEPS)
	@./tools/make-deb.sh

# make deb, then the packages unpacked, installed, run and purged
check-deb: deps
	@./tools/install-deps.sh $(DEB_DEPS)
	@./tests/check-deb.sh

deps:
	@./tools/install-deps.sh

# the broker's layers, the top first (broker/broker.h, docs/design.md); the
# files named in none are below them all
BROKER_LAYERS := main.c reexec.c control.c | tenant.c upgrade.c | watchdog.c recovery.c spawn.c

check-unit: $(UNIT_BINS) $(PLUGIN_SOS) $(BUILD)/ringfence-worker $(ABI_LIB) $(LIBFUSE) $(LIBFUSE4)
	@./tests/run-unit.sh $(UNIT_BINS)
	@./tests/check-libfuse-abi.sh $(LIBFUSE)
	@l4=$$(./tools/libfuse4.sh) && \
		./tests/check-libfuse-abi.sh $(LIBFUSE4) "$$l4/root/usr/lib/$$(gcc -dumpmachine)/libfuse3.so.4"
	@./tests/check-calls.py $(call obj,$(WORKER_SRC))
	@./tests/check-calls.py --layers "$(BROKER_LAYERS)" $(call obj,$(BROKER_SRC))
	@./tests/check-abi.sh $(BUILD)/ringfence-worker $(ABI_LIB)

check-san:
	$(Q)$(MAKE) --no-print-directory BUILD=build-san SAN=1 check-unit

check-integration: all
	@./tests/run-integration.sh

# the Linux 7.3 guest (tests/run-vm.sh): QEMU, and what virtme-ng needs of
# the host (udev names the guest's console ports, so that its output and
# exit status come back)
VM_DEPS := qemu-system-x86 busybox-static kbd kmod udev file iproute2 util-linux-extra \
	python3-argcomplete python3-requests debian-archive-keyring xz-utils

check-vm: deps
	@./tools/install-deps.sh $(VM_DEPS)
	$(Q)$(MAKE) --no-print-directory vm-build
	@./tests/run-vm.sh

# what the guest runs, built on the host
vm-build: all $(UNIT_BINS)
	@:

# per-entry buffers, buffer pools and zero copy side by side in the 7.3
# guest (bench/vm.sh); its table goes to bench/results/vm-latest.md
BENCH_VM_ENV = ROUNDS=$${ROUNDS:-3} RUNTIME=$${RUNTIME:-5} SIZE=$${SIZE:-64M} BACKING=$${BACKING:-tmpfs} \
	WORKLOADS="$${WORKLOADS:-}"
bench-vm: deps
	@./tools/install-deps.sh $(VM_DEPS)
	$(Q)$(MAKE) --no-print-directory all
	@mkdir -p bench/results
	@VM_COMMAND="$(BENCH_VM_ENV) bench/vm.sh" ./tests/run-vm.sh >$(BUILD)/bench-vm.log; rc=$$?; \
	cat $(BUILD)/bench-vm.log; [ $$rc = 0 ] || exit $$rc; \
	sed -n '/^bench-vm: begin$$/,/^bench-vm: end$$/{/^bench-vm: /d;p}' $(BUILD)/bench-vm.log \
		>bench/results/vm-latest.md; echo "bench-vm: bench/results/vm-latest.md"

# what check and demo build, a job per CPU unless make was given -j (which
# MAKEFLAGS shows in a recipe's environment, not while parsing)
JOBS = $$(case " $$MAKEFLAGS " in *" -j"*) ;; *) echo -j$$(nproc) ;; esac)

check: deps
	$(Q)$(MAKE) --no-print-directory $(JOBS) all
	$(Q)$(MAKE) --no-print-directory $(JOBS) check-man
	$(Q)$(MAKE) --no-print-directory $(JOBS) check-unit
	$(Q)$(MAKE) --no-print-directory $(JOBS) check-san
	$(Q)$(MAKE) --no-print-directory check-integration
	$(Q)$(MAKE) --no-print-directory check-deb
	$(Q)$(MAKE) --no-print-directory check-vm

demo: deps
	$(Q)$(MAKE) --no-print-directory $(JOBS) all
	@./tools/demo.sh

# the libfuse peer is built from Debian's fuse3 source (tools/libfuse-peer.sh);
# gnuplot draws. BUSY=1 runs it with a busy loop per CPU (bench-busy).
BENCH_DEPS := gnuplot-nox meson ninja-build g++ libnuma-dev dpkg-dev debian-archive-keyring
bench: deps
	@./tools/install-deps.sh $(BENCH_DEPS)
	$(Q)$(MAKE) --no-print-directory all
	@./bench/run.sh

bench-busy: deps
	@./tools/install-deps.sh $(BENCH_DEPS)
	$(Q)$(MAKE) --no-print-directory all
	@BUSY=1 ./bench/run.sh

# libFuzzer over the parsers of untrusted text (tests/run-fuzz.sh)
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
fuzz: deps
	@./tools/install-deps.sh clang libclang-rt-14-dev
	@./tests/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

FORMAT_SRC := $(shell find broker worker ipc policy include plugins tools tests examples libfuse -name '*.[ch]' 2>/dev/null)
format:
	clang-format -i $(FORMAT_SRC)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_SRC) && echo "format ok"

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
.SECONDARY:
