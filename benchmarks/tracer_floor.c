/* What a tracer that never stops a process on fork would cost: a seccomp filter that hands
 * each execve/open to this supervisor (SECCOMP_RET_USER_NOTIF), which reads the path and
 * the caller's parent from /proc while the caller waits, writes one line, and lets the
 * call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE). Children inherit the filter, so forks
 * cost nothing; there is no stop on a syscall's return. A measuring probe for
 * benchmarks/bench_tracer_floor.py, not the daemon's tracer: CONTINUE re-reads the
 * arguments after the answer (a build could swap the path in between), which a tracer the
 * daemon trusts would have to close (see docs/daemon.md, "Why configure is traced").
 *
 * usage: tracer_floor OUT COMMAND [ARG...]   (OUT: a file the lines go to)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOTIFY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)

static int install_filter(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        NOTIFY(__NR_execve), NOTIFY(__NR_execveat), NOTIFY(__NR_open), NOTIFY(__NR_openat),
        NOTIFY(__NR_openat2), NOTIFY(__NR_creat),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

static void send_fd(int sock, int fd) {
    char byte = 0;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    if (sendmsg(sock, &msg, 0) != 1) _exit(126);
}

static int recv_fd(int sock) {
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    if (recvmsg(sock, &msg, 0) != 1) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
    return fd;
}

/* The caller's parent, read while it waits in the filter (so its /proc entry is its own). */
static int parent_of(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end = strrchr(buf, ')');
    int ppid = -1;
    if (end) sscanf(end + 2, "%*c %d", &ppid);
    return ppid;
}

static void read_path(int mem, unsigned long long addr, char *out, size_t size) {
    ssize_t n = pread(mem, out, size - 1, (off_t)addr);
    out[n > 0 ? n : 0] = 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT COMMAND [ARG...]\n", argv[0]);
        return 2;
    }
    FILE *out = fopen(argv[1], "w");
    int pair[2];
    if (!out || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 125;
    pid_t child = fork();
    if (child == 0) {
        int listener = install_filter();
        if (listener < 0) _exit(126);
        send_fd(pair[1], listener);
        close(listener);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int listener = recv_fd(pair[0]);
    if (listener < 0) return 125;
    struct seccomp_notif_sizes sizes;
    syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes);
    struct seccomp_notif *req = calloc(1, sizes.seccomp_notif);
    struct seccomp_notif_resp *resp = calloc(1, sizes.seccomp_notif_resp);
    char path[4096], memname[64];
    unsigned long events = 0;
    for (;;) {
        struct pollfd p = {.fd = listener, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno == EINTR) continue;
        if (!(p.revents & POLLIN)) break; /* POLLHUP: no process left under the filter */
        memset(req, 0, sizes.seccomp_notif);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) continue;
        int nr = req->data.nr;
        unsigned long long addr = (nr == __NR_openat || nr == __NR_openat2 || nr == __NR_execveat) ? req->data.args[1] : req->data.args[0];
        snprintf(memname, sizeof(memname), "/proc/%u/mem", req->pid);
        int mem = open(memname, O_RDONLY | O_CLOEXEC);
        path[0] = 0;
        if (mem >= 0) {
            read_path(mem, addr, path, sizeof(path));
            close(mem);
        }
        fprintf(out, "%u %d %d %s\n", req->pid, parent_of((int)req->pid), nr, path);
        events++;
        memset(resp, 0, sizes.seccomp_notif_resp);
        resp->id = req->id;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp);
    }
    int status = 0;
    waitpid(child, &status, 0);
    fclose(out);
    fprintf(stderr, "tracer_floor: %lu calls\n", events);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
