/* no_io_uring.c - run a command where io_uring_setup(2) fails with EPERM, as
 * under a container runtime's seccomp profile: a test of what c1m-uring does
 * on a machine without io_uring, without changing the host's
 * kernel.io_uring_disabled for everyone.
 *
 *   no_io_uring PROGRAM [ARG...]
 *
 * PR_SET_NO_NEW_PRIVS (needed to install a filter without CAP_SYS_ADMIN), a
 * BPF filter (io_uring_setup -> EPERM, everything else allowed; a foreign
 * architecture's syscall is killed), then execv. Exit 2 on usage, 1 when the
 * filter cannot be installed or the program not run. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "no_io_uring: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: no_io_uring PROGRAM [ARG...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        perror("no_io_uring: PR_SET_NO_NEW_PRIVS");
        return 1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
        perror("no_io_uring: PR_SET_SECCOMP");
        return 1;
    }
    execv(argv[1], argv + 1);
    fprintf(stderr, "no_io_uring: %s: %s\n", argv[1], strerror(errno));
    return 1;
}
