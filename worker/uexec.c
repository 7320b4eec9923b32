// SPDX-License-Identifier: MIT
/*
 * Start a dynamically linked program in this process, as execve(2) would
 * start it, but keeping the process's mappings: the system's dynamic
 * loader is mapped from its file and entered with a stack of its own, and
 * it loads the program and its libraries as it does after an execve of
 * "ld.so PROGRAM ARGS". What the process had mapped stays mapped (the
 * pool, its records read-only, the rings), and nothing comes back that
 * the process had given up: no descriptor it closed, no privilege, no
 * seccomp filter less.
 *
 * Why not execve(2): a program's own code can run before any of
 * ringfence's (an ELF's pre-initialisers, IFUNC resolvers), so whatever
 * an exec'd program would need to rebuild the plugin host's view of the
 * pool, it would hold from its first instruction; and a writable mapping
 * of the payloads cannot be rebuilt from a descriptor without one that
 * can map the records writable too.
 *
 * As execve does: descriptors marked close-on-exec are closed, caught
 * signals go back to their default action (ignored ones stay ignored;
 * SIGSYS keeps its handler, the sandbox's report of a seccomp trap, about
 * which its deny list lets no one ask: worker/sandbox.c),
 * the alternate signal stack is dropped, and the thread's rseq area is
 * unregistered (the new C library registers its own). The caller must be
 * the process's only thread. Only x86-64 for now.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uexec.h"

/* glibc 2.35 on: where this thread's rseq area is */
extern const unsigned int __rseq_size __attribute__((weak));
extern const ptrdiff_t __rseq_offset __attribute__((weak));

#define RSEQ_UNREGISTER 1
#define RSEQ_SIG_X86 0x53053053
#define RSEQ_LEN_ORIG 32

static uintptr_t page_down(uintptr_t v)
{
	return v & ~((uintptr_t)getpagesize() - 1);
}

static uintptr_t page_up(uintptr_t v)
{
	return page_down(v + (uintptr_t)getpagesize() - 1);
}

/* This process's dynamic loader, as its program headers name it. */
static const char *own_interpreter(void)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM), i;
	uintptr_t bias = 0;

	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	for (i = 0; i < n; i++)
		if (ph[i].p_type == PT_INTERP)
			return (const char *)(bias + ph[i].p_vaddr);
	return NULL;
}

struct loaded {
	uintptr_t base, entry, phdr;
	unsigned int phnum;
};

/* Map the ELF shared object at @path where the kernel picks, as the
 * kernel maps an interpreter. */
static int load(const char *path, struct loaded *l, char *why, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[16];
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	void *span;
	int fd, i, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(why, len, "open the dynamic loader %s", path);
		return r;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > sizeof(ph) / sizeof(ph[0]) ||
	    pread(fd, ph, eh.e_phnum * sizeof(ph[0]), (off_t)eh.e_phoff) !=
		    (ssize_t)(eh.e_phnum * sizeof(ph[0]))) {
		snprintf(why, len, "%s is not a 64-bit ELF shared object", path);
		close(fd);
		return -ENOEXEC;
	}
	for (i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			if (page_down(ph[i].p_vaddr) < lo)
				lo = page_down(ph[i].p_vaddr);
			if (page_up(ph[i].p_vaddr + ph[i].p_memsz) > hi)
				hi = page_up(ph[i].p_vaddr + ph[i].p_memsz);
		}
	if (hi <= lo) {
		snprintf(why, len, "%s has nothing to load", path);
		close(fd);
		return -ENOEXEC;
	}
	/* the whole span first, so that its segments keep their distances */
	span = mmap(NULL, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (span == MAP_FAILED) {
		r = -errno;
		snprintf(why, len, "reserve %zu bytes for %s", (size_t)(hi - lo), path);
		close(fd);
		return r;
	}
	l->base = (uintptr_t)span - lo;
	for (i = 0; i < eh.e_phnum && !r; i++) {
		const Elf64_Phdr *p = &ph[i];
		int prot = (p->p_flags & PF_R ? PROT_READ : 0) |
			   (p->p_flags & PF_W ? PROT_WRITE : 0) |
			   (p->p_flags & PF_X ? PROT_EXEC : 0);
		uintptr_t start = l->base + page_down(p->p_vaddr);
		uintptr_t file_end = l->base + p->p_vaddr + p->p_filesz;
		uintptr_t mem_end = l->base + page_up(p->p_vaddr + p->p_memsz);

		/* writable while the bss's first bytes are zeroed; never
		 * writable and executable at once where the segment is not
		 * (a sandbox's policy may refuse that) */
		int map_prot = p->p_memsz > p->p_filesz ? prot | PROT_WRITE : prot;

		if (p->p_type != PT_LOAD)
			continue;
		if (mmap((void *)start, page_up(file_end) - start, map_prot,
			 MAP_PRIVATE | MAP_FIXED, fd, (off_t)page_down(p->p_offset)) == MAP_FAILED)
			r = -errno;
		/* the bss: the file page's tail zeroed, whole pages anonymous */
		if (!r && p->p_memsz > p->p_filesz) {
			memset((void *)file_end, 0, page_up(file_end) - file_end);
			if (mem_end > page_up(file_end) &&
			    mmap((void *)page_up(file_end), mem_end - page_up(file_end), prot,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
				r = -errno;
		}
		if (!r && map_prot != prot &&
		    mprotect((void *)start, page_up(file_end) - start, prot) < 0)
			r = -errno;
	}
	close(fd);
	if (r < 0) {
		snprintf(why, len, "map %s", path);
		munmap(span, hi - lo);
		return r;
	}
	/* the loader's first segment maps its file from offset 0 */
	l->phdr = l->base + lo + eh.e_phoff;
	l->phnum = eh.e_phnum;
	l->entry = l->base + eh.e_entry;
	return 0;
}

/* What execve does to the process besides the image. */
static void as_execve_does(void)
{
	struct rlimit rl = { 0 };
	struct sigaction sa;
	stack_t none = { .ss_flags = SS_DISABLE };
	int sig, fd;

	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGSYS && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN &&
		    sa.sa_handler != SIG_DFL)
			signal(sig, SIG_DFL);
	sigaltstack(&none, NULL);
	getrlimit(RLIMIT_NOFILE, &rl);
	for (fd = 0; (rlim_t)fd < rl.rlim_cur && fd < INT_MAX; fd++) {
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0 && (fl & FD_CLOEXEC))
			close(fd);
	}
	/* the kernel unregisters only with the length registered: glibc
	 * 2.35 to 2.39 register 32 bytes (the kernel's first struct rseq)
	 * and say 20 in __rseq_size (the fields it uses) */
	if (&__rseq_size && __rseq_size &&
	    syscall(SYS_rseq, (char *)__builtin_thread_pointer() + __rseq_offset, __rseq_size,
		    RSEQ_UNREGISTER, RSEQ_SIG_X86) < 0 &&
	    errno == EINVAL)
		syscall(SYS_rseq, (char *)__builtin_thread_pointer() + __rseq_offset, RSEQ_LEN_ORIG,
			RSEQ_UNREGISTER, RSEQ_SIG_X86);
}

/* The initial stack the loader reads: argc, argv, envp, the auxiliary
 * vector, and the strings they point at (which need not be on it). */
static uintptr_t *initial_stack(const struct loaded *ld, char *const argv[], char *const envp[],
				const char *execfn, char *why, size_t len)
{
	struct rlimit rl;
	size_t size, argc = 0, envc = 0, words, i;
	char *stack, *top, *random, *platform;
	uintptr_t *sp, *p;

	while (argv[argc])
		argc++;
	while (envp[envc])
		envc++;
	if (getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (64u << 20))
		rl.rlim_cur = 8u << 20;
	size = page_up(rl.rlim_cur);
	stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (stack == MAP_FAILED) {
		snprintf(why, len, "a stack of %zu bytes", size);
		return NULL;
	}
	top = stack + size;
	random = top -= 16;
	memcpy(random, (const void *)getauxval(AT_RANDOM), 16);
	platform = top -= 16;
	snprintf(platform, 16, "x86_64");
	/* argc, argv + NULL, envp + NULL, 20 auxiliary pairs */
	words = 1 + argc + 1 + envc + 1 + 2 * 20;
	if (words * sizeof(uintptr_t) + 64 > size / 2) {
		snprintf(why, len, "%zu arguments and %zu environment strings", argc, envc);
		munmap(stack, size);
		return NULL;
	}
	/* at the entry, the stack pointer is at argc, 16-byte aligned */
	sp = (uintptr_t *)(((uintptr_t)top - words * sizeof(uintptr_t)) & ~(uintptr_t)15);
	p = sp;
	*p++ = argc;
	for (i = 0; i < argc; i++)
		*p++ = (uintptr_t)argv[i];
	*p++ = 0;
	for (i = 0; i < envc; i++)
		*p++ = (uintptr_t)envp[i];
	*p++ = 0;
#define AUX(t, v) (*p++ = (uintptr_t)(t), *p++ = (uintptr_t)(v))
	/* as the kernel's for "ld.so PROGRAM": the loader is the program */
	AUX(AT_PHDR, ld->phdr);
	AUX(AT_PHENT, sizeof(Elf64_Phdr));
	AUX(AT_PHNUM, ld->phnum);
	AUX(AT_PAGESZ, getpagesize());
	AUX(AT_BASE, 0);
	AUX(AT_FLAGS, 0);
	AUX(AT_ENTRY, ld->entry);
	AUX(AT_UID, getuid());
	AUX(AT_EUID, geteuid());
	AUX(AT_GID, getgid());
	AUX(AT_EGID, getegid());
	AUX(AT_SECURE, 0);
	AUX(AT_RANDOM, random);
	AUX(AT_HWCAP, getauxval(AT_HWCAP));
	AUX(AT_HWCAP2, getauxval(AT_HWCAP2));
	AUX(AT_CLKTCK, getauxval(AT_CLKTCK));
	AUX(AT_SYSINFO_EHDR, getauxval(AT_SYSINFO_EHDR));
	AUX(AT_PLATFORM, platform);
	AUX(AT_EXECFN, execfn);
	AUX(AT_NULL, 0);
#undef AUX
	return sp;
}

int rf_uexec(char *const argv[], char *const envp[], char *why, size_t len)
{
#if defined(__x86_64__)
	const char *interp = own_interpreter();
	struct loaded ld;
	uintptr_t *sp;
	int r;

	if (!interp) {
		snprintf(why, len, "this process has no dynamic loader to start another with");
		return -ENOEXEC;
	}
	r = load(interp, &ld, why, len);
	if (r < 0)
		return r;
	sp = initial_stack(&ld, argv, envp, argv[0], why, len);
	if (!sp)
		return -E2BIG;
	as_execve_does();
	/* the loader's entry, as the kernel enters it: %rdx 0 (no function
	 * for atexit), the stack at argc */
	__asm__ volatile("mov %0, %%rsp\n\t"
			 "xor %%edx, %%edx\n\t"
			 "jmp *%1\n\t" ::"r"(sp),
			 "r"(ld.entry)
			 : "memory");
	__builtin_unreachable();
#else
	(void)argv;
	(void)envp;
	snprintf(why, len, "starting a program in place is written for x86-64 only");
	return -ENOSYS;
#endif
}
